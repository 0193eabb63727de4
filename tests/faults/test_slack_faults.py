"""Slack misbehaving under a running Service + Dispatcher with a ``slack`` receiver: a 429 storm with
Retry-After, 500s, timeouts (before and after Slack took the post), an invalid token. Every notification
ends up in the channel exactly once, or is recorded as failed with its error; none is lost silently."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.storage.models import Notification
from tests.faults.support import cycle, deliver, notifications, service_for
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

T0 = 1_780_000_000.0


def config(api_url: str) -> str:
    return f"""
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      incidents:
        - {{kind: stall, at: 10m, duration: 30m}}
rules: {{packs: [hero]}}
receivers:
  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{api_url}', timeout: 2s, plots: false}}
route: {{receiver: oncall, group_wait: 0s}}
"""


@pytest.fixture
def slack():
    with SlackStandin(channels=["C0ALERTS"]) as s:
        yield s


def build(slack: SlackStandin, db_url: str, token: str = DEFAULT_TOKEN):
    clock = ManualClock(T0)
    service, _ = service_for(config(slack.api_url), db_url, clock, console=False, SLACK_BOT_TOKEN=token)
    return service, clock


def run_for(service, clock: ManualClock, minutes: int) -> None:
    for _ in range(minutes):
        clock.advance(60)
        cycle(service)


def rows(service) -> list[Notification]:
    with service.sessions() as s:
        return list(s.scalars(select(Notification).order_by(Notification.id)))


def channel_keys(slack: SlackStandin) -> Counter:
    """Idempotency keys of every message in the channel, roots and thread replies."""
    keys: Counter = Counter()
    for root in slack.roots("C0ALERTS"):
        for m in [root, *slack.thread("C0ALERTS", root.ts)]:
            keys[((m.metadata or {}).get("event_payload") or {}).get("key")] += 1
    return keys


def assert_delivered_exactly_once(service, slack: SlackStandin) -> None:
    got = rows(service)
    assert got, "the stall must have produced notifications"
    assert {r.status for r in got} <= {"sent", "merged"}, [
        (r.idempotency_key, r.status, r.last_error) for r in got
    ]
    sent = [r.idempotency_key for r in got if r.status == "sent"]
    keys = channel_keys(slack)
    assert keys == Counter(sent), (keys, sent)  # each in the channel, once
    changes = Counter((rule, status) for rule, _, status, _ in notifications(service))
    assert changes == Counter({("progress_stalled", "firing"): 1, ("progress_stalled", "resolved"): 1})


def test_429_storm_honours_retry_after(slack: SlackStandin, db_url: str) -> None:
    service, clock = build(slack, db_url)
    try:
        slack.rate_limit(retry_after=90, times=-1, methods=["chat.postMessage"])
        run_for(service, clock, 30)  # the stall fires (~25 min) while Slack says 429 to every post
        (row,) = rows(service)
        assert (
            row.status == "pending"
            and row.attempts >= 1
            and "429" in (row.last_error or "")
            or "rate" in (row.last_error or "").lower()
        ), row.last_error
        assert row.next_attempt_at >= clock.time() + 30, "Retry-After (90 s) is honoured"
        calls = len(slack.calls_to("chat.postMessage"))
        deliver(service)  # not due yet: no new post attempt
        assert len(slack.calls_to("chat.postMessage")) == calls
        assert slack.roots("C0ALERTS") == []
        slack.clear_faults()
        run_for(service, clock, 30)  # the storm is over; the stall resolves too
        assert_delivered_exactly_once(service, slack)
    finally:
        service.stop()


def test_500s_are_retried(slack: SlackStandin, sqlite_url: str) -> None:
    service, clock = build(slack, sqlite_url)
    try:
        slack.fail(500, times=5, methods=["chat.postMessage"])
        run_for(service, clock, 60)
        assert_delivered_exactly_once(service, slack)
        assert any(r.attempts > 1 for r in rows(service)), "the 500s must have cost attempts"
    finally:
        service.stop()


@pytest.mark.parametrize("after_effect", [False, True], ids=["before-post", "answer-lost"])
def test_timeouts_never_post_twice(slack: SlackStandin, sqlite_url: str, after_effect: bool) -> None:
    service, clock = build(slack, sqlite_url)
    try:
        slack.slow(4.0, times=2, methods=["chat.postMessage"], after_effect=after_effect)
        run_for(service, clock, 60)
        assert_delivered_exactly_once(service, slack)
        # both posts timed out; when Slack had taken them, the retry finds them instead of posting again
        assert len(slack.calls_to("chat.postMessage")) == (2 if after_effect else 3)
    finally:
        service.stop()


def test_invalid_token_is_recorded_as_failed(slack: SlackStandin, sqlite_url: str) -> None:
    service, clock = build(slack, sqlite_url, token="xoxb-not-the-right-token-1234")
    try:
        run_for(service, clock, 60)
        got = rows(service)
        assert len(got) == 2, [(r.idempotency_key, r.status) for r in got]  # firing and resolved
        firing, resolved = got
        assert firing.status == "failed", (firing.idempotency_key, firing.status, firing.last_error)
        assert firing.last_error and "token" in firing.last_error, firing.last_error
        assert "xoxb-not-the-right-token" not in firing.last_error
        assert resolved.status == "dropped", "the resolution of an alert never announced is not sent"
        assert service.outbox.failed() == 1 and service.outbox.backlog() == 0
        assert slack.roots("C0ALERTS") == []
    finally:
        service.stop()
