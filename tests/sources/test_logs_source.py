"""The logs source over real files: incremental cursors, a partial last line, rotation, truncation, over-long
lines, first sight of a big file, a restart appending to the same file, crash lines, an unmounted folder,
object stores (fsspec's memory store)."""

from __future__ import annotations

import os
import time

import fsspec
import pytest

from monitor.samples import ALERT_METRIC
from monitor.sources.base import Target
from monitor.sources.logs_config import LogsTarget
from monitor.sources.logs_source import LogsSource
from tests.sources import log_lines as real


def megatron(step: int, loss: float = 2.5) -> str:
    return (
        f" iteration {step:8d}/  100000 | consumed samples: {step * 8} | "
        f"elapsed time per iteration (ms): 500.0 | learning rate: 3.000E-04 | global batch size:     8 | "
        f"lm loss: {loss:E} | grad norm: 0.300 |\n"
    )


class Log:
    def __init__(self, path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, text: str) -> None:
        with self.path.open("a") as f:
            f.write(text)

    def steps(self, a: int, b: int, noise: bool = True) -> None:
        self.write("".join(megatron(s) + ("[INFO] data loader ok\n" if noise else "") for s in range(a, b)))


def poll(src, cursors, glob, **cfg):
    res = src.poll(Target("w", LogsTarget(paths=[str(glob)], **cfg)), cursors, time.time())
    assert res.error is None, res.error
    res = res.validated()
    cursors.update(res.cursors)
    return res


def steps(res):
    return [s.step for s in res.samples if s.alert is None]


def test_reads_what_is_new_once_and_continues_from_its_cursor_across_a_restart(tmp_path):
    log = Log(tmp_path / "hero-1" / "stdout.log")
    log.steps(1, 11)
    src, cursors = LogsSource(), {}
    first = poll(src, cursors, tmp_path / "hero-*/stdout.log")
    assert steps(first) == list(range(1, 11))
    run = f"logs:{tmp_path}/hero-1/stdout.log"
    assert [r.run for r in first.runs] == [run] and first.runs[0].display_name == "hero-1/stdout.log"
    assert first.runs[0].labels["log_format"] == "megatron", "auto says which format it found"
    assert first.samples[0].metrics["train/loss"] == 2.5
    assert steps(poll(src, cursors, tmp_path / "hero-*/stdout.log")) == [], "nothing new, nothing read"
    size = os.path.getsize(log.path)
    log.steps(11, 14)
    fresh = LogsSource()  # herowatch restarted: the stored cursors say where to go on
    assert steps(poll(fresh, cursors, tmp_path / "hero-*/stdout.log")) == [11, 12, 13]
    assert fresh.bytes_read == os.path.getsize(log.path) - size, "only the new bytes are read"


def test_a_partial_last_line_is_read_once_it_is_whole(tmp_path):
    log = Log(tmp_path / "a.log")
    log.steps(1, 3, noise=False)
    line = megatron(3)
    log.write(line[:40])
    src, cursors = LogsSource(), {}
    assert steps(poll(src, cursors, tmp_path / "*.log")) == [1, 2]
    assert steps(poll(src, cursors, tmp_path / "*.log")) == []
    log.write(line[40:])
    assert steps(poll(src, cursors, tmp_path / "*.log")) == [3]


def test_rotation_reads_the_rest_of_the_old_file_then_the_new_one(tmp_path):
    log = Log(tmp_path / "stdout.log")
    log.steps(1, 4)
    src, cursors = LogsSource(), {}
    assert steps(poll(src, cursors, tmp_path / "stdout.log")) == [1, 2, 3]
    log.steps(4, 6)  # written after the last poll, before logrotate moved the file
    os.rename(tmp_path / "stdout.log", tmp_path / "stdout.log.1")
    log.steps(6, 8)  # the trainer's new file
    assert steps(poll(src, cursors, tmp_path / "stdout.log")) == [4, 5, 6, 7], "no step lost, none twice"


def test_truncation_reads_from_the_start(tmp_path):
    log = Log(tmp_path / "stdout.log")
    log.steps(1, 30)
    src, cursors = LogsSource(), {}
    poll(src, cursors, tmp_path / "stdout.log")
    log.path.write_text("")  # copytruncate
    log.steps(30, 32)
    assert steps(poll(src, cursors, tmp_path / "stdout.log")) == [30, 31]
    # replaced in place and already longer than the cursor: its first bytes tell
    log.path.write_text(
        "a new job's banner, other than the old one\n" + "".join(megatron(s) for s in range(1, 60))
    )
    assert steps(poll(src, cursors, tmp_path / "stdout.log")) == list(range(1, 60))


def test_a_restart_appending_to_the_same_file_is_a_step_rewind(tmp_path):
    log = Log(tmp_path / "stdout.log")
    log.steps(1, 21)
    src, cursors = LogsSource(), {}
    poll(src, cursors, tmp_path / "stdout.log")
    log.write('Traceback (most recent call last):\n  File "train.py", line 9\nRuntimeError: NCCL error\n')
    log.steps(15, 18)  # resumed from the checkpoint at 14
    res = poll(src, cursors, tmp_path / "stdout.log")
    assert steps(res) == [15, 16, 17]
    crash = [s.alert for s in res.samples if s.alert is not None]
    assert [(a.title, a.text, a.level) for a in crash] == [
        ("RuntimeError (traceback)", "RuntimeError: NCCL error", "error")
    ]
    assert any(s.metrics.get(ALERT_METRIC) == 3.0 for s in res.samples), "reaches the job_alert rules"


def test_many_ranks_printing_one_death_are_one_alert_per_poll(tmp_path):
    log = Log(tmp_path / "stdout.log")
    log.steps(1, 3)
    log.write("".join(real.NCCL_TIMEOUT.replace("Rank 0", f"Rank {r}") + "\n" for r in range(64)))
    res = poll(LogsSource(), {}, tmp_path / "stdout.log")
    alerts = [s.alert for s in res.samples if s.alert is not None]
    assert (
        len(alerts) == 1
        and alerts[0].title == "NCCL watchdog timeout"
        and "Watchdog caught" in alerts[0].text
    )


def test_bounded_per_file_per_poll_and_per_line(tmp_path):
    log = Log(tmp_path / "big.log")
    log.steps(1, 2, noise=False)
    log.write("x" * 20_000 + "\n")  # a line over max_line: skipped, never buffered whole
    log.steps(2, 400, noise=False)
    src, cursors = LogsSource(), {}
    got: list[int] = []
    polls = 0
    while polls < 100:
        polls += 1
        before = src.bytes_read
        got += steps(
            poll(src, cursors, tmp_path / "*.log", read_bytes=4096, max_line=1024, warmup_bytes=1 << 30)
        )
        assert src.bytes_read - before <= 4096
        if got and got[-1] == 399:
            break
    assert got == list(range(1, 400)) and polls > 10, "a backlog is read over several polls, whole"


def test_first_sight_of_a_long_file_reads_its_end_only(tmp_path):
    log = Log(tmp_path / "old.log")
    log.steps(1, 5000, noise=False)
    src = LogsSource()
    got = steps(poll(src, {}, tmp_path / "*.log", warmup_bytes=8192))
    assert got[-1] == 4999 and len(got) < 100 and got == list(range(got[0], 5000))
    assert src.bytes_read <= 8192


def test_times_come_from_the_lines_when_they_print_them(tmp_path):
    log = Log(tmp_path / "titan.log")
    log.write("\n".join(real.TORCHTITAN_OLD) + "\n")
    res = poll(LogsSource(), {}, tmp_path / "*.log", timestamps="utc")
    assert [s.step for s in res.samples] == [200, 210]
    assert res.samples[1].t - res.samples[0].t == pytest.approx(14.648)


def test_without_timestamps_lines_are_spread_over_the_write_interval(tmp_path):
    log = Log(tmp_path / "a.log")
    log.steps(1, 3, noise=False)
    src, cursors = LogsSource(), {}
    first = poll(src, cursors, tmp_path / "*.log")
    assert first.samples[1].t - first.samples[0].t == 0.5, "first sight: spaced by the printed durations"
    log.steps(3, 7, noise=False)
    os.utime(log.path, (time.time() + 40, time.time() + 40))
    res = poll(src, cursors, tmp_path / "*.log")
    ts = [s.t for s in res.samples]
    assert ts == sorted(ts) and len(set(ts)) == 4 and ts[-1] == os.stat(log.path).st_mtime


def test_a_run_key_joins_files_and_unmatched_files_are_not_runs(tmp_path):
    Log(tmp_path / "job-7" / "rank0.log").steps(1, 3)
    Log(tmp_path / "job-7" / "rank1.log").steps(1, 3)
    Log(tmp_path / "other" / "x.log").steps(1, 3)
    res = poll(LogsSource(), {}, tmp_path / "*/*.log", run_key=r"/(?P<run>job-\d+)/")
    assert [r.run for r in res.runs] == ["logs:w/job-7"]


def test_a_folder_that_is_not_there_is_an_outage_not_no_runs(tmp_path):
    res = LogsSource().poll(
        Target("w", LogsTarget(paths=[str(tmp_path / "unmounted" / "*.log")])), {}, time.time()
    )
    assert res.error and "unmounted" in res.error
    (tmp_path / "empty").mkdir()
    ok = LogsSource().poll(
        Target("w", LogsTarget(paths=[str(tmp_path / "empty" / "*.log")])), {}, time.time()
    )
    assert ok.error is None and ok.runs == []


def test_object_store_paths(tmp_path):
    fs = fsspec.filesystem("memory")
    fs.pipe("/bucket/jobs/hero-1/stdout.log", "".join(megatron(s) for s in range(1, 6)).encode())
    src, cursors = LogsSource(), {}
    res = poll(src, cursors, "memory://bucket/jobs/*/stdout.log")
    assert steps(res) == [1, 2, 3, 4, 5]
    with fs.open("/bucket/jobs/hero-1/stdout.log", "ab") as f:
        f.write(megatron(6).encode())
    assert steps(poll(src, cursors, "memory://bucket/jobs/*/stdout.log")) == [6]
