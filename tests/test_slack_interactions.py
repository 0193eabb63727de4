"""Slack button clicks (alerts/notifiers/slack/interactions.py): signature check against slack-sdk's own
signer, stale and missing headers rejected, payloads parsed, and the buttons the renderer makes parse back."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from slack_sdk.signature import SignatureVerifier

from alerts.notifiers.slack.blocks import root_message
from alerts.notifiers.slack.interactions import (
    ACK,
    SILENCE_1H,
    SILENCE_4H,
    BadPayload,
    BadSignature,
    Interaction,
    encode_button_value,
    signature_for,
    verify_and_parse,
)
from tests.views_support import alert, group  # noqa: E402

SECRET = "test-signing-secret-0000"  # a fake: tests never hold real secrets
NOW = 1_780_000_000.0
ROOT_REF = "C0ALERTS:1780000000.000100"  # the message click() is on, as the Slack notifier records it
VALUE = encode_button_value("slack:0123456789abcdef", [7, 8])


def click(action_id: str = ACK, value: str = VALUE, **over) -> dict:
    """A block_actions payload as Slack sends it for a button on a channel message."""
    payload = {
        "type": "block_actions",
        "user": {"id": "U0ALICE", "username": "alice", "name": "alice", "team_id": "T0HERO"},
        "api_app_id": "A0HEROWATCH",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": "1780000000.000100",
            "channel_id": "C0ALERTS",
            "is_ephemeral": False,
        },
        "trigger_id": "123.456.abc",
        "team": {"id": "T0HERO", "domain": "herowatch-test"},
        "channel": {"id": "C0ALERTS", "name": "alerts"},
        "message": {"type": "message", "ts": "1780000000.000100", "text": "CRITICAL: LossSpike"},
        "response_url": "https://hooks.slack.example/actions/T0HERO/1/abc",
        "actions": [
            {
                "action_id": action_id,
                "block_id": "herowatch_actions",
                "value": value,
                "type": "button",
                "text": {"type": "plain_text", "text": "Acknowledge"},
                "action_ts": "1780000001.000200",
            }
        ],
    }
    payload.update(over)
    return payload


def body_of(payload: dict) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def signed(body: bytes, ts: float = NOW, secret: str = SECRET) -> dict[str, str]:
    """Headers as Slack sends them, signed by slack-sdk's own SignatureVerifier (an independent oracle)."""
    sig = SignatureVerifier(secret).generate_signature(timestamp=str(int(ts)), body=body)
    return {
        "X-Slack-Request-Timestamp": str(int(ts)),
        "X-Slack-Signature": sig,
        "Content-Type": "application/x-www-form-urlencoded",
    }


# ---- good requests --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action_id, action, duration",
    [(ACK, "ack", None), (SILENCE_1H, "silence", 3600.0), (SILENCE_4H, "silence", 14400.0)],
)
def test_a_signed_click_is_parsed(action_id, action, duration):
    body = body_of(click(action_id))
    got = verify_and_parse(signed(body), body, SECRET, now=NOW + 10)
    assert got == Interaction(
        action=action,
        action_id=action_id,
        duration=duration,
        group_key="slack:0123456789abcdef",
        alert_ids=("7", "8"),
        user_id="U0ALICE",
        user_name="alice",
        response_url="https://hooks.slack.example/actions/T0HERO/1/abc",
        channel_id="C0ALERTS",
        message_ts="1780000000.000100",
        team_id="T0HERO",
        action_ts="1780000001.000200",
        trigger_id="123.456.abc",
    )


def test_header_names_are_case_insensitive_and_five_minutes_is_still_fresh():
    body = body_of(click())
    headers = {k.lower(): v for k, v in signed(body).items()}
    assert verify_and_parse(headers, body, SECRET, now=NOW + 300).action == "ack"
    assert verify_and_parse(headers, body, SECRET, now=NOW - 300).action == "ack"


def test_our_signature_matches_slack_sdk():
    for ts, body in [("1780000000", b"payload=%7B%7D"), ("1", "é=ü&x=<>"), ("42", b"")]:
        assert signature_for(SECRET, ts, body) == SignatureVerifier(SECRET).generate_signature(
            timestamp=ts, body=body
        )


def test_the_buttons_the_renderer_makes_parse_back():
    view = group(
        alert(7, "LossSpike", summary="loss up"),
        alert(8, "GradNormHigh", severity="warning", summary="grad norm up"),
        group_key="slack:feedc0ffee",
    )
    actions = [b for b in root_message(view).blocks if b["type"] == "actions"][0]
    seen = {}
    for button in actions["elements"]:
        body = body_of(click(button["action_id"], button["value"]))
        got = verify_and_parse(signed(body), body, SECRET, now=NOW)
        seen[button["action_id"]] = (got.action, got.duration, got.group_key, got.alert_ids)
    assert seen == {
        ACK: ("ack", None, "slack:feedc0ffee", ("7", "8")),
        SILENCE_1H: ("silence", 3600.0, "slack:feedc0ffee", ("7", "8")),
        SILENCE_4H: ("silence", 14400.0, "slack:feedc0ffee", ("7", "8")),
    }


def test_a_huge_group_still_fits_in_a_button_value():
    value = encode_button_value("slack:abc", list(range(100_000, 101_000)))
    assert len(value) <= 2000
    assert json.loads(value)["group_key"] == "slack:abc"


# ---- bad signatures: 401 ---------------------------------------------------------------------------
def test_a_wrong_secret_is_rejected():
    body = body_of(click())
    with pytest.raises(BadSignature, match="does not match"):
        verify_and_parse(signed(body, secret="some-other-secret"), body, SECRET, now=NOW)


def test_a_tampered_body_is_rejected():
    body = body_of(click(SILENCE_1H))
    tampered = body_of(click(SILENCE_4H))
    with pytest.raises(BadSignature):
        verify_and_parse(signed(body), tampered, SECRET, now=NOW)


@pytest.mark.parametrize("drop", ["X-Slack-Request-Timestamp", "X-Slack-Signature"])
def test_missing_headers_are_rejected(drop):
    body = body_of(click())
    headers = signed(body)
    del headers[drop]
    with pytest.raises(BadSignature, match="missing"):
        verify_and_parse(headers, body, SECRET, now=NOW)


@pytest.mark.parametrize("now", [NOW + 301, NOW - 301, NOW + 86400])
def test_stale_or_future_timestamps_are_rejected_even_when_correctly_signed(now):
    body = body_of(click())
    with pytest.raises(BadSignature, match="off"):
        verify_and_parse(signed(body), body, SECRET, now=now)


def test_a_non_numeric_timestamp_and_a_missing_secret_are_rejected():
    body = body_of(click())
    headers = signed(body)
    headers["X-Slack-Request-Timestamp"] = "soon"
    with pytest.raises(BadSignature, match="integer"):
        verify_and_parse(headers, body, SECRET, now=NOW)
    with pytest.raises(BadSignature, match="signing secret"):
        verify_and_parse(signed(body), body, "", now=NOW)


def test_the_signature_is_checked_before_the_payload_is_read():
    body = b"this is not a form"
    headers = signed(body, secret="wrong")
    with pytest.raises(BadSignature):
        verify_and_parse(headers, body, SECRET, now=NOW)


# ---- signed but not for us: 400 ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        b"not a form at all",
        urlencode({"payload": "{not json"}).encode(),
        body_of(click(type="view_submission")),
        body_of(click(action_id="someone_elses_button")),
        body_of(click(value="not json")),
        body_of(click(value=json.dumps({"alert_ids": [1]}))),
        body_of(click(user={})),
    ],
    ids=["no-form", "bad-json", "view-submission", "unknown-action", "bad-value", "no-group-key", "no-user"],
)
def test_signed_but_unusable_payloads_are_bad_payloads_not_bad_signatures(body):
    with pytest.raises(BadPayload) as info:
        verify_and_parse(signed(body), body, SECRET, now=NOW)
    assert not isinstance(info.value, BadSignature)
