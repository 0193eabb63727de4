"""When a run's detector state is written: every ``every`` seconds at a poll that brought it something,
whatever the poll interval, never for a run that brought nothing (10,000 idle runs are not exported and
compressed again at every checkpoint), the runs of a replica started together spread over the interval."""

from __future__ import annotations

from monitor.engine.checkpoints import CheckpointCounter

T0 = 1_780_000_000.0


def saves(
    counter: CheckpointCounter, run: str, changes: list[bool], interval: float, every: float = 120.0, t0=T0
) -> list[int]:
    """The polls (1-based) at which the run's state was saved, polled every ``interval`` seconds."""
    out = []
    for i, changed in enumerate(changes, 1):
        now = t0 + i * interval
        if counter.due(run, now, every, changed):
            counter.saved(run, now)
            out.append(i)
    return out


def test_a_run_polled_every_15_s_is_saved_every_8_polls_one_every_60_s_every_2():
    fast = saves(CheckpointCounter(), "wandb:lab/llm/r1", [True] * 40, interval=15.0)
    assert fast[0] <= 9 and all(b - a == 8 for a, b in zip(fast, fast[1:], strict=False)), fast
    slow = saves(CheckpointCounter(), "wandb:lab/llm/r1", [True] * 20, interval=60.0)
    assert slow[0] <= 3 and all(b - a == 2 for a, b in zip(slow, slow[1:], strict=False)), slow


def test_the_runs_of_a_replica_started_together_do_not_all_save_at_once():
    counter = CheckpointCounter()
    first = [saves(counter, f"wandb:lab/sweep/r{i}", [True] * 10, interval=15.0)[0] for i in range(400)]
    per_poll = [first.count(k) for k in range(2, 10)]
    assert sum(per_poll) == 400 and all(20 <= n <= 80 for n in per_poll), per_poll  # ~50 a poll


def test_an_idle_run_is_not_saved_again_until_it_brings_something():
    counter = CheckpointCounter()
    run = "wandb:lab/llm/r1"
    busy = saves(counter, run, [True] * 16, interval=15.0)
    assert busy  # saved while it was busy
    idle = saves(counter, run, [False] * 50, interval=15.0, t0=T0 + 16 * 15.0)
    assert idle == []  # idle for 50 polls: not a single export
    again = saves(counter, run, [True] * 16, interval=15.0, t0=T0 + 66 * 15.0)
    assert again[:2] == [1, 9]  # busy again: its state, older than 2 minutes, is saved at once
