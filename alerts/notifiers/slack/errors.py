"""How the Slack notifier classifies Slack's error codes: permanent (retrying will not fix it: the
reason said in words), transient, and the codes that change what it does next (a root that is gone,
a message it cannot edit)."""

from __future__ import annotations

from collections.abc import Callable

from slack_sdk.web import SlackResponse

from alerts.notifiers.base import SendResult
from alerts.notifiers.base import retry_after as parse_retry_after

# Slack error codes that retrying will not fix: wrong token, wrong channel, missing permission.
PERMANENT_ERRORS: dict[str, str] = {
    "invalid_auth": "the bot token is not valid (check SLACK_BOT_TOKEN)",
    "not_authed": "no bot token was sent (check SLACK_BOT_TOKEN)",
    "account_inactive": "the bot's token belongs to a deleted user or workspace",
    "token_revoked": "the bot token was revoked",
    "token_expired": "the bot token expired",
    "no_permission": "the bot has no permission for this",
    "missing_scope": "the bot token lacks a scope (needs chat:write, files:write, channels:history)",
    "not_allowed_token_type": "this needs a bot token (xoxb-)",
    "channel_not_found": "the channel id does not exist or the bot cannot see it",
    "not_in_channel": "the bot is not a member of the channel: invite it",
    "is_archived": "the channel is archived",
    "restricted_action": "the workspace does not let the bot post there",
    "restricted_action_read_only_channel": "the channel is read-only",
    "team_access_not_granted": "the token has no access to this workspace",
    "ekm_access_denied": "the workspace's EKM denied access",
    "invalid_arguments": "Slack rejected the request's arguments",
    "invalid_metadata_format": "Slack rejected the message metadata",
    "invalid_metadata_schema": "Slack rejected the message metadata",
    "msg_too_long": "the message is too long",
    "no_text": "the message has no text",
    "too_many_attachments": "too many attachments",
    "duplicate_channel_not_found": "the channel does not exist",
}
TRANSIENT_ERRORS = frozenset(
    {
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
    }
)
BLOCK_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long"})
ROOT_GONE = frozenset({"message_not_found", "thread_not_found"})
CANNOT_EDIT = frozenset({"cant_update_message", "edit_window_closed", "message_not_editable"}) | BLOCK_ERRORS
# Errors of the history look-up that the post itself would hit too: fail now, with the clear reason.
FATAL_FOR_LOOKUP = frozenset(
    {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "channel_not_found"}
)


def classify(
    method: str, resp: SlackResponse, channel: str, redact: Callable[[str], str]
) -> tuple[SendResult, str | None]:
    """The outcome of a Slack API error response, and Slack's error code. ``redact`` scrubs the token."""
    status = resp.status_code
    data = resp.data if isinstance(resp.data, dict) else {}
    code = data.get("error")
    retry_after = parse_retry_after(resp.headers)
    if status == 429 or code == "ratelimited":
        return SendResult.transient(f"slack {method}: rate limited (HTTP {status})", retry_after), code
    if status >= 500:
        return SendResult.transient(f"slack {method}: HTTP {status}", retry_after), code
    if status == 200 and code:
        if code in PERMANENT_ERRORS:
            hint = PERMANENT_ERRORS[code]
            if code in ("channel_not_found", "not_in_channel"):
                hint += f" ({channel})"
            if code == "missing_scope" and data.get("needed"):
                hint += f"; needed: {data['needed']}"
            return SendResult.permanent(redact(f"slack {method}: {code}: {hint}")), code
        note = "" if code in TRANSIENT_ERRORS else " (unknown error code, retrying)"
        return SendResult.transient(redact(f"slack {method}: {code}{note}"), retry_after), code
    if status == 408:
        return SendResult.transient(f"slack {method}: HTTP 408"), code
    return SendResult.permanent(redact(f"slack {method}: HTTP {status} {code or ''}".rstrip())), code
