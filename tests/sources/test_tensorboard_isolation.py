"""One bad run never blinds a TensorBoard watch (issue 37): a record whose length prefix is 2^63-1 with a
valid header checksum raised ``MemoryError`` on every poll, and a run directory named with bytes that are
not UTF-8 raised ``UnicodeEncodeError``; both blinded every run of the watch. Now the bad run is reported
unreadable (naming the file and byte) and the others are read; an event file linked from outside the
log directory is not read."""

from __future__ import annotations

import os
import struct
import time
import tracemalloc

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from monitor.sources.base import Target
from monitor.sources.tensorboard_config import TensorboardTarget
from monitor.sources.tensorboard_source import TensorboardSource
from tests.tb_support import TbRun


def poll(src, logdir, cursors=None):  # noqa: ANN001, ANN201
    res = src.poll(Target("tb", TensorboardTarget(logdir=str(logdir))), cursors or {}, time.time())
    assert res.error is None, res.error
    return res.validated()


def healthy(logdir, name: str, steps: range) -> TbRun:  # noqa: ANN001
    run = TbRun(logdir, name)
    for s in steps:
        run.log(s, {"lm loss": 2.0})
    run.flush()
    return run


def corrupt_record(length: int = 2**63 - 1) -> bytes:
    head = struct.pack("<Q", length)
    return head + struct.pack("<I", masked_crc32c(head)) + b"\0" * 64


def test_a_record_of_length_2_63_makes_only_its_own_run_unreadable_naming_file_and_byte(tmp_path):
    healthy(tmp_path, "good", range(5))
    bad = healthy(tmp_path, "bad", range(3))
    path = bad.files()[0]
    at = path.stat().st_size
    with path.open("ab") as f:
        f.write(corrupt_record())
    src = TensorboardSource()
    tracemalloc.start()
    res = poll(src, tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    good, bad_key = (f"tensorboard:{tmp_path}/{n}" for n in ("good", "bad"))
    assert sorted(s.step for s in res.samples if s.run == good) == list(range(5))
    assert sorted(s.step for s in res.samples if s.run == bad_key) == [0, 1, 2], "read up to the damage"
    why = res.unreadable[bad_key]
    assert str(path) in why and f"record at byte {at}" in why and "max_record_bytes" in why, why
    assert list(res.unreadable) == [bad_key]
    assert peak < 32 << 20, f"{peak >> 20} MB"
    again = poll(src, tmp_path, res.cursors)  # every poll: still the run's own problem, the rest is read
    assert list(again.unreadable) == [bad_key]


def test_a_run_directory_named_with_bytes_that_are_not_utf8_is_read_under_an_escaped_name(tmp_path):
    healthy(tmp_path, "good", range(4))
    healthy(tmp_path, "plain", range(2))
    os.rename(
        os.path.join(os.fsencode(tmp_path), b"plain"), os.path.join(os.fsencode(tmp_path), b"run-\xff\xfe")
    )
    res = poll(TensorboardSource(), tmp_path)
    names = sorted(r.name for r in res.runs)
    assert names == ["good", "run-\\xff\\xfe"], names
    assert not res.unreadable
    assert sorted(s.step for s in res.samples if s.run.endswith("run-\\xff\\xfe")) == [0, 1]
    for r in res.runs:
        r.run.encode("utf-8")  # storable: no surrogates left


def test_an_event_file_linked_from_outside_the_log_directory_is_not_read(tmp_path):
    logdir, elsewhere = tmp_path / "tb", tmp_path / "private"
    healthy(logdir, "good", range(3))
    secret = healthy(elsewhere, "secret", range(7))
    (logdir / "linked").mkdir()
    (logdir / "linked" / "events.out.tfevents.1.host").symlink_to(secret.files()[0])
    (logdir / "dirlink").symlink_to(elsewhere / "secret", target_is_directory=True)
    inside = healthy(logdir, "inside-link", range(0))
    (inside.dir / "events.out.tfevents.2.host").symlink_to(logdir / "good" / os.listdir(logdir / "good")[0])
    res = poll(TensorboardSource(), logdir)
    read = {r.name for r in res.runs}
    assert "linked" not in read and "dirlink" not in read, read
    assert not [s for s in res.samples if s.run.endswith(("/linked", "/dirlink"))]
    assert sorted(s.step for s in res.samples if s.run.endswith("/good")) == [0, 1, 2]
    assert "inside-link" in read, "a link within the log directory is read"
