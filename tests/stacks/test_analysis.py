"""The analysis of a capture as a table (``monitor.stacks.analysis``, ``monitor.stacks.page``): pure
inputs (the nodes' pushes), the groups and the sentence on-call reads. No I/O, no clock."""

from __future__ import annotations

import pytest

from monitor.stacks.analysis import analyse, ranges
from monitor.stacks.model import Frame, NodeStacks, ProcessStack, ThreadStack
from monitor.stacks.page import report_of

T = 1_700_000_000.0
BARRIER = [("barrier", "train/dist.py", 40), ("step", "train/loop.py", 88), ("<module>", "train.py", 5)]
READ = [("read_chunk", "train/io.py", 20), ("restore", "train/ckpt.py", 61), ("<module>", "train.py", 5)]
LOAD = [("load_shard", "train/io.py", 90), ("restore", "train/ckpt.py", 64), ("<module>", "train.py", 5)]


def proc(rank: int | None, frames, pid: int | None = None, role: str = "rank", error: str | None = None):
    threads = (
        []
        if error
        else [ThreadStack(name="MainThread", frames=[Frame(name=n, file=f, line=ln) for n, f, ln in frames])]
    )
    return ProcessStack(pid=pid or 1000 + (rank or 0), rank=rank, role=role, threads=threads, error=error)


def node(name: str, *processes: ProcessStack, error: str | None = None, t: float = T) -> NodeStacks:
    return NodeStacks(run="r", capture="c1", node=name, t=t, processes=list(processes), error=error)


def cluster(ranks: int, per_node: int, odd: dict[int, list]) -> list[NodeStacks]:
    """``ranks`` ranks, ``per_node`` on each node-N, all in the barrier but those in ``odd``."""
    return [
        node(f"node-{n}", *(proc(r, odd.get(r, BARRIER)) for r in range(n * per_node, (n + 1) * per_node)))
        for n in range(ranks // per_node)
    ]


def shape(pushes: list[NodeStacks]) -> list[tuple[int, bool, str]]:
    """Each group as (count, odd, innermost function), in the report's order."""
    return [(g.count, g.odd, g.frames[0].name if g.frames else "") for g in analyse(pushes).groups]


# ---- normalisation: what makes two ranks "in the same place" ------------------------------------------
SAME_PLACE = {
    "different lines of one polling loop": (
        [("barrier", "train/dist.py", 40), ("step", "train/loop.py", 88)],
        [("barrier", "train/dist.py", 47), ("step", "train/loop.py", 91)],
    ),
    "an interpreter frame on one of them": (
        [
            ("barrier", "train/dist.py", 40),
            ("_call_with_frames_removed", "<frozen importlib._bootstrap>", 241),
            ("step", "train/loop.py", 88),
        ],
        [("barrier", "train/dist.py", 40), ("step", "train/loop.py", 88)],
    ),
    "native frames at different addresses": (
        [("0x7f3a12bc40d0", "libc.so.6", 0), ("barrier", "train/dist.py", 40)],
        [("0x7f99e0011a2f", "libc.so.6", 0), ("barrier", "train/dist.py", 40)],
    ),
    "a lambda at an address": (
        [("<lambda at 0x7f3a12bc40d0>", "train/dist.py", 3), ("barrier", "train/dist.py", 40)],
        [("<lambda at 0x55d0e0a1b2c3>", "train/dist.py", 3), ("barrier", "train/dist.py", 40)],
    ),
}


@pytest.mark.parametrize("case", SAME_PLACE, ids=list(SAME_PLACE))
def test_ranks_in_the_same_place_are_one_group(case):
    a, b = SAME_PLACE[case]
    assert shape([node("n0", proc(0, a), proc(1, b))]) == [(2, False, a[0][0])]


DIFFERENT_PLACE = {
    "another function": ([("barrier", "train/dist.py", 40)], [("read_chunk", "train/dist.py", 40)]),
    "the same name in another file": ([("wait", "train/dist.py", 40)], [("wait", "train/io.py", 40)]),
    "called from elsewhere": (
        [("wait", "train/dist.py", 4), ("step", "train/loop.py", 8)],
        [("wait", "train/dist.py", 4), ("restore", "train/ckpt.py", 8)],
    ),
}


@pytest.mark.parametrize("case", DIFFERENT_PLACE, ids=list(DIFFERENT_PLACE))
def test_ranks_in_different_places_are_different_groups(case):
    a, b = DIFFERENT_PLACE[case]
    assert len(shape([node("n0", proc(0, a), proc(1, b))])) == 2


# ---- majority and odd groups ------------------------------------------------------------------------
def test_one_odd_rank_is_named_with_its_node_its_call_and_how_long():
    report = analyse(cluster(704, 8, {417: READ}))
    assert [(g.count, g.odd) for g in report.groups] == [(703, False), (1, True)]
    assert report.majority is report.groups[0]
    text = report.summary(stuck_for=14 * 60)
    assert text.startswith("703 of 704 ranks wait in `barrier` (train/dist.py:40); ")
    assert "rank 417 on node-52 is in `read_chunk` (train/io.py:20) since 14m." in text


def test_two_odd_groups_smallest_first_ranks_as_ranges():
    report = analyse(cluster(64, 8, {17: READ, 40: LOAD, 41: LOAD}))
    assert shape(cluster(64, 8, {17: READ, 40: LOAD, 41: LOAD})) == [
        (61, False, "barrier"),
        (1, True, "read_chunk"),
        (2, True, "load_shard"),
    ]
    assert [g.who() for g in report.odd] == ["rank 17 on node-2", "ranks 40-41 on node-5"]
    text = report.summary(stuck_for=90)
    assert "61 of 64 ranks wait in `barrier`" in text
    assert "ranks 40-41 on node-5 are in `load_shard` (train/io.py:90) since 1m30s" in text


def test_an_odd_group_across_nodes_names_every_node_and_sorted_ranges():
    odd = {r: READ for r in (23, 8, 9, 10, 11, 3)}
    (_, group) = analyse(cluster(32, 8, odd)).groups
    assert group.odd and group.who() == "ranks 3, 8-11, 23 on node-0, node-1, node-2"


@pytest.mark.parametrize(
    ("split", "name"),
    [({r: READ for r in range(4)}, "50/50"), ({0: READ, 1: READ, 2: LOAD, 3: LOAD, 4: LOAD}, "three ways")],
    ids=["50/50", "three ways"],
)
def test_without_a_majority_no_group_is_named_odd(split, name):
    pushes = (
        cluster(8, 4, split)
        if name == "50/50"
        else [node("n0", *(proc(r, split.get(r, BARRIER)) for r in range(8)))]
    )
    report = analyse(pushes)
    assert len(report.groups) >= 2 and not report.odd and report.majority is None
    text = report.summary(stuck_for=60)
    assert text.startswith("no majority: 8 ranks in ")
    assert all(f"{g.count} in `{g.frames[0].name}`" in text for g in report.groups), text
    assert " is in " not in text and " are in " not in text


def test_all_ranks_in_one_place_no_odd_group():
    report = analyse(cluster(16, 8, {}))
    assert shape(cluster(16, 8, {})) == [(16, False, "barrier")]
    assert report.majority is None and report.odd == []
    assert report.summary() == "all 16 ranks are in `barrier` (train/dist.py:40)."


# ---- what is counted, what could not be had --------------------------------------------------------
def test_launchers_and_workers_are_listed_not_counted_against_the_ranks():
    pushes = [
        node(
            "n0",
            proc(None, [("wait", "torch/distributed/run.py", 1)], pid=10, role="launcher"),
            proc(0, BARRIER),
            proc(1, BARRIER),
            proc(0, [("get", "queue.py", 3)], pid=20, role="worker"),
            proc(2, READ),
        )
    ]
    report = analyse(pushes)
    assert (report.total, report.others, report.counted) == (3, 2, "ranks")
    assert shape(pushes) == [(2, False, "barrier"), (1, True, "read_chunk")]


def test_without_ranks_every_python_process_is_counted_by_pid():
    pushes = [
        node(
            "n0",
            *(proc(None, BARRIER, pid=p, role="process") for p in (5, 6, 7)),
            proc(None, READ, pid=9, role="process"),
        )
    ]
    report = analyse(pushes)
    assert report.counted == "processes"
    assert report.odd[0].who() == "pid 9 on n0"


def test_a_node_that_did_not_answer_is_named_and_the_others_still_grouped():
    pushes = [p for p in cluster(24, 8, {17: READ}) if p.node != "node-1"]
    report = report_of(pushes, expected=["node-0", "node-1", "node-2"], asked_at=T, now=T + 30)
    assert [(g.count, g.odd) for g in report.groups] == [(15, False), (1, True)]
    assert report.problems == ("node-1: no answer within 30s",)
    text = report.summary(stuck_for=60, now=T + 30)
    assert "15 of 16 ranks wait in `barrier`" in text
    assert "rank 17 on node-2 is in `read_chunk`" in text
    assert "stacks not available: node-1: no answer within 30s" in text
    assert "(stacks of 2 nodes, captured 30s ago)" in text


def test_a_node_that_could_not_look_and_a_rank_that_timed_out_say_why():
    pushes = [
        node("node-0", proc(0, BARRIER), proc(1, BARRIER), proc(2, [], error="py-spy timed out after 10s")),
        node("node-1", error="no permission to read this process (py-spy needs root, or CAP_SYS_PTRACE)"),
    ]
    report = analyse(pushes)
    assert shape(pushes) == [(2, False, "barrier")]
    assert set(report.problems) == {
        "rank 2 on node-0: py-spy timed out after 10s",
        "node-1: no permission to read this process (py-spy needs root, or CAP_SYS_PTRACE)",
    }
    assert "stacks not available: " in report.summary()


def test_nothing_captured_says_so():
    assert analyse([node("n0")]).summary() == "no Python process found."


@pytest.mark.parametrize(
    ("numbers", "text"),
    [
        ([7], "7"),
        ([40, 41], "40-41"),
        ([1, 2, 3, 7], "1-3, 7"),
        ([3, 8, 9, 10, 11, 23], "3, 8-11, 23"),
        (list(range(0, 40, 2)), "0, 2, 4, 6, 8, 10, 12, 14, ... (20 in all)"),
    ],
)
def test_rank_ranges(numbers, text):
    assert ranges(numbers) == text
