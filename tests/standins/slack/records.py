"""What the Slack stand-in knows and records: its constants (the default token, the scope each method
needs), the calls it answered, the faults waiting for the next calls, the messages and the uploads it
stores, and the error a method answers with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_TOKEN = "xoxb-test-standin-0000"
APP_TOKEN = "xapp-1-A0HEROWATCH-1-test-standin-0000"  # the app-level token, for Socket Mode
APP_METHODS = frozenset({"apps.connections.open"})  # methods that take the app-level token, not the bot's
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
