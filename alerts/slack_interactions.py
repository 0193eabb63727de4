"""Slack button clicks on herowatch's alert messages: signature check and parsing.

Slack POSTs a form body ``payload=<json>`` to the app's interactivity URL, signed with the app's
signing secret: ``x-slack-signature = "v0=" + hex(HMAC-SHA256(secret, "v0:{ts}:{raw body}"))`` with
``ts`` = ``x-slack-request-timestamp``. :func:`verify_and_parse` checks that (against ``now``, passed
in: this module never reads the clock), rejects timestamps more than five minutes off, and turns the
payload into an :class:`Interaction`. The HTTP endpoint maps :class:`BadSignature` to 401 and
:class:`BadPayload` to 400.

The buttons themselves (action ids and the JSON in their ``value``) are defined here too, so the
message renderer (``alerts.notifiers.slack_blocks``) and this parser cannot drift apart.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

MAX_AGE_SECONDS = 5 * 60

ACK = "herowatch_ack"
SILENCE_1H = "herowatch_silence_1h"
SILENCE_4H = "herowatch_silence_4h"

# action_id -> (action, silence duration in seconds)
BUTTONS: dict[str, tuple[str, float | None]] = {
    ACK: ("ack", None),
    SILENCE_1H: ("silence", 3600.0),
    SILENCE_4H: ("silence", 4 * 3600.0),
}

_MAX_VALUE_CHARS = 2000  # Slack's limit for a button's value


class InteractionError(ValueError):
    """A request to the interactivity endpoint that herowatch will not act on."""


class BadSignature(InteractionError):
    """Missing, malformed, wrong or stale signature: not provably from Slack (answer 401)."""


class BadPayload(InteractionError):
    """Signed by Slack but not a herowatch button click herowatch understands (answer 400)."""


@dataclass(frozen=True)
class Interaction:
    action: str  # "ack" | "silence"
    action_id: str
    duration: float | None  # seconds, for a silence
    group_key: str
    alert_ids: tuple[str, ...]
    user_id: str
    user_name: str
    response_url: str | None
    channel_id: str | None
    message_ts: str | None  # the root message the button sits on
    team_id: str | None = None
    action_ts: str | None = None


# ---- the buttons' value ---------------------------------------------------------------------------------
def encode_button_value(group_key: str, alert_ids: Sequence[Any] = ()) -> str:
    """The JSON a button carries: the group key, and the alert ids while they fit Slack's 2000 chars."""
    ids = [str(a) for a in alert_ids]
    while True:
        value = json.dumps({"group_key": group_key, "alert_ids": ids}, separators=(",", ":"))
        if len(value) <= _MAX_VALUE_CHARS or not ids:
            return value
        ids = ids[: len(ids) // 2]  # the group key alone identifies the group; ids are a convenience


def decode_button_value(value: str) -> tuple[str, tuple[str, ...]]:
    try:
        data = json.loads(value)
        group_key = data["group_key"]
        ids = data.get("alert_ids") or []
    except (ValueError, TypeError, KeyError) as exc:
        raise BadPayload(f"button value is not herowatch's JSON: {exc}") from None
    if not isinstance(group_key, str) or not group_key or not isinstance(ids, list):
        raise BadPayload("button value has no group_key")
    return group_key, tuple(str(a) for a in ids)


# ---- signature ------------------------------------------------------------------------------------------
def signature_for(signing_secret: str, timestamp: str, raw_body: bytes | str) -> str:
    """What Slack puts in ``x-slack-signature`` (same as ``slack_sdk.signature.SignatureVerifier``)."""
    body = raw_body.decode("utf-8") if isinstance(raw_body, bytes) else raw_body
    digest = hmac.new(signing_secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return "v0=" + digest.hexdigest()


def verify_signature(headers: Mapping[str, str], raw_body: bytes, signing_secret: str, now: float) -> None:
    """Raise :class:`BadSignature` unless the request is signed with ``signing_secret`` within 5 minutes of
    ``now``. Pure: the time is passed in."""
    if not signing_secret:
        raise BadSignature("no Slack signing secret is configured")
    lower = {str(k).lower(): v for k, v in headers.items()}
    timestamp = lower.get("x-slack-request-timestamp")
    signature = lower.get("x-slack-signature")
    if not timestamp or not signature:
        raise BadSignature("missing x-slack-request-timestamp or x-slack-signature header")
    try:
        ts = int(timestamp)
    except ValueError:
        raise BadSignature("x-slack-request-timestamp is not an integer") from None
    if abs(int(now) - ts) > MAX_AGE_SECONDS:
        raise BadSignature(f"request timestamp is more than {MAX_AGE_SECONDS}s off: replayed?")
    try:
        expected = signature_for(signing_secret, timestamp, raw_body)
    except UnicodeDecodeError:
        raise BadSignature("request body is not UTF-8") from None
    if not hmac.compare_digest(expected.encode(), str(signature).encode()):
        raise BadSignature("x-slack-signature does not match the body")


# ---- payload --------------------------------------------------------------------------------------------
def parse_payload(raw_body: bytes) -> Interaction:
    """The herowatch button click in a (verified) ``payload=<json>`` form body."""
    try:
        form = parse_qs(raw_body.decode("utf-8"), strict_parsing=False)
        payload = json.loads(form["payload"][0])
    except (UnicodeDecodeError, KeyError, IndexError, ValueError) as exc:
        raise BadPayload(f"body is not a form with a JSON payload field: {type(exc).__name__}") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        kind = payload.get("type") if isinstance(payload, dict) else type(payload).__name__
        raise BadPayload(f"unsupported interaction type {kind!r}")
    actions = payload.get("actions") or []
    ours = [a for a in actions if isinstance(a, dict) and a.get("action_id") in BUTTONS]
    if not ours:
        ids = [a.get("action_id") for a in actions if isinstance(a, dict)]
        raise BadPayload(f"no herowatch action in {ids}")
    clicked = ours[0]
    action, duration = BUTTONS[clicked["action_id"]]
    group_key, alert_ids = decode_button_value(clicked.get("value") or "")
    user = payload.get("user") or {}
    channel = payload.get("channel") or {}
    container = payload.get("container") or {}
    message = payload.get("message") or {}
    if not user.get("id"):
        raise BadPayload("payload has no user id")
    return Interaction(
        action=action,
        action_id=clicked["action_id"],
        duration=duration,
        group_key=group_key,
        alert_ids=alert_ids,
        user_id=user["id"],
        user_name=user.get("username") or user.get("name") or user["id"],
        response_url=payload.get("response_url"),
        channel_id=channel.get("id") or container.get("channel_id"),
        message_ts=container.get("message_ts") or message.get("ts"),
        team_id=(payload.get("team") or {}).get("id"),
        action_ts=clicked.get("action_ts"),
    )


def verify_and_parse(
    headers: Mapping[str, str], raw_body: bytes, signing_secret: str, now: float
) -> Interaction:
    """Check the signature (raises :class:`BadSignature` -> 401), then parse (:class:`BadPayload` -> 400)."""
    verify_signature(headers, raw_body, signing_secret, now)
    return parse_payload(raw_body)
