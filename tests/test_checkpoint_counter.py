"""When a run's detector state is written: every few polls that brought it something, never for a run
that brought nothing (10,000 idle runs are not exported and compressed again at every checkpoint)."""

from __future__ import annotations

from monitor.engine.checkpoints import CheckpointCounter


def saves(counter: CheckpointCounter, run: str, changes: list[bool], every: int = 4) -> list[int]:
    """The polls (1-based) at which the run's state was saved."""
    out = []
    for i, changed in enumerate(changes, 1):
        if counter.due(run, every, changed):
            counter.saved(run)
            out.append(i)
    return out


def test_a_run_that_brings_something_every_poll_is_saved_every_four_polls():
    got = saves(CheckpointCounter(), "wandb:lab/llm/r1", [True] * 20)
    assert len(got) in (5, 6)  # the first save after 1 to 4 polls (spread by the run's id), then every 4
    assert all(b - a == 4 for a, b in zip(got, got[1:], strict=False))


def test_an_idle_run_is_not_saved_again_until_it_brings_something():
    counter = CheckpointCounter()
    run = "wandb:lab/llm/r1"
    busy = saves(counter, run, [True] * 8)
    assert busy  # saved while it was busy
    assert saves(counter, run, [False] * 50) == []  # idle for 50 polls: not a single export
    again = saves(counter, run, [True] * 8)  # busy again: counted from where it left off
    assert again and again[0] <= 4 and again[1:] == [again[0] + 4]
