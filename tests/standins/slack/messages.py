"""The Slack stand-in's Web API methods for the workspace and its messages: the dispatch by method name
(with the token's scopes and the bot's channel membership checked first), ``auth.test``,
``conversations.info`` / ``members`` / ``history`` / ``replies`` and ``chat.postMessage`` / ``update``.

A mixin of ``SlackStandin`` (tests/standins/slack/server.py), which holds the state it reads and writes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tests.standins.slack.checks import check_blocks, check_metadata, json_field, optional_float, truthy
from tests.standins.slack.records import MEMBERSHIP, SCOPE_OF, SlackError, StoredMessage


class MessageMethods:
    # the state, set up by SlackStandin.__init__
    bot_user: str
    clock: Callable[[], float]
    channels: dict[str, list[StoredMessage]]
    scopes: list[str]
    outside: set[str]
    private: set[str]
    _messages: dict[tuple[str, str], StoredMessage]
    _lock: threading.RLock
    _last_us: int

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
        text, blocks = body.get("text"), json_field(body.get("blocks"))
        if not text and not blocks and not body.get("attachments"):
            raise SlackError("no_text")
        check_blocks(blocks)
        metadata = check_metadata(json_field(body.get("metadata")))
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
            broadcast=truthy(body.get("reply_broadcast")),
        )
        self._store(msg, parent)
        return {"channel": channel, "ts": msg.ts, "message": msg.as_api(True)}

    def _m_chat_update(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        msg = self._messages.get((channel, str(body.get("ts"))))
        if msg is None:
            raise SlackError("message_not_found")
        text, blocks = body.get("text"), json_field(body.get("blocks"))
        if not text and not blocks:
            raise SlackError("no_text")
        check_blocks(blocks)
        metadata = json_field(body.get("metadata"))
        msg.edits.append({"text": msg.text, "blocks": msg.blocks, "edited_ts": self._next_ts()})
        msg.text = str(text or "")
        msg.blocks = blocks
        if metadata is not None:
            msg.metadata = check_metadata(metadata)
        return {"channel": channel, "ts": msg.ts, "text": msg.text, "message": msg.as_api(True)}

    def _m_conversations_history(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(body)
        newest_first = list(reversed(self.channels[channel]))
        oldest, latest = optional_float(body.get("oldest")), optional_float(body.get("latest"))
        inclusive = truthy(body.get("inclusive"))
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
        with_md = truthy(body.get("include_all_metadata"))
        return {
            "messages": [m.as_api(with_md) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _store(self, msg: StoredMessage, parent: StoredMessage | None) -> None:
        self._messages[(msg.channel, msg.ts)] = msg
        if parent is not None:
            parent.replies.append(msg.ts)
        if parent is None or msg.broadcast:
            self.channels[msg.channel].append(msg)
