"""The TensorBoard source over real event files (TensorBoard's writer): incremental per-file cursors,
half-written records, restarts (new files), herowatch restarts, new run directories, object stores."""

from __future__ import annotations

import math
import time

import fsspec
import pytest

from monitor.sources.base import Target
from monitor.sources.tensorboard_config import TensorboardTarget
from monitor.sources.tensorboard_source import TensorboardSource
from tests.tb_support import TbRun


def poll(src, logdir, cursors, **cfg):
    res = src.poll(Target("tb", TensorboardTarget(logdir=str(logdir), **cfg)), cursors, time.time())
    assert res.error is None, res.error
    return res.validated()


def steps(res, run=None):
    return [s.step for s in res.samples if run is None or s.run.endswith("/" + run)]


def test_reads_what_is_new_once_and_continues_after_a_herowatch_restart(tmp_path):
    a = TbRun(tmp_path, "hero-a")
    for s in range(10):
        a.log(s, {"lm loss": 3.0 - s / 10, "grad-norm": 1.0})
    a.flush()
    src = TensorboardSource()
    first = poll(src, tmp_path, {})
    assert steps(first) == list(range(10))
    assert first.samples[0].metrics == {"lm loss": 3.0, "grad-norm": 1.0}  # one row per step
    assert [r.run for r in first.runs] == [f"tensorboard:{tmp_path}/hero-a"]
    assert first.logged[first.runs[0].run] == ["grad-norm", "lm loss"]
    read = src.bytes_read
    assert (
        poll(src, tmp_path, first.cursors).samples == [] and src.bytes_read == read
    )  # nothing new, nothing read
    a.log(10, {"lm loss": math.nan})
    a.flush()
    restarted = TensorboardSource()  # herowatch restarted: only the stored cursors survive
    second = poll(restarted, tmp_path, first.cursors)
    assert steps(second) == [10] and math.isnan(second.samples[0].metrics["lm loss"])
    assert restarted.bytes_read < read / 5, "read from the cursor, not from the start"


def test_a_half_written_record_is_waited_for_and_read_whole_once(tmp_path):
    a = TbRun(tmp_path, "hero-a")
    for s in range(3):
        a.log(s, {"lm loss": 2.0})
    a.close()
    path = a.files()[0]
    whole = path.read_bytes()
    src = TensorboardSource()
    cursors = poll(src, tmp_path, {}).cursors
    b = TbRun(tmp_path / "scratch", "x")  # one more record, written by the real writer elsewhere
    b.log(3, {"lm loss": 1.5})
    b.close()
    record = b.files()[0].read_bytes()
    tail = record[_first_record_end(record) :]  # the step-3 record, as bytes
    path.write_bytes(whole + tail[:7])  # the trainer wrote 7 bytes of it
    half = poll(src, tmp_path, cursors)
    assert half.samples == [] and half.cursors == cursors
    path.write_bytes(whole + tail)
    done = poll(src, tmp_path, half.cursors)
    assert steps(done) == [3] and done.samples[0].metrics["lm loss"] == 1.5
    assert poll(src, tmp_path, done.cursors).samples == []


def _first_record_end(data: bytes) -> int:
    """The file-version event every writer starts with: length + 16 bytes of frame."""
    return int.from_bytes(data[:8], "little") + 16


def test_a_trainer_restart_is_a_new_file_read_after_the_old_one_and_a_new_run_dir_is_found(tmp_path):
    a = TbRun(tmp_path, "hero-a")
    for s in range(100, 110):
        a.log(s, {"lm loss": 2.0})
    a.close()
    src = TensorboardSource()
    cursors = poll(src, tmp_path, {}).cursors
    time.sleep(1.1)  # the file name holds the start time in seconds
    again = TbRun(tmp_path, "hero-a")  # resumed from the checkpoint at step 105
    for s in range(105, 108):
        again.log(s, {"lm loss": 2.0})
    again.flush()
    new = TbRun(tmp_path, "hero-b")
    new.log(0, {"loss": 5.0})
    new.flush()
    res = poll(src, tmp_path, cursors)
    assert steps(res, "hero-a") == [105, 106, 107]  # the rewind the rules read as a restart
    assert steps(res, "hero-b") == [0]
    assert len(res.cursors[f"tensorboard:{tmp_path}/hero-a"]["files"]) == 2


def test_runs_glob_tags_and_an_unreadable_logdir(tmp_path):
    for name in ("hero-a", "scratch"):
        r = TbRun(tmp_path, name)
        r.log(1, {"lm loss": 2.0, "lm loss vs samples": 2.0})
        r.close()
    res = poll(TensorboardSource(), tmp_path, {}, runs="hero-*", tags=["lm loss"])
    assert [r.name for r in res.runs] == ["hero-a"]
    assert res.samples[0].metrics == {"lm loss": 2.0}
    gone = TensorboardSource().poll(Target("tb", TensorboardTarget(logdir=str(tmp_path / "nope"))), {}, 0.0)
    assert (
        "not found" in gone.error
    )  # a log dir that is gone (an unmounted share) is an outage, not "no runs"


def test_an_object_store_logdir_through_fsspec(tmp_path):
    r = TbRun(tmp_path, "hero-a")
    for s in range(5):
        r.log(s, {"lm loss": 2.0})
    r.close()
    mem = fsspec.filesystem("memory")
    for f in r.files():
        mem.pipe(f"/bucket/tb/hero-a/{f.name}", f.read_bytes())
    src = TensorboardSource()
    res = poll(src, "memory://bucket/tb", {})
    assert steps(res) == list(range(5))
    assert [x.run for x in res.runs] == ["tensorboard:memory://bucket/tb/hero-a"]
    assert poll(src, "memory://bucket/tb", res.cursors).samples == []


@pytest.mark.parametrize("bad", ["", "  ", "a/../b"])
def test_config_refuses_bad_globs(bad):
    with pytest.raises(ValueError):
        TensorboardTarget(logdir="/tmp", runs=bad)


def test_first_sight_of_a_long_file_reads_its_tail_from_a_record_boundary_and_backfill_reads_all(tmp_path):
    a = TbRun(tmp_path, "hero-a")
    for s in range(3000):
        a.log(s, {"lm loss": 2.0, "grad-norm": 1.0, "learning-rate": 1e-4})
    a.close()
    assert a.files()[0].stat().st_size > 4 * 65536
    src = TensorboardSource()
    first = poll(src, tmp_path, {}, warmup_bytes=65536)
    got = steps(first)
    assert 0 < got[0] and got[-1] == 2999 and got == list(range(got[0], 3000)), "a tail, whole steps"
    assert src.bytes_read <= 65536
    cfg = TensorboardTarget(logdir=str(tmp_path), warmup_bytes=65536).for_backfill()
    everything = TensorboardSource().poll(Target("tb", cfg), {}, time.time())
    assert steps(everything) == list(range(3000))


def test_a_poll_reads_at_most_its_budget_and_the_rest_next_time(tmp_path):
    for name in ("a", "b", "c"):
        r = TbRun(tmp_path, name)
        for s in range(1500):
            r.log(s, {"lm loss": 2.0})
        r.close()
    src = TensorboardSource()
    cursors, seen = {}, []
    for _ in range(20):
        res = poll(src, tmp_path, cursors, poll_bytes=65536, warmup_bytes=1 << 30)
        cursors = res.cursors
        seen += [(s.run, s.step) for s in res.samples]
        if not res.samples:
            break
    assert len(seen) == 4500 and len(set(seen)) == 4500, "everything, once, over several polls"


def test_an_object_store_without_its_filesystem_is_a_config_error_naming_the_extra():
    # s3fs is not in the dev lock (it is the s3 extra): the config says what to install
    with pytest.raises(ValueError, match=r"herowatch\[s3\]"):
        TensorboardTarget(logdir="s3://bucket/tb")


def test_a_run_under_a_long_logdir_is_read_under_a_shortened_stable_id(tmp_path):
    logdir = tmp_path / ("deep-" * 30)  # tensorboard:<logdir>/<run> is well over 200 characters
    a = TbRun(logdir, "hero-a")
    for s in range(5):
        a.log(s, {"lm loss": 2.0})
    a.flush()
    first = poll(TensorboardSource(), logdir, {})
    assert len(f"tensorboard:{logdir}/hero-a") > 200
    [run] = first.runs  # read, not dropped
    assert len(run.run) == 200 and run.run.startswith("tensorboard:") and "~" in run.run
    assert run.name == "hero-a", "the name people read is whole"
    assert steps(first) == list(range(5)) and {s.run for s in first.samples} == {run.run}
    a.log(5, {"lm loss": 1.0})
    a.flush()
    restarted = poll(TensorboardSource(), logdir, first.cursors)  # the same id after a restart
    assert [r.run for r in restarted.runs] == [run.run]
    assert steps(restarted) == [5], "read on from its cursor, nothing twice"
