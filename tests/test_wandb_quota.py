"""W&B within its rate limit (issue 40): a project with many running runs beside the hero runs, behind a
W&B stand-in that answers 429 beyond its quota. herowatch sends no request over the quota, reads the
hero runs' new steps on every poll, shares what is left among the others (oldest read first), says how
many it put off, and loses no step of any run: a run put off is read from its cursor later.

Time is simulated: the stand-in's quota window and herowatch's quota read the same clock, which each
poll moves by the poll interval (and a wait for a place in the quota moves it by the wait).
"""

from __future__ import annotations

import math

from monitor.engine.source_polls import SourcePolls
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import (
    PROJECT,
    Watcher,
    steps,
    wandb_standin_fixture,  # noqa: F401  (the server fixture)
)

RUNS, HEROES, QUOTA, INTERVAL = 300, 10, 60, 30.0  # 60 requests a minute; a poll every 30 s


def simulated(server: WandbStandin, w: Watcher) -> list[float]:
    now = [0.0]
    server.quota_clock = lambda: now[0]
    w.source.clock = lambda: now[0]
    w.source.quota_sleep = lambda s: now.__setitem__(0, now[0] + s)
    return now


def test_hero_runs_are_read_every_poll_and_nothing_goes_over_the_quota(server: WandbStandin) -> None:
    server.enforce_quota(QUOTA, window=60.0)
    names = [f"hero{i}" if i < HEROES else f"sweep{i}" for i in range(RUNS)]
    for name in names:
        server.add_run(PROJECT, name, tags=["hero"] if name.startswith("hero") else ["sweep"])
        server.log_steps(PROJECT, name, 0, 3)
    w = Watcher(server, timeout=10, per_page=100, warmup_steps=100, rate_limit=QUOTA)
    now = simulated(server, w)

    reads: dict[str, int] = dict.fromkeys(names, 0)
    seen: dict[str, list[int]] = {name: [] for name in names}
    for poll in range(8):
        if poll:
            for name in names:  # every run logs 3 steps a poll interval
                server.log_steps(PROJECT, name, 3 * poll, 3 * poll + 3)
        res = w.poll()
        assert res.error is None, res.error
        listing = server.count("Runs")
        assert listing == math.ceil(RUNS / 100)
        assert server.count("HistoryPage") == res.requests - listing - server.count("Viewer")
        for name in names:
            got = steps(res, name)
            seen[name] += got
            reads[name] += bool(got)
            if name.startswith("hero"):
                assert got == list(range(0 if poll == 0 else 3 * poll, 3 * poll + 3)), (
                    f"poll {poll}: hero run {name} got {got}: not read on time"
                )
        assert res.throttle is not None and res.throttle.priority_deferred == 0
        polls = SourcePolls()  # what /readyz and /metrics read (herowatch_source_runs_deferred)
        polls.polled("hero", "wandb", now[0], res.error, res.throttle)
        assert polls.throttle_lines("wandb") == [
            f"watch hero: {res.throttle.deferred} runs' history put off by the quota (60 requests per 60s); "
            f"the longest wait since a read {res.throttle.waiting:.0f}s"
        ]
        assert res.throttle.deferred == RUNS - HEROES - sum(1 for n in names[HEROES:] if steps(res, n))
        now[0] += INTERVAL

    assert server.over_quota() == 0, "a request over the quota"
    others = [reads[n] for n in names[HEROES:]]
    assert max(others) - min(others) <= 1, "the others share the rest in turn, oldest read first"
    sent = 4 * QUOTA  # what 4 minutes of quota would carry; the listing and the heroes take theirs first
    first = 8 * (math.ceil(RUNS / 100) + HEROES)
    print(f"others read {sum(others)} times in 4 minutes; the quota left them {sent - first}")
    assert sum(others) >= 0.6 * (sent - first), "the quota left over is used, not wasted"
    for name in names:  # none lost: every run's steps, read whole, in order, once
        assert seen[name] == list(range(len(seen[name]))), name


def test_after_a_429_nothing_is_sent_until_the_window_has_passed(server: WandbStandin) -> None:
    server.add_run(PROJECT, "hero0", tags=["hero"])
    w = Watcher(server, timeout=5)
    now = simulated(server, w)
    assert w.poll().error is None
    server.fail(429, times=-1, retry_after=0)  # another client of the key used up the quota
    res = w.poll()
    assert res.error and "429" in res.error
    server.clear_faults()
    sent = server.count()
    now[0] += 30.0
    res = w.poll()  # within the window: the poll waits for its place no longer than its time-out
    assert res.error and "quota" in res.error and server.count() == 0, (res.error, sent)
    now[0] += 31.0
    assert w.poll().error is None, "after the window: polling again"
