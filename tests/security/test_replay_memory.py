"""The replay memory (monitor/web/api/slack_replay.py) on its own: every entry leaves by time, whatever
the order entries came in (a request's timestamp may be up to five minutes in the future), nothing that
cannot expire is taken, and a full memory drops the entry that expires first rather than refuse a
valid click (tests/security/test_slack_replay.py attacks it through a running server)."""

from __future__ import annotations

import pytest

from alerts.notifiers.slack.interactions import Signed
from monitor.web.api.slack_replay import ReplayMemory, SlackReplays


def test_entries_leave_by_time_whatever_order_they_came_in():
    memory = ReplayMemory(max_entries=100)
    assert memory.first_time("late", expires_at=2000, now=1000)  # a timestamp from the future
    assert memory.first_time("early", expires_at=1100, now=1000)  # came second, expires first
    assert not memory.first_time("early", expires_at=1100, now=1050), "within its time: a replay"
    assert memory.first_time("x", expires_at=1300, now=1200) and len(memory) == 2, "early left at 1100"
    assert memory.first_time("early", expires_at=1400, now=1200), "forgotten: it would fail the check now"
    memory.first_time("y", expires_at=3000, now=2500)
    assert len(memory) == 1, "late, x and early left by time although late came first"
    with pytest.raises(ValueError):
        memory.first_time("forever", expires_at=float("inf"), now=2500)


def test_a_full_memory_drops_the_entry_that_expires_first_and_refuses_no_valid_click():
    memory = ReplayMemory(max_entries=3)
    for i, expiry in enumerate([1300, 1100, 1200]):
        assert memory.first_time(f"k{i}", expiry, now=1000)
    assert memory.first_time("k3", 1300, now=1000), "full: still accepted"
    assert len(memory) == 3 and memory.dropped_early == 1
    assert memory.first_time("k1", 1100, now=1000), "the one that expired first was dropped"
    assert not memory.first_time("k3", 1300, now=1000), "the newest are kept: a replay of them is refused"


def test_slack_signatures_are_kept_as_long_as_the_signature_check_would_pass():
    replays = SlackReplays()
    assert replays.first_time(Signed(1000, "v0=aa"), now=1000)
    for now in (1299, 1300, 1300.9, 1301):  # the check compares int(now): 1300.9 still passes it
        assert not replays.first_time(Signed(1000, "v0=aa"), now=now), now
    assert replays.first_time(Signed(1000, "v0=aa"), now=1302), "by now the signature check refuses it"
