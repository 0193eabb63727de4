"""PyTorch's NCCL flight recorder, read from JSON dumps written per c10d's ``dump_json`` schema (format
2.10, ``tests/stacks/fr_dumps.py``): herowatch names the collective a hang waits on and the ranks that
never entered it, in the stacks answer (the page's sentence, the API's ``report``). The wrapper reads
the dump files at the job's prefix, bounded, and never loads a pickle: PyTorch's own dump file, a
huge, malformed or hostile dump each gives a clear sentence, never an exception or a code run."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from monitor.stacks.analysis import analyse
from monitor.stacks.capture import Limits, capture
from monitor.stacks.flight import findings
from monitor.stacks.flight_read import MAX_BYTES, PICKLE, digest, read_all
from monitor.stacks.model import NodeStacks
from monitor.stacks.page import report_of, view_of
from tests.stacks.fr_dumps import dump, dump_bytes

HANG = "collective #412 all_reduce on pg 0 (default_pg): rank 5 never entered it (7 of 8 entered)"


def _digests(world: int = 8, **kw) -> list:
    return [
        digest(
            dump_bytes(rank=r, world=world, **kw(r) if callable(kw) else kw), f"nccl_trace_rank_{r}", r, None
        )
        for r in range(world)
    ]


def _write(prefix: Path, ranks=range(8), **kw) -> None:
    for r in ranks:
        Path(f"{prefix}{r}").write_bytes(dump_bytes(rank=r, entered=r != 5, **kw))


def test_the_rank_that_never_entered_the_collective_is_named():
    dumps = [digest(dump_bytes(rank=r, entered=r != 5), f"nccl_trace_rank_{r}", r, None) for r in range(8)]
    assert all(d.error is None for d in dumps), [d.error for d in dumps]
    assert dumps[0].version == "2.10"
    [default] = [g for g in dumps[0].groups if g.pg_id == 0]
    assert default.size == 8 and default.ranks == [(0, 7)] and default.last_completed == 411
    assert [e.seq for e in default.entries] == list(range(407, 413))  # the latest 6, p2p left out
    assert findings(dumps) == (HANG,)  # the tensor-parallel groups all completed: nothing said of them
    # PyTorch's own pickle dump beside a rank's JSON one is not news; a rank with only a pickle is
    pickled = [digest(b"\x80\x04", f"nccl_trace_rank_{r}", r, None) for r in (3, 9)]
    assert pickled[0].error == PICKLE
    assert findings([*dumps, *pickled]) == (HANG, f"rank 9: {PICKLE}")


def test_all_entered_none_completed_and_ranks_that_disagree():
    same = [digest(dump_bytes(rank=r, stuck={3: "scheduled"}), f"f{r}", r, None) for r in range(8)]
    assert findings(same) == (
        "collective #412 all_reduce on pg 0 (default_pg): all 8 ranks with a dump entered it, 7 started, "
        "none completed (below Python: NCCL, the network, a GPU)",
    )
    odd = [
        digest(
            dump_bytes(rank=r, **({"op": "nccl:all_gather", "sizes": [[4]]} if r == 6 else {})),
            f"f{r}",
            r,
            None,
        )
        for r in range(8)
    ]
    assert findings(odd) == (
        "collective #412 all_reduce on pg 0 (default_pg): the ranks disagree on it: 7 have all_reduce "
        "[[1024, 1024]]; rank 6 has all_gather [[4]]",
    )


def test_a_rank_without_a_dump_is_counted_and_every_completed_dump_says_so():
    dumps = [digest(dump_bytes(rank=r, entered=r != 5), f"f{r}", r, None) for r in range(8) if r != 2]
    assert findings(dumps) == (
        "collective #412 all_reduce on pg 0 (default_pg): rank 5 never entered it (6 of 8 entered); "
        "1 rank of the group without a dump",
    )
    done = [digest(dump_bytes(rank=r, stuck={r: "completed"}), f"f{r}", r, None) for r in range(2)]
    assert findings(done) == ("every collective in 2 dumps completed",)


def test_the_wrapper_reads_the_dumps_at_the_prefix_and_the_answer_names_the_collective(tmp_path, monkeypatch):
    prefix = tmp_path / "nccl_trace_rank_"
    _write(prefix)
    monkeypatch.setenv("TORCH_FR_DUMP_TEMP_FILE", str(prefix))
    node = capture(os.getpid(), run="job", capture_id="c1", node="node-0", py_spy=None, limits=Limits())
    assert sorted(d.rank for d in node.flight) == list(range(8))
    pushed = NodeStacks.model_validate_json(node.model_dump_json())  # what herowatch's door takes
    report = report_of([pushed], ["node-0"], pushed.t, pushed.t + 1)
    assert report.flight == (HANG,)
    assert f"flight recorder: {HANG}." in report.summary()
    assert report.to_dict()["flight"] == [HANG]
    assert HANG in view_of(report, pushed.t + 1, 60.0).summary  # what a page says
    # --flight-recorder beats the environment; a directory works too
    other = tmp_path / "fr"
    other.mkdir()
    (other / "rank_3.json").write_bytes(dump_bytes(rank=3))
    node = capture(
        os.getpid(), run="job", capture_id="c2", node="n", py_spy=None, limits=Limits(), flight=str(other)
    )
    assert [(d.file, d.rank) for d in node.flight] == [("rank_3.json", 3)]


def test_hostile_dumps_are_bounded_and_said_and_no_pickle_is_ever_loaded(tmp_path):
    prefix = tmp_path / "trace_"
    ran = tmp_path / "pickle-ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {ran}",))

    (tmp_path / "trace_0").write_bytes(pickle.dumps({"version": "2.10", "x": Evil()}, protocol=4))
    with open(tmp_path / "trace_1", "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: a huge dump
    (tmp_path / "trace_2").write_bytes(b'{"version": "2.10", "entries": [')
    (tmp_path / "trace_3").write_bytes(b"[" * 200_000 + b"]" * 200_000)
    (tmp_path / "trace_4").write_text(json.dumps({"version": "2.10", "entries": [{"pg_id": "x"}]}))
    (tmp_path / "trace_5").write_text(json.dumps(dump(rank=5) | {"version": "3.0"}))
    (tmp_path / "trace_6").symlink_to("/etc/passwd")
    t0 = time.monotonic()
    got = {d.rank: d.error for d in read_all(str(prefix))}
    assert time.monotonic() - t0 < 10
    assert not ran.exists(), "a pickle was loaded"
    assert got[0] == PICKLE and "never unpickles" in got[0] and "_dump_nccl_trace_json" in got[0]
    assert got[1] == f"dump is {(MAX_BYTES + 1) >> 20} MiB, over the {MAX_BYTES >> 20} MiB read"
    assert got[2] == "flight recorder dump is not JSON: JSONDecodeError"
    assert got[3] == "flight recorder dump is not JSON: RecursionError"
    assert got[4].startswith("not a flight recorder dump: entries.0.pg_id: Input should be a valid integer")
    assert got[5] == "dump format 3.0: herowatch reads 2.x"
    assert 6 not in got  # a symlink is not followed
    said = findings(read_all(str(prefix)))
    assert said[0] == f"rank 0: {PICKLE}" and said[-1] == "3 more dumps unreadable", said


def test_the_door_bounds_what_a_wrapper_sends_of_the_flight_recorder():
    one = digest(dump_bytes(rank=0), "f0", 0, None).model_dump()
    base = {"run": "job", "capture": "c1", "node": "n", "t": 1.0}
    NodeStacks.model_validate({**base, "flight": [one] * 16})
    for bad in (
        {**base, "flight": [one] * 17},
        {**base, "flight": [{**one, "groups": one["groups"] * 9}]},
        {
            **base,
            "flight": [{**one, "groups": [{**one["groups"][0], "entries": one["groups"][0]["entries"] * 2}]}],
        },
        {
            **base,
            "flight": [
                {**one, "groups": [{**one["groups"][0], "entries": [{"seq": 1, "op": "x", "state": "lost"}]}]}
            ],
        },
        {**base, "flight": [{**one, "file": "x" * 201}]},
        {**base, "flight": [{**one, "unpickle": True}]},
    ):
        with pytest.raises(ValidationError):
            NodeStacks.model_validate(bad)


def test_the_stacks_and_the_flight_recorder_are_said_together():
    dumps = [digest(dump_bytes(rank=r, entered=r != 5), f"f{r}", r, None) for r in range(8)]
    push = NodeStacks.model_validate(
        {
            "run": "job",
            "capture": "c1",
            "node": "node-0",
            "t": 1.0,
            "processes": [
                {
                    "pid": 100 + r,
                    "rank": r,
                    "role": "rank",
                    "threads": [
                        {
                            "frames": [
                                {
                                    "name": "read_chunk" if r == 5 else "all_reduce",
                                    "file": "train.py",
                                    "line": 9,
                                }
                            ]
                        }
                    ],
                }
                for r in range(8)
            ],
            "flight": [d.model_dump() for d in dumps],
        }
    )
    summary = analyse([push]).summary()
    assert summary.startswith(
        "7 of 8 ranks wait in `all_reduce` (train.py:9); rank 5 on node-0 is in `read_chunk`"
    )
    assert f"; flight recorder: {HANG}." in summary
