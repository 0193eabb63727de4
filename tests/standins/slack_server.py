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
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("standin.slack")

DEFAULT_TOKEN = "xoxb-test-standin-0000"
UPLOAD = "upload"  # the pseudo-method name of the upload POST, for faults and the call record
# method -> the scope it needs (Slack's method pages); a token has all of them unless a test says not
SCOPE_OF = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "conversations.history": "channels:history",
    "conversations.replies": "channels:history",
    "conversations.info": "channels:read",
    "conversations.members": "channels:read",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
}
ALL_SCOPES = ("channels:history", "channels:read", "chat:write", "files:write")
MEMBERSHIP = frozenset({"chat.postMessage", "chat.update", "conversations.history", "conversations.replies"})


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int = 200
    error: str | None = None  # the Slack error code answered, if any

    @property
    def thread_ts(self) -> str | None:
        return self.body.get("thread_ts")


@dataclass
class Fault:
    """What to do to the next ``times`` matching calls (``times=-1``: until cleared)."""

    status: int = 0  # HTTP status to answer (0: answer normally)
    error: str | None = None  # a Slack error code to answer with HTTP 200
    retry_after: float | None = None
    delay: float = 0.0
    after_effect: bool = False  # delay the answer after the call took effect (its answer is lost)
    methods: frozenset[str] | None = None
    times: int = 1


@dataclass
class StoredMessage:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] | None
    metadata: dict[str, Any] | None
    user: str
    thread_ts: str | None = None  # set on replies (the parent's ts)
    broadcast: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)  # ts of replies, in order (on a parent)
    edits: list[dict[str, Any]] = field(default_factory=list)  # earlier versions, oldest first

    def as_api(self, with_metadata: bool) -> dict[str, Any]:
        m: dict[str, Any] = {
            "type": "message",
            "user": self.user,
            "bot_id": "B0HEROWATCH",
            "text": self.text,
            "ts": self.ts,
        }
        if self.blocks is not None:
            m["blocks"] = self.blocks
        if self.thread_ts:
            m["thread_ts"] = self.thread_ts
            if self.broadcast:
                m["subtype"] = "thread_broadcast"
        if self.replies:
            m["thread_ts"] = self.ts
            m["reply_count"] = len(self.replies)
            m["latest_reply"] = self.replies[-1]
        if self.files:
            m["files"] = self.files
            m["upload"] = True
        if self.edits:
            m["edited"] = {"user": self.user, "ts": self.edits[-1]["edited_ts"]}
        if with_metadata and self.metadata is not None:
            m["metadata"] = self.metadata
        return m


@dataclass
class Upload:
    file_id: str
    filename: str
    length: int
    alt_txt: str | None
    data: bytes | None = None
    title: str | None = None
    channel: str | None = None
    thread_ts: str | None = None


class SlackError(Exception):
    def __init__(self, code: str, **extra: Any) -> None:
        super().__init__(code)
        self.code = code
        self.extra = extra


class SlackStandin:
    """The server, its workspace state (channels, messages, files), faults and the call record.
    Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        channels: Iterable[str] = ("C0ALERTS",),
        bot_user: str = "U0HEROBOT",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.token = token
        self.bot_user = bot_user
        self.clock = clock
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.channels: dict[str, list[StoredMessage]] = {c: [] for c in channels}  # top level, oldest first
        self.uploads: dict[str, Upload] = {}
        self._messages: dict[tuple[str, str], StoredMessage] = {}
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._last_us = 0
        self._file_ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._port = 0
        self.scopes: list[str] = list(ALL_SCOPES)
        self.outside: set[str] = set()  # channels the bot was never invited to
        self.private: set[str] = set()

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> SlackStandin:
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"standin": self})
        self._server = _Server(("127.0.0.1", self._port), handler)
        self._port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="slack-standin", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends injected delays at once
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SlackStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._port, "not started"
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """What to pass as ``WebClient(base_url=...)``."""
        return f"{self.url}/api/"

    # ---- faults ----------------------------------------------------------------------------------
    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def fail(self, status: int = 500, times: int = 1, methods: Iterable[str] | None = None) -> Fault:
        return self.inject(Fault(status=status, times=times, methods=_set(methods)))

    def rate_limit(
        self, retry_after: float = 30, times: int = 1, methods: Iterable[str] | None = None
    ) -> Fault:
        return self.inject(Fault(status=429, retry_after=retry_after, times=times, methods=_set(methods)))

    def error(self, code: str, times: int = 1, methods: Iterable[str] | None = None) -> Fault:
        return self.inject(Fault(error=code, times=times, methods=_set(methods)))

    def slow(
        self, delay: float, times: int = 1, methods: Iterable[str] | None = None, after_effect: bool = False
    ) -> Fault:
        return self.inject(Fault(delay=delay, times=times, methods=_set(methods), after_effect=after_effect))

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take_fault(self, method: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times != 0 and (fault.methods is None or method in fault.methods):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None

    # ---- what tests look at ----------------------------------------------------------------------
    def calls_to(self, *methods: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if not methods or c.method in methods]

    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    def reset_calls(self) -> None:
        with self._lock:
            self.calls.clear()

    def add_channel(self, channel: str) -> None:
        with self._lock:
            self.channels.setdefault(channel, [])

    def roots(self, channel: str) -> list[StoredMessage]:
        """Top-level messages of ``channel`` (not thread broadcasts), oldest first."""
        with self._lock:
            return [m for m in self.channels[channel] if not m.thread_ts]

    def message(self, channel: str, ts: str) -> StoredMessage:
        with self._lock:
            return self._messages[(channel, ts)]

    def pages(self, channel: str) -> list[str]:
        """What notified people in ``channel``, oldest first: the text of every top-level message and
        every thread reply also sent to the channel (``reply_broadcast``), as first posted. Edits and
        quiet thread replies notify nobody, so they are not here."""
        with self._lock:
            out = []
            for m in sorted(self._messages.values(), key=lambda m: float(m.ts)):
                if m.channel == channel and (not m.thread_ts or m.broadcast) and not m.files:
                    out.append(m.edits[0]["text"] if m.edits else m.text)
            return out

    def thread(self, channel: str, ts: str) -> list[StoredMessage]:
        """The replies to ``ts``, oldest first."""
        with self._lock:
            return [self._messages[(channel, r)] for r in self._messages[(channel, ts)].replies]

    # ---- the API ----------------------------------------------------------------------------------
    def _next_ts(self) -> str:
        with self._lock:
            us = max(self._last_us + 1, int(self.clock() * 1_000_000))
            self._last_us = us
        return f"{us // 1_000_000}.{us % 1_000_000:06d}"

    def _channel(self, body: Mapping[str, Any], key: str = "channel") -> str:
        channel = body.get(key)
        if not channel or channel not in self.channels:
            raise SlackError("channel_not_found")
        return str(channel)

    def answer(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            raise SlackError("unknown_method")
        scope = SCOPE_OF.get(method)
        if scope is not None and scope not in self.scopes:
            raise SlackError("missing_scope", needed=scope, provided=",".join(self.scopes))
        if method in MEMBERSHIP and body.get("channel") in self.outside:
            raise SlackError("not_in_channel")
        with self._lock:
            return {"ok": True, **handler(body)}

    def _m_conversations_info(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        private = channel in self.private
        return {
            "channel": {
                "id": channel,
                "name": channel.lower(),
                "is_channel": not private,
                "is_private": private,
                "is_member": channel not in self.outside,
            }
        }

    def _m_conversations_members(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        members = [] if channel in self.outside else [self.bot_user]
        return {"members": members, "response_metadata": {"next_cursor": ""}}

    def _m_auth_test(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://herowatch-test.slack.com/",
            "team": "herowatch test",
            "user": "herowatch",
            "team_id": "T0HEROWATCH",
            "user_id": self.bot_user,
            "bot_id": "B0HEROWATCH",
        }

    def _m_chat_postMessage(self, body: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        channel = self._channel(body)
        text, blocks = body.get("text"), _json_field(body.get("blocks"))
        if not text and not blocks and not body.get("attachments"):
            raise SlackError("no_text")
        _check_blocks(blocks)
        metadata = _check_metadata(_json_field(body.get("metadata")))
        parent = None
        if body.get("thread_ts"):
            parent = self._messages.get((channel, str(body["thread_ts"])))
            if parent is None or parent.thread_ts:
                raise SlackError("thread_not_found")
        msg = StoredMessage(
            channel,
            self._next_ts(),
            str(text or ""),
            blocks,
            metadata,
            self.bot_user,
            thread_ts=parent.ts if parent else None,
            broadcast=_true(body.get("reply_broadcast")),
        )
        self._store(msg, parent)
        return {"channel": channel, "ts": msg.ts, "message": msg.as_api(True)}

    def _m_chat_update(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        msg = self._messages.get((channel, str(body.get("ts"))))
        if msg is None:
            raise SlackError("message_not_found")
        text, blocks = body.get("text"), _json_field(body.get("blocks"))
        if not text and not blocks:
            raise SlackError("no_text")
        _check_blocks(blocks)
        metadata = _json_field(body.get("metadata"))
        msg.edits.append({"text": msg.text, "blocks": msg.blocks, "edited_ts": self._next_ts()})
        msg.text = str(text or "")
        msg.blocks = blocks
        if metadata is not None:
            msg.metadata = _check_metadata(metadata)
        return {"channel": channel, "ts": msg.ts, "text": msg.text, "message": msg.as_api(True)}

    def _m_conversations_history(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        newest_first = list(reversed(self.channels[channel]))
        oldest, latest = _float(body.get("oldest")), _float(body.get("latest"))
        inclusive = _true(body.get("inclusive"))
        picked = [
            m
            for m in newest_first
            if (oldest is None or float(m.ts) > oldest or (inclusive and float(m.ts) == oldest))
            and (latest is None or float(m.ts) < latest or (inclusive and float(m.ts) == latest))
        ]
        return self._page(picked, body, default_limit=100)

    def _m_conversations_replies(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        parent = self._messages.get((channel, str(body.get("ts"))))
        if parent is None:
            raise SlackError("thread_not_found")
        if parent.thread_ts:  # the ts of a reply: Slack answers with its thread
            parent = self._messages[(channel, parent.thread_ts)]
        msgs = [parent] + [self._messages[(channel, r)] for r in parent.replies]
        return self._page(msgs, body, default_limit=1000)

    def _page(self, msgs: list[StoredMessage], body: dict[str, Any], default_limit: int) -> dict[str, Any]:
        limit = max(1, min(int(body.get("limit") or default_limit), 1000))
        start = int(body.get("cursor") or 0)
        page = msgs[start : start + limit]
        more = start + limit < len(msgs)
        with_md = _true(body.get("include_all_metadata"))
        return {
            "messages": [m.as_api(with_md) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _m_files_getUploadURLExternal(self, body: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        try:
            filename, length = str(body["filename"]), int(body["length"])
        except (KeyError, ValueError):
            raise SlackError("invalid_arguments") from None
        file_id = f"F{next(self._file_ids):08d}"
        self.uploads[file_id] = Upload(file_id, filename, length, body.get("alt_txt"))
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, body: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        files = _json_field(body.get("files"))
        if not isinstance(files, list) or not files:
            raise SlackError("invalid_arguments")
        channel = self._channel(body, "channel_id") if body.get("channel_id") else None
        parent = None
        if channel and body.get("thread_ts"):
            parent = self._messages.get((channel, str(body["thread_ts"])))
            if parent is None:
                raise SlackError("thread_not_found")
        shared = []
        for f in files:
            up = self.uploads.get(str(f.get("id")))
            if up is None or up.data is None:
                raise SlackError("file_not_found")
            up.title, up.channel, up.thread_ts = f.get("title") or up.filename, channel, body.get("thread_ts")
            shared.append(
                {
                    "id": up.file_id,
                    "name": up.filename,
                    "title": up.title,
                    "size": len(up.data),
                    "mimetype": "image/png" if up.filename.endswith(".png") else "application/octet-stream",
                }
            )
        if channel:
            msg = StoredMessage(
                channel,
                self._next_ts(),
                str(body.get("initial_comment") or ""),
                None,
                None,
                self.bot_user,
                thread_ts=parent.ts if parent else None,
                files=shared,
            )
            self._store(msg, parent)
        return {"files": shared}

    def _store(self, msg: StoredMessage, parent: StoredMessage | None) -> None:
        self._messages[(msg.channel, msg.ts)] = msg
        if parent is not None:
            parent.replies.append(msg.ts)
        if parent is None or msg.broadcast:
            self.channels[msg.channel].append(msg)

    def receive_upload(self, file_id: str, data: bytes) -> None:
        with self._lock:
            up = self.uploads.get(file_id)
            if up is None:
                raise KeyError(file_id)
            up.data = data


# ---- body checks, as Slack makes them -----------------------------------------------------------------
_BLOCK_TYPES = {"section", "header", "context", "actions", "divider", "image", "rich_text", "input", "file"}


def _check_blocks(blocks: Any) -> None:
    if blocks is None:
        return
    if not isinstance(blocks, list) or len(blocks) > 50:
        raise SlackError("invalid_blocks")
    for b in blocks:
        if not isinstance(b, dict) or b.get("type") not in _BLOCK_TYPES:
            raise SlackError("invalid_blocks")
        t = b["type"]
        if t == "header" and len((b.get("text") or {}).get("text", "")) > 150:
            raise SlackError("invalid_blocks")
        if t == "section":
            if "text" not in b and "fields" not in b:
                raise SlackError("invalid_blocks")
            if len((b.get("text") or {}).get("text", "")) > 3000 or len(b.get("fields") or []) > 10:
                raise SlackError("invalid_blocks")
        if t == "actions":
            for el in b.get("elements") or []:
                if len(str(el.get("value", ""))) > 2000 or len(str(el.get("action_id", ""))) > 255:
                    raise SlackError("invalid_blocks")


def _check_metadata(md: Any) -> dict[str, Any] | None:
    if md is None:
        return None
    if not isinstance(md, dict) or not md.get("event_type") or not isinstance(md.get("event_payload"), dict):
        raise SlackError("invalid_metadata_format")
    return md


def _json_field(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            raise SlackError("invalid_arguments") from None
    return v


def _true(v: Any) -> bool:
    return v is True or str(v).lower() in ("1", "true")


def _float(v: Any) -> float | None:
    return None if v in (None, "") else float(v)


def _set(methods: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(methods) if methods is not None else None


# ---- HTTP ---------------------------------------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("slack stand-in: connection error from %s (client gave up?)", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    standin: SlackStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - never the headers
        log.debug("slack stand-in: " + format, *args)

    def _reply(self, status: int, body: dict[str, Any] | str, headers: Mapping[str, str] = {}) -> None:  # noqa: B006
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        ctype = "application/json; charset=utf-8" if isinstance(body, dict) else "text/plain; charset=utf-8"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("X-OAuth-Scopes", ",".join(self.standin.scopes))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client timed out and went away
            self.close_connection = True

    def _body(self, raw: bytes) -> dict[str, Any]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        body: dict[str, Any] = {}
        query = urlsplit(self.path).query
        if query:
            body.update({k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()})
        if ctype == "application/json":
            body.update(json.loads(raw or b"{}"))
        elif ctype == "application/x-www-form-urlencoded":
            body.update({k: v[-1] for k, v in parse_qs(raw.decode(), keep_blank_values=True).items()})
        elif raw:
            raise SlackError("invalid_form_data")
        return body

    def do_GET(self) -> None:  # noqa: N802 - Slack accepts GET with query parameters too
        self.do_POST()

    def do_POST(self) -> None:  # noqa: N802
        s = self.standin
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path
        if path.startswith("/upload/"):
            method, body = UPLOAD, {"file_id": path.rsplit("/", 1)[-1], "bytes": len(raw)}
        elif path.startswith("/api/"):
            method = path[len("/api/") :]
            try:
                body = self._body(raw)
            except (SlackError, ValueError):
                body = {"<unparsed>": raw[:200].decode(errors="replace")}
        else:
            self._reply(404, "not found")
            return
        call = Call(method, body, dict(self.headers.items()))
        with s._lock:
            s.calls.append(call)

        fault = s._take_fault(method)
        if fault is not None and fault.delay and not fault.after_effect:
            s._stopping.wait(fault.delay)
        if fault is not None and fault.status:
            call.status = fault.status
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            if fault.status == 429:
                call.error = "ratelimited"
                self._reply(429, {"ok": False, "error": "ratelimited"}, headers)
            else:
                self._reply(fault.status, f"injected HTTP {fault.status}", headers)
            return
        if fault is not None and fault.error:
            call.error = fault.error
            self._reply(200, {"ok": False, "error": fault.error})
            return

        if method == UPLOAD:
            try:
                s.receive_upload(body["file_id"], raw)
            except KeyError:
                call.status = 404
                self._reply(404, "no such upload")
                return
            answer: dict[str, Any] | str = f"OK - {len(raw)}"
        else:
            answer = self._api(method, body, call)
        if fault is not None and fault.delay and fault.after_effect:
            s._stopping.wait(fault.delay)
        self._reply(200, answer)

    def _api(self, method: str, body: dict[str, Any], call: Call) -> dict[str, Any]:
        s = self.standin
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else body.get("token")
        if "<unparsed>" in body:
            call.error = "invalid_form_data"
        elif not token:
            call.error = "not_authed"
        elif token != s.token:
            call.error = "invalid_auth"
        if call.error:
            return {"ok": False, "error": call.error}
        try:
            return s.answer(method, body)
        except SlackError as exc:
            call.error = exc.code
            return {"ok": False, "error": exc.code, **exc.extra}
