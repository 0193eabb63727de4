"""Slack button clicks on herowatch's alert messages, and slash commands: signature check and parsing.

Slack POSTs a form body ``payload=<json>`` to the app's interactivity URL, signed with the app's
signing secret: ``x-slack-signature = "v0=" + hex(HMAC-SHA256(secret, "v0:{ts}:{raw body}"))`` with
``ts`` = ``x-slack-request-timestamp``. :func:`verify_and_parse` checks that with slack-sdk's
``SignatureVerifier`` (against ``now``, passed in: this module never reads the clock), rejects
timestamps more than five minutes off, and turns the payload into an :class:`Interaction`, refusing any
payload that is not exactly a herowatch button click. A request with either header twice is refused
before anything else: which of the two would count is exactly what a replay with an extra junk header
plays on. The HTTP endpoint maps :class:`AmbiguousRequest` and :class:`BadPayload` to 400 and
:class:`BadSignature` to 401; it also refuses replays (keyed on the :class:`Signed` signature that was
verified), other workspaces and other messages (monitor/web/api/slack.py).

The buttons themselves (action ids and the JSON in their ``value``) are defined here too, so the
message renderer (``alerts.notifiers.slack.blocks``) and this parser cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import ItemsView, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

from alerts.text import bad_character, one_line

MAX_AGE_SECONDS = 5 * 60

ACK = "herowatch_ack"
SILENCE_1H = "herowatch_silence_1h"
SILENCE_4H = "herowatch_silence_4h"
STACKS = "herowatch_stacks"  # capture the run's stacks now (a hang of a run with ``emit run`` wrappers)

# action_id -> (action, silence duration in seconds)
BUTTONS: dict[str, tuple[str, float | None]] = {
    ACK: ("ack", None),
    SILENCE_1H: ("silence", 3600.0),
    SILENCE_4H: ("silence", 4 * 3600.0),
    STACKS: ("stacks", None),
}

_MAX_VALUE_CHARS = 2000  # Slack's limit for a button's value


class InteractionError(ValueError):
    """A request to the interactivity endpoint that herowatch will not act on."""


class BadSignature(InteractionError):
    """Missing, malformed, wrong or stale signature: not provably from Slack (answer 401)."""


class BadPayload(InteractionError):
    """Signed by Slack but not a herowatch button click herowatch understands (answer 400)."""


class AmbiguousRequest(InteractionError):
    """A signature or timestamp header sent more than once: not a request Slack makes (answer 400)."""


TIMESTAMP_HEADER = "x-slack-request-timestamp"
SIGNATURE_HEADER = "x-slack-signature"


@dataclass(frozen=True)
class Signed:
    """What the signature check verified: the request's timestamp and signature, one of each."""

    timestamp: int  # epoch seconds, within MAX_AGE_SECONDS of the time it was checked at
    signature: str


@dataclass(frozen=True)
class Interaction:
    action: str  # "ack" | "silence" | "stacks"
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
    trigger_id: str | None = None  # Slack's id of this one click: the same in every re-delivery of it

    @property
    def actor(self) -> str:
        """Who clicked, as on-call actions record it (:func:`slack_actor`)."""
        return slack_actor(self.user_id, self.user_name)


_MARKUP = str.maketrans("", "", "<>&")


def slack_actor(user_id: str, name: str | None) -> str:
    """How a Slack user is named on the timeline, the alert and the Slack message: ``amy (Slack U0AMY)``,
    readable anywhere, with the workspace's stable user id (a name can change; the id names one person).
    ``alerts.notifiers.slack.blocks`` renders it in Slack as a mention of that user."""
    # Slack's markup is <...> (``<!channel>`` notifies a whole channel) and &-entities: a user name is
    # text, so it holds none of them, here where it enters (stored as the acknowledger, echoed in replies)
    shown = one_line((name or "").translate(_MARKUP), 100).strip()
    if not shown or shown == user_id:
        return f"Slack {user_id}"
    return f"{shown} (Slack {user_id})"


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
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise BadPayload(f"button value is not herowatch's JSON: {type(exc).__name__}") from None
    if not isinstance(group_key, str) or not group_key or not isinstance(ids, list):
        raise BadPayload("button value has no group_key")
    return group_key, tuple(str(a)[:20] for a in ids[:500])


# ---- signature ------------------------------------------------------------------------------------------
class _At:
    """slack-sdk's Clock, at the time we were given (this module never reads the clock itself)."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def signature_for(signing_secret: str, timestamp: str, raw_body: bytes | str) -> str:
    """What Slack puts in ``x-slack-signature`` (``slack_sdk.signature.SignatureVerifier``'s own)."""
    return SignatureVerifier(signing_secret).generate_signature(timestamp=timestamp, body=raw_body) or ""


def _only(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if str(k).lower() == name]
    if len(values) > 1:
        raise AmbiguousRequest(f"{name} sent {len(values)} times: Slack sends it once")
    return values[0] if values else None


def verify_signature(
    headers: Mapping[str, str] | ItemsView[str, str] | Sequence[tuple[str, str]],
    raw_body: bytes,
    signing_secret: str,
    now: float,
) -> Signed:
    """What was verified, or :class:`AmbiguousRequest` (a header twice) or :class:`BadSignature` (not
    signed with ``signing_secret`` within 5 minutes of ``now``). ``headers``: a mapping, or every
    (name, value) pair of the request (duplicates included: a Starlette ``Headers.items()``). Pure: the
    time is passed in. The check itself is slack-sdk's ``SignatureVerifier`` (constant time comparison,
    Slack's own window); the steps before it only say clearly what is missing."""
    pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
    timestamp, signature = _only(pairs, TIMESTAMP_HEADER), _only(pairs, SIGNATURE_HEADER)
    if not signing_secret or not signing_secret.strip():
        raise BadSignature("no Slack signing secret is configured")
    if not timestamp or not signature:
        raise BadSignature("missing x-slack-request-timestamp or x-slack-signature header")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        raise BadSignature("x-slack-request-timestamp is not an integer number of seconds")
    if abs(int(now) - int(timestamp)) > MAX_AGE_SECONDS:
        raise BadSignature(f"request timestamp is more than {MAX_AGE_SECONDS}s off: replayed?")
    try:
        raw_body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadSignature("request body is not UTF-8") from None
    if not SignatureVerifier(signing_secret, clock=_At(now)).is_valid(raw_body, timestamp, str(signature)):
        raise BadSignature("x-slack-signature does not match the body")
    return Signed(int(timestamp), signature)


# ---- payload --------------------------------------------------------------------------------------------
def _obj(payload: dict[str, Any], key: str) -> dict[str, Any]:
    value = payload.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadPayload(f"{key} is not an object")
    return value


def _text(value: Any, what: str, limit: int = 200, required: bool = False) -> str | None:
    """A string field of the payload: a string, at most ``limit`` characters, plain text (no control
    characters, no lone surrogates: ``alerts.text``)."""
    if value is None or value == "":
        if required:
            raise BadPayload(f"payload has no {what}")
        return None
    if not isinstance(value, str):
        raise BadPayload(f"{what} is not a string")
    if len(value) > limit:
        raise BadPayload(f"{what} is longer than {limit} characters")
    if (bad := bad_character(value)) is not None:
        raise BadPayload(f"{what} holds {bad}")
    return value


def parse_form(raw_body: bytes) -> dict[str, str]:
    """A (verified) form body from Slack: each field's first value. Slack posts button clicks as
    ``payload=<json>`` and slash commands as their fields (``command``, ``text``, ...)."""
    try:
        form = parse_qs(raw_body.decode("utf-8"), strict_parsing=False, max_num_fields=40)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadPayload(f"body is not a form: {type(exc).__name__}") from None
    return {k: v[0] for k, v in form.items() if v}


def parse_payload(raw_body: bytes) -> Interaction:
    """The herowatch button click in a (verified) ``payload=<json>`` form body. Anything else, however
    odd (wrong types, deep nesting, huge strings), is a :class:`BadPayload`."""
    try:
        payload = json.loads(parse_form(raw_body)["payload"])
    except (KeyError, ValueError, RecursionError) as exc:
        raise BadPayload(f"body is not a form with a JSON payload field: {type(exc).__name__}") from None
    return parse_block_actions(payload)


def parse_block_actions(payload: Any) -> Interaction:
    """The herowatch button click in an interaction payload (the JSON Slack posts, or sends over Socket
    Mode in an ``interactive`` envelope). Anything else is a :class:`BadPayload`."""
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        kind = payload.get("type") if isinstance(payload, dict) else type(payload).__name__
        raise BadPayload(f"unsupported interaction type {str(kind)[:40]!r}")
    actions = payload.get("actions") or []
    if not isinstance(actions, list):
        raise BadPayload("actions is not a list")
    ours = [a for a in actions if isinstance(a, dict) and isinstance(a.get("action_id"), str)]
    ours = [a for a in ours if a["action_id"] in BUTTONS]
    if not ours:
        ids = [str(a.get("action_id"))[:40] for a in actions[:5] if isinstance(a, dict)]
        raise BadPayload(f"no herowatch action in {ids}")
    clicked = ours[0]
    action, duration = BUTTONS[clicked["action_id"]]
    value = clicked.get("value") or ""
    if not isinstance(value, str) or len(value) > _MAX_VALUE_CHARS:
        raise BadPayload("button value is not herowatch's")
    group_key, alert_ids = decode_button_value(value)
    _text(group_key, "group_key")
    user, channel = _obj(payload, "user"), _obj(payload, "channel")
    container, message, team = _obj(payload, "container"), _obj(payload, "message"), _obj(payload, "team")
    user_id = _text(user.get("id"), "user id", 64, required=True) or ""
    name = _text(user.get("username"), "user name") or _text(user.get("name"), "user name") or user_id
    return Interaction(
        action=action,
        action_id=clicked["action_id"],
        duration=duration,
        group_key=group_key,
        alert_ids=alert_ids,
        user_id=user_id,
        user_name=name,
        response_url=_text(payload.get("response_url"), "response_url", 2000),
        channel_id=_text(channel.get("id"), "channel", 64) or _text(container.get("channel_id"), "channel"),
        message_ts=_text(container.get("message_ts"), "ts", 64) or _text(message.get("ts"), "ts", 64),
        team_id=_text(team.get("id"), "team id", 64) or _text(user.get("team_id"), "team id", 64),
        action_ts=_text(clicked.get("action_ts"), "action_ts", 64),
        trigger_id=_text(payload.get("trigger_id"), "trigger_id", 128),
    )


# ---- slash commands --------------------------------------------------------------------------------------
MAX_COMMAND_TEXT = 2000  # what follows the command: far more than any herowatch command needs


@dataclass(frozen=True)
class SlashCommand:
    """A slash command as Slack sends it: posted as a form to the command's URL, or as the payload of a
    ``slash_commands`` envelope over Socket Mode (the same fields)."""

    command: str  # "/herowatch"
    text: str  # everything after the command
    user_id: str
    user_name: str
    team_id: str | None
    channel_id: str | None
    response_url: str | None  # where later answers go (30 minutes, 5 times)
    trigger_id: str | None  # Slack's id of this one invocation: the same in every re-delivery of it

    @property
    def actor(self) -> str:
        return slack_actor(self.user_id, self.user_name)


def parse_command(fields: Any) -> SlashCommand:
    """A slash command's fields (of a form, or of an envelope's payload); anything odd is a BadPayload."""
    if not isinstance(fields, Mapping):
        raise BadPayload("a slash command's payload is not an object")
    command = _text(fields.get("command"), "command", 64, required=True) or ""
    if not command.startswith("/"):
        raise BadPayload("command does not start with /")
    text = fields.get("text") or ""
    if not isinstance(text, str) or len(text) > MAX_COMMAND_TEXT:
        raise BadPayload(f"the command's text is not a string of at most {MAX_COMMAND_TEXT} characters")
    if (bad := bad_character(text)) is not None:
        raise BadPayload(f"the command's text holds {bad}")
    user_id = _text(fields.get("user_id"), "user id", 64, required=True) or ""
    return SlashCommand(
        command=command,
        text=" ".join(text.split()),  # newlines and tabs are spaces to a command line
        user_id=user_id,
        user_name=_text(fields.get("user_name"), "user name") or user_id,
        team_id=_text(fields.get("team_id"), "team id", 64),
        channel_id=_text(fields.get("channel_id"), "channel", 64),
        response_url=_text(fields.get("response_url"), "response_url", 2000),
        trigger_id=_text(fields.get("trigger_id"), "trigger_id", 128),
    )


def verify_and_parse(
    headers: Mapping[str, str], raw_body: bytes, signing_secret: str, now: float
) -> Interaction:
    """Check the signature (raises :class:`BadSignature` -> 401), then parse (:class:`BadPayload` -> 400)."""
    verify_signature(headers, raw_body, signing_secret, now)
    return parse_payload(raw_body)
