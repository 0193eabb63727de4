"""The Slack notifier's error classes: rate limits (with Retry-After, honoured by the outbox), 5xx,
timeouts and refused connections are transient; a bad token or channel and Slack's permanent codes are
not."""

from __future__ import annotations

import time

import pytest

from alerts.outbox import ClaimedNotification, Dispatcher
from alerts.views import GroupView
from tests.slack_notifier.support import CH, T0, make, note


def test_429_is_transient_with_retry_after_and_not_retried_in_the_client(slack, notifier):
    slack.rate_limit(retry_after=7, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry, result.retry_after) == (False, True, 7.0)
    assert "rate limited" in result.error
    assert len(slack.calls_to("chat.postMessage")) == 1 and slack.roots(CH) == []
    assert notifier.send(note("n-open")).ok  # the outbox's retry
    assert len(slack.roots(CH)) == 1


class _OneRowStore:
    def __init__(self, n: GroupView) -> None:
        self.rows = [ClaimedNotification(1, 0, n)]
        self.outcome: tuple | None = None

    def claim_due(self, now, limit, worker, lease_seconds):
        rows, self.rows = self.rows, []
        return rows

    def mark_sent(self, id, now, ref):
        self.outcome = ("sent", ref)

    def mark_retry(self, id, now, next_attempt_at, error):
        self.outcome = ("retry", next_attempt_at - now, error)

    def mark_failed(self, id, now, error):
        self.outcome = ("failed", error)


def test_the_outbox_waits_as_long_as_slack_said(slack, notifier):
    slack.rate_limit(retry_after=42, methods=["chat.postMessage"])
    store = _OneRowStore(note("n-open"))
    Dispatcher(store, {"slack": notifier}, clock=lambda: T0).run_once()
    assert store.outcome[:2] == ("retry", 42.0)


def test_5xx_is_transient(slack, notifier):
    slack.fail(503, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry, result.retry_after) == (False, True, None)
    assert "HTTP 503" in result.error


def test_a_timeout_is_transient_and_not_retried_in_the_client(slack):
    notifier = make(slack, timeout=1.0)
    slack.slow(4.0, methods=["chat.postMessage"])
    started = time.monotonic()
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry) == (False, True)
    assert "timed out" in result.error.lower()
    assert time.monotonic() - started < 1.9  # one attempt: an in-client retry would take 2 timeouts
    assert len(slack.calls_to("chat.postMessage")) == 1


def test_a_connection_refused_is_transient(slack):
    notifier = make(slack, timeout=0.5)
    slack.stop()
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry) == (False, True)


def test_an_invalid_token_is_permanent_and_the_error_says_why(slack):
    secret = "xoxb-test-wrong-9999"
    result = make(slack, token=secret).send(note("n-open"))
    assert (result.ok, result.retry) == (False, False)
    assert "invalid_auth" in result.error and "SLACK_BOT_TOKEN" in result.error
    assert secret not in result.error
    assert slack.roots(CH) == []


def test_an_unknown_channel_is_permanent(slack):
    result = make(slack, channel="C0NOSUCH").send(note("n-open"))
    assert (result.ok, result.retry) == (False, False)
    assert "channel_not_found" in result.error and "C0NOSUCH" in result.error


@pytest.mark.parametrize(
    "code, permanent",
    [
        ("not_in_channel", True),
        ("account_inactive", True),
        ("token_revoked", True),
        ("is_archived", True),
        ("channel_not_found", True),
        ("internal_error", False),
        ("fatal_error", False),
        ("some_code_slack_adds_next_year", False),
    ],
)
def test_slack_error_codes_are_classified(slack, notifier, code, permanent):
    slack.error(code, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert result.ok is False and result.retry is (not permanent)
    assert code in result.error
