"""Slack interactions with a missing, wrong or stale signature, through the real endpoint
(POST /api/slack/interactions on the real app over a service with a firing alert): always 401, and
nothing changes in the database: no acknowledgement, no silence, no notification queued."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from alerts.clock import ManualClock
from alerts.notifiers.slack.interactions import (
    ACK,
    SILENCE_1H,
    SILENCE_4H,
    encode_button_value,
    signature_for,
)
from monitor.settings import Settings
from monitor.storage.models import Alert, AlertGroup, Notification, Silence
from monitor.web.app import create_app
from tests.helpers import make_service, tick
from tests.test_slack_interactions import ROOT_REF, SECRET, body_of, click, signed

URL = "/api/slack/interactions"
FORM = {"content-type": "application/x-www-form-urlencoded"}


def _stalled_service(db_url: str, clock: ManualClock):
    """A service whose hero-a run has a firing progress_stalled alert, and a client on its app."""
    service, _ = make_service(db_url, clock)
    service.settings = Settings(database_url=db_url)
    service.engine.resume()
    tick(service, clock, 30 * 60)
    with service.sessions.begin() as s:
        alert = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).one()
        assert alert.state == "firing"
        alert_id = alert.id
        group = s.scalars(select(AlertGroup)).one()
        group.root_ref = ROOT_REF  # as if posted to Slack (the buttons are on that message)
        group_key = group.group_key
    client = TestClient(create_app(service), base_url="http://localhost", raise_server_exceptions=False)
    return service, client, group_key, alert_id


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One SQLite-backed service for the many refused requests (a refused request changes nothing, and
    each test checks exactly that); the control test below runs on both databases."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLACK_SIGNING_SECRET", SECRET)
        clock = ManualClock(1_780_000_000.0)
        url = f"sqlite:///{tmp_path_factory.mktemp('slack') / 'herowatch.db'}"
        service, client, group_key, alert_id = _stalled_service(url, clock)
        yield service, client, group_key, alert_id, clock
        service.stop()


@pytest.fixture
def stalled(db_url, clock, monkeypatch):
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    service, client, group_key, alert_id = _stalled_service(db_url, clock)
    yield service, client, group_key, alert_id
    service.stop()


def snapshot(service) -> tuple:
    with service.sessions() as s:
        alerts = [(a.id, a.state, a.acked_by, a.acked_at, a.silenced_by) for a in s.scalars(select(Alert))]
        silences = s.scalar(select(func.count()).select_from(Silence))
        notifications = sorted((n.idempotency_key, n.status) for n in s.scalars(select(Notification)))
    return alerts, silences, notifications


def refused(client, body: bytes, headers: dict[str, str]) -> None:
    r = client.post(URL, content=body, headers=headers)
    assert r.status_code == 401, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json")
    assert "signature" in r.text.lower()


def _cases(group_key: str, alert_id: int, now: float) -> dict[str, tuple[bytes, dict[str, str]]]:
    body = body_of(click(ACK, encode_button_value(group_key, [alert_id])))
    silence = body_of(click(SILENCE_4H, encode_button_value(group_key, [alert_id])))
    good = signed(body, ts=now)
    ts = good["X-Slack-Request-Timestamp"]

    def only(**h: str) -> dict[str, str]:
        return {**FORM, **h}

    return {
        "no signature headers": (body, dict(FORM)),
        "timestamp only": (body, only(**{"X-Slack-Request-Timestamp": ts})),
        "signature only": (body, only(**{"X-Slack-Signature": good["X-Slack-Signature"]})),
        "empty signature": (body, {**good, "X-Slack-Signature": ""}),
        "all-zero signature": (body, {**good, "X-Slack-Signature": "v0=" + "0" * 64}),
        "signed with another secret": (body, signed(body, ts=now, secret="not-the-secret")),
        "signature of another body": (
            body,
            {**good, "X-Slack-Signature": signed(silence, ts=now)["X-Slack-Signature"]},
        ),
        "silence body, ack signature": (silence, good),
        "tampered body": (body.replace(b"U0ALICE", b"U0MALLORY"), good),
        "body with a byte appended": (body + b"&x=1", good),
        "v1 scheme": (body, {**good, "X-Slack-Signature": "v1=" + good["X-Slack-Signature"][3:]}),
        "uppercase hex": (body, {**good, "X-Slack-Signature": "v0=" + good["X-Slack-Signature"][3:].upper()}),
        "truncated signature": (body, {**good, "X-Slack-Signature": good["X-Slack-Signature"][:-1]}),
        "signature with whitespace": (body, {**good, "X-Slack-Signature": " " + good["X-Slack-Signature"]}),
        "stale by 301 s": (body, signed(body, ts=now - 301)),
        "from the future by 301 s": (body, signed(body, ts=now + 301)),
        "a day old": (body, signed(body, ts=now - 86400)),
        "timestamp 0": (body, signed(body, ts=0)),
        "timestamp negative": (
            body,
            {
                **FORM,
                "X-Slack-Request-Timestamp": "-1",
                "X-Slack-Signature": signature_for(SECRET, "-1", body),
            },
        ),
        "timestamp not a number": (body, {**good, "X-Slack-Request-Timestamp": "yesterday"}),
        "timestamp a float": (
            body,
            {
                **FORM,
                "X-Slack-Request-Timestamp": f"{now}",
                "X-Slack-Signature": signature_for(SECRET, f"{now}", body),
            },
        ),
        "timestamp 1e9 style": (body, {**good, "X-Slack-Request-Timestamp": "1.78e9"}),
        "timestamp with 400 digits": (
            body,
            {
                **FORM,
                "X-Slack-Request-Timestamp": "9" * 400,
                "X-Slack-Signature": signature_for(SECRET, "9" * 400, body),
            },
        ),
        "timestamp of the right time, signed for another": (
            body,
            {**good, "X-Slack-Request-Timestamp": str(int(now) + 1)},
        ),
        "not UTF-8 body": (
            b"payload=\xff\xfe",
            {**FORM, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + "a" * 64},
        ),
        "empty body": (b"", {**good}),
    }


CASE_NAMES = list(_cases("g", 1, 1_780_000_000.0))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_a_bad_or_stale_signature_is_401_and_changes_nothing(shared, case):
    service, client, group_key, alert_id, clock = shared
    before = snapshot(service)
    body, headers = _cases(group_key, alert_id, clock.time())[case]
    refused(client, body, headers)
    assert snapshot(service) == before


def test_all_bad_requests_in_a_row_change_nothing_and_a_good_one_still_works(stalled, clock):
    """The control: the same service does change on a correctly signed click (so the checks above can
    fail), and a flood of bad ones first changes nothing."""
    service, client, group_key, alert_id = stalled
    before = snapshot(service)
    for body, headers in _cases(group_key, alert_id, clock.time()).values():
        client.post(URL, content=body, headers=headers)
    assert snapshot(service) == before
    body = body_of(click(SILENCE_1H, encode_button_value(group_key, [alert_id])))
    r = client.post(URL, content=body, headers=signed(body, ts=clock.time()))
    assert r.status_code == 200, r.text
    assert snapshot(service) != before


header_value = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80),
    st.from_regex(r"v0=[0-9a-f]{64}", fullmatch=True),
    st.integers(-(10**20), 10**20).map(str),
)


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ts=st.one_of(st.none(), header_value),
    sig=st.one_of(st.none(), header_value),
    extra=st.dictionaries(st.sampled_from(["payload", "token", "x"]), st.text(max_size=30), max_size=2),
)
def test_random_signature_headers_are_refused(shared, ts, sig, extra):
    service, client, group_key, alert_id, _ = shared
    before = snapshot(service)
    body = body_of(click(ACK, encode_button_value(group_key, [alert_id]))) + (
        b"&" + urlencode(extra).encode() if extra else b""
    )
    headers = dict(FORM)
    if ts is not None:
        headers["X-Slack-Request-Timestamp"] = ts
    if sig is not None:
        headers["X-Slack-Signature"] = sig
    refused(client, body, headers)
    assert snapshot(service) == before
