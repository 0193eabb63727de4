"""A Slack Web API stand-in for the real ``slack_sdk.WebClient``, on 127.0.0.1.

Point the client at it with ``WebClient(token=..., base_url=standin.api_url)``. It answers like Slack
(see /work/shared/notes/ecosystem-facts.md): every method is ``POST /api/<method>`` with
``Authorization: Bearer <token>``; ``chat.*`` bodies are JSON, the others form-encoded; errors are
HTTP 200 with ``{"ok": false, "error": "<code>"}`` (``not_authed``, ``invalid_auth``,
``channel_not_found``, ``message_not_found``, ``thread_not_found``, ``no_text``, ``invalid_blocks``,
``invalid_metadata_format``, ``invalid_arguments``, ``file_not_found``), rate limits are HTTP 429 with
``Retry-After``.

Scopes and membership (for ``herowatch doctor``): the token's ``scopes`` are sent in the
``X-OAuth-Scopes`` header of every answer, as Slack does; a method whose scope the token lacks answers
``missing_scope`` with ``needed`` and ``provided``; the bot is a member of every channel except those in
``outside``, where posting and reading history answer ``not_in_channel``. ``conversations.info`` (with
``is_member``, ``is_private``) and ``conversations.members`` answer too.

Methods: ``auth.test``, ``chat.postMessage`` (``thread_ts``, ``reply_broadcast``, ``metadata``; a light
Block Kit check: block types, text lengths, button values), ``chat.update``, ``conversations.history``
and ``conversations.replies`` (newest first / thread order, ``limit``, ``cursor``, ``oldest``/``latest``,
metadata only with ``include_all_metadata``), ``files.getUploadURLExternal`` (an absolute loopback
``upload_url``), the upload ``POST /upload/<file_id>`` (raw bytes, no token: the URL is the credential)
and ``files.completeUploadExternal`` (shares the files as a message, in a thread with ``thread_ts``).

Tests drive it from Python: channels, the messages per channel with their threads and edits, the uploaded
files, every call recorded (method, parsed body, headers, status, error), and faults for the next N
matching calls: an HTTP status (500, 429 with Retry-After), a Slack error code, or a slow answer (before
the call takes effect, or after it: the answer is lost but the message exists, as when a client times out
on a post Slack accepted). Nothing here waits except an injected slow answer.

The package, by purpose: ``records`` (constants, calls, faults, stored messages and uploads),
``checks`` (body checks as Slack makes them), ``messages`` and ``files`` (the API methods),
``handler`` (HTTP: recording, faults, the token) and ``server`` (``SlackStandin``: lifecycle, faults,
what tests look at); ``socket_mode`` (Socket Mode: ``apps.connections.open`` with the app-level token,
the websocket, ``hello``, envelopes, acknowledgements, re-delivery, ``disconnect``, dropped sockets) and
``people`` (a slash command typed and a button clicked, sent over Socket Mode; answers posted to a
request's ``response_url``).
"""

from tests.standins.slack.people import AMY, BOB, Person
from tests.standins.slack.records import (
    ALL_SCOPES,
    APP_TOKEN,
    DEFAULT_TOKEN,
    MEMBERSHIP,
    SCOPE_OF,
    UPLOAD,
    Call,
    Fault,
    SlackError,
    StoredMessage,
    Upload,
)
from tests.standins.slack.server import SlackStandin

__all__ = [
    "ALL_SCOPES",
    "AMY",
    "APP_TOKEN",
    "BOB",
    "Person",
    "DEFAULT_TOKEN",
    "MEMBERSHIP",
    "SCOPE_OF",
    "UPLOAD",
    "Call",
    "Fault",
    "SlackError",
    "SlackStandin",
    "StoredMessage",
    "Upload",
]
