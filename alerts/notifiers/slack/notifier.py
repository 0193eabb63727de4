"""Slack: one threaded conversation per alert group, through slack-sdk's WebClient and a bot token.

What a notification does, by ``view.kind`` (``alerts.views``):

- ``open``: post the episode's root message (Block Kit, with Acknowledge / Silence buttons) and upload
  the plot into its thread. A top-level message: it notifies. ``SendResult.ref`` is ``"CHANNEL:TS"``.
- ``notify``: a new alert in an episode that has a root: ``chat.update`` the root to the group's state,
  then a thread reply **with ``reply_broadcast``**, so it also shows in the channel and notifies, and
  the new alert's plot in the thread. (An edit or a quiet reply would notify nobody.)
- ``update``: ``chat.update`` the root, then a quiet thread reply saying what changed (resolved,
  acknowledged): what was announced changed state; nobody is paged for it.
- ``repeat``: a reminder reply in the thread (also shown in the channel: ``broadcast_reminders``).
- notify/update/repeat without a usable root, or whose root was deleted: post a new root, as ``open``.
- ``single`` (e.g. the watchdog): a root message for that one alert, without buttons.

A plot is best effort: any failure to draw or upload it is logged and the send still succeeds.

Failures are classified for the outbox, which is the only place that schedules retries, so the client
runs with **no retry handlers** (slack-sdk's default retries connection errors once, and its rate-limit
handler would sleep on 429s where the outbox cannot see them): HTTP 429 -> transient with
``retry_after`` from ``Retry-After``; 5xx, timeouts and connection errors -> transient; auth, channel
and permission errors (``invalid_auth``, ``channel_not_found``, ``not_in_channel``, ...) -> permanent;
an error code this module does not know -> transient (the outbox's attempt limit bounds it). A connection
error after Slack accepted a post is not retried blindly in-client because a retry could post twice;
the outbox's retry goes through the idempotency check below instead.

Idempotency: every message carries ``metadata`` {event_type "herowatch_notification", event_payload
{"key": idempotency_key, "group_key": ...}}. Before posting, a root looks for its key in the channel's
latest ``history_limit`` messages (``conversations.history``, ``include_all_metadata``) and a reply in
its thread (``conversations.replies``, up to 5 pages); a hit is reused instead of posting again. Limits:
the earlier post must still be among those messages (fine for an outbox retry minutes later, not for a
busy channel days later); the bot needs the ``channels:history`` (``groups:history`` for private
channels) scope, without it the check is skipped with a warning and a re-send may post twice; a
``chat.update`` is naturally idempotent; a plot whose upload was cut short may be missing after a re-send
(the root's existing replies are taken as "plot done") and a plot is never uploaded twice on purpose.

The bot token comes from the ``token`` option or ``SLACK_BOT_TOKEN``; it never appears in logs, errors
or ``repr`` (texts are scrubbed of it in case a library puts it there).
"""

from __future__ import annotations

import http.client
import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web import SlackResponse

from alerts.durations import Duration
from alerts.notifiers.base import CheckReport, MissingSecret, SendResult
from alerts.notifiers.registry import BuildContext, ReceiverConfig, register
from alerts.notifiers.slack.blocks import EVENT_TYPE, Message, metadata_for, reply_message, root_message
from alerts.notifiers.slack.check import check_slack
from alerts.notifiers.slack.errors import BLOCK_ERRORS, CANNOT_EDIT, FATAL_FOR_LOOKUP, ROOT_GONE, classify
from alerts.views import GroupView

log = logging.getLogger(__name__)

_REF = re.compile(r"^([A-Z0-9]+):(\d+\.\d+)$")
_NETWORK_ERRORS = (OSError, http.client.HTTPException)  # OSError: timeouts, URLError, resets, refused


class _Failed(Exception):
    def __init__(self, result: SendResult, code: str | None = None) -> None:
        super().__init__(result.error)
        self.result = result
        self.code = code


def format_ref(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def parse_ref(ref: Any) -> tuple[str, str] | None:
    """(channel, ts) of a ref made by :func:`format_ref`, None if it is not one."""
    m = _REF.match(str(ref or ""))
    return (m.group(1), m.group(2)) if m else None


class SlackNotifier:
    def __init__(
        self,
        channel: str,
        token: str | None = None,
        base_url: str | None = None,
        timeout: float = 10.0,
        dashboard_url: str | None = None,
        plots: bool = True,
        actions: bool = True,
        broadcast_reminders: bool = True,
        history_limit: int = 200,
        plotter: Callable[..., bytes] | None = None,
    ) -> None:
        token = token or os.environ.get("SLACK_BOT_TOKEN")
        if not token:
            raise MissingSecret(
                "SLACK_BOT_TOKEN",
                "a Slack receiver needs a bot token: set SLACK_BOT_TOKEN (never put it in the config)",
            )
        if not channel:
            raise ValueError("a Slack receiver needs a channel id, e.g. C0123456789")
        self.channel = channel
        self.dashboard_url = dashboard_url
        self.plots = plots
        self.actions = actions
        self.broadcast_reminders = broadcast_reminders
        self.history_limit = history_limit
        self.replies_page_size = 200
        self._plotter = plotter
        self._secret = token.strip()
        self._client = WebClient(
            token=token,
            base_url=base_url or WebClient.BASE_URL,
            timeout=float(timeout),  # type: ignore[arg-type]  # urllib takes float seconds
            retry_handlers=[],  # the outbox schedules every retry: see the module docstring
            logger=logging.getLogger(f"{__name__}.sdk"),
        )

    def __repr__(self) -> str:
        return f"SlackNotifier(channel={self.channel!r})"

    def check(self) -> CheckReport:
        """Could it deliver? Asked of Slack without posting (``herowatch doctor``, slack_check)."""
        return check_slack(self._client, self.channel, self.plots)

    # ---- the Notifier protocol --------------------------------------------------------------------------
    def send(self, view: GroupView) -> SendResult:
        try:
            root = parse_ref(view.root_ref)
            follow_up = view.kind in ("notify", "update", "repeat")
            if follow_up and root is not None:
                return self._follow_up(view, *root)
            if follow_up:
                log.warning(
                    "slack: %s for group %s has no root message; posting a new root",
                    view.kind,
                    view.group_key,
                )
            return self._open(view)
        except _Failed as failed:
            return failed.result

    # ---- root ---------------------------------------------------------------------------------------
    def _open(self, view: GroupView) -> SendResult:
        found = self._find_in_channel(view.key)
        if found is not None:
            channel, ts, has_replies = found
            log.info("slack: root for %s already posted (%s), not posting again", view.key, ts)
            if not has_replies:
                self._upload_plot(view, channel, ts)
            return SendResult.sent(format_ref(channel, ts))
        msg = root_message(view, self.dashboard_url, buttons=self.actions and view.kind != "single")
        resp = self._post(msg, metadata_for(view))
        channel, ts = resp.get("channel") or self.channel, str(resp["ts"])
        self._upload_plot(view, channel, ts)
        return SendResult.sent(format_ref(channel, ts))

    def _follow_up(self, view: GroupView, channel: str, root_ts: str) -> SendResult:
        ref = format_ref(channel, root_ts)
        if view.kind in ("notify", "update"):
            msg = root_message(view, self.dashboard_url, buttons=self.actions)
            try:
                self._call(
                    "chat.update",
                    self._client.chat_update,
                    channel=channel,
                    ts=root_ts,
                    text=msg.text,
                    blocks=msg.blocks,
                )
            except _Failed as failed:
                if failed.code in ROOT_GONE:
                    log.warning("slack: root %s of group %s is gone; posting a new root", ref, view.group_key)
                    return self._open(view)
                if failed.code not in CANNOT_EDIT:
                    raise
                log.warning(
                    "slack: could not update root %s (%s); replying in its thread only", ref, failed.code
                )
        if self._find_in_thread(channel, root_ts, view.key):
            log.info("slack: reply for %s already posted in %s, not posting again", view.key, ref)
            return SendResult.sent(ref)
        broadcast = view.kind == "notify" or (view.kind == "repeat" and self.broadcast_reminders)
        try:
            self._post(
                reply_message(view),
                metadata_for(view),
                channel=channel,
                thread_ts=root_ts,
                reply_broadcast=broadcast,
            )
        except _Failed as failed:
            if failed.code in ROOT_GONE:
                log.warning("slack: thread %s of group %s is gone; posting a new root", ref, view.group_key)
                return self._open(view)
            raise
        if view.kind == "notify":
            self._upload_plot(view, channel, root_ts)
        return SendResult.sent(ref)

    def reply_quietly(self, ref: str, msg: Message, key: str) -> SendResult:
        """A reply in the thread of ``ref`` (``channel:ts``) that notifies nobody (not broadcast), posted
        once per ``key`` (its metadata, looked for in the thread first)."""
        root = parse_ref(ref)
        if root is None:
            return SendResult.permanent(f"not a Slack message: {ref!r}")
        try:
            if not self._find_in_thread(*root, key):
                self._post(msg, {"event_type": EVENT_TYPE, "event_payload": {"key": key}}, *root)
        except _Failed as failed:
            return failed.result
        return SendResult.sent(ref)

    # ---- Slack calls -------------------------------------------------------------------------------
    def _post(
        self,
        msg: Message,
        metadata: Mapping[str, Any],
        channel: str | None = None,
        thread_ts: str | None = None,
        reply_broadcast: bool = False,
    ) -> SlackResponse:
        args: dict[str, Any] = {
            "channel": channel or self.channel,
            "text": msg.text,
            "metadata": dict(metadata),
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread_ts:
            args["thread_ts"] = thread_ts
            if reply_broadcast:
                args["reply_broadcast"] = True
        try:
            return self._call("chat.postMessage", self._client.chat_postMessage, blocks=msg.blocks, **args)
        except _Failed as failed:
            if failed.code not in BLOCK_ERRORS:
                raise
            # A Block Kit bug of ours must not swallow the alert: send the plain text instead.
            log.error("slack: Block Kit rejected (%s); posting the plain text instead", failed.code)
            return self._call("chat.postMessage", self._client.chat_postMessage, **args)

    def _find_in_channel(self, key: str) -> tuple[str, str, bool] | None:
        """(channel, ts, has replies) of the root that carries ``key``, among the latest messages."""
        try:
            resp = self._call(
                "conversations.history",
                self._client.conversations_history,
                channel=self.channel,
                limit=self.history_limit,
                include_all_metadata=True,
            )
        except _Failed as failed:
            if failed.code in FATAL_FOR_LOOKUP or _rate_limited(failed):
                raise  # the post would fail the same way; a 429 is retried after Retry-After
            log.warning(
                "slack: could not check for an earlier post (%s); posting anyway", failed.result.error
            )
            return None
        for m in resp.get("messages") or []:
            if _key_of(m) == key and m.get("thread_ts", m.get("ts")) == m.get("ts"):
                return self.channel, str(m["ts"]), bool(m.get("reply_count"))
        return None

    def _find_in_thread(self, channel: str, root_ts: str, key: str, max_pages: int = 5) -> bool:
        cursor = None
        for _ in range(max_pages):
            try:
                resp = self._call(
                    "conversations.replies",
                    self._client.conversations_replies,
                    channel=channel,
                    ts=root_ts,
                    limit=self.replies_page_size,
                    include_all_metadata=True,
                    cursor=cursor,
                )
            except _Failed as failed:
                if _rate_limited(failed):
                    raise
                log.warning(
                    "slack: could not check the thread for an earlier reply (%s); posting anyway",
                    failed.result.error,
                )
                return False
            if any(_key_of(m) == key for m in resp.get("messages") or []):
                return True
            cursor = (resp.get("response_metadata") or {}).get("next_cursor")
            if not resp.get("has_more") or not cursor:
                return False
        return False

    def _upload_plot(self, view: GroupView, channel: str, thread_ts: str) -> None:
        plot = view.plot
        if not self.plots or plot is None:
            return
        try:
            png = (self._plotter or _default_plotter())(plot)
            name = plot.y_label if plot.kind == "metric" and plot.y_label else plot.kind
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[:60] or "plot"
            self._client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                file=png,
                filename=f"{safe}.png",
                title=plot.title,
                alt_txt=plot.caption[:1000],
                initial_comment=plot.caption[:1000],
            )
        except Exception as exc:  # noqa: BLE001 - a plot must never block or fail the alert
            log.warning(
                "slack: plot for group %s not posted: %s",
                view.group_key,
                self._redact(f"{type(exc).__name__}: {_describe(exc)}"),
            )

    def _call(self, method: str, fn: Callable[..., SlackResponse], **kwargs: Any) -> SlackResponse:
        try:
            return fn(**kwargs)
        except SlackApiError as exc:
            result, code = classify(method, exc.response, self.channel, self._redact)
            raise _Failed(result, code) from None
        except SlackClientError as exc:
            raise _Failed(SendResult.permanent(self._redact(f"slack {method}: {exc}"))) from None
        except _NETWORK_ERRORS as exc:
            text = self._redact(f"slack {method}: {type(exc).__name__}: {_describe(exc)}")
            raise _Failed(SendResult.transient(text)) from None

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "xoxb-***") if self._secret else text


def _key_of(message: Mapping[str, Any]) -> str | None:
    md = message.get("metadata") or {}
    if md.get("event_type") != EVENT_TYPE:
        return None
    return (md.get("event_payload") or {}).get("key")


def _rate_limited(failed: _Failed) -> bool:
    return failed.code == "ratelimited" or (failed.result.retry and failed.result.retry_after is not None)


def _describe(exc: BaseException) -> str:
    return str(exc) or repr(exc)


def _default_plotter() -> Callable[..., bytes]:
    from alerts.plot import render_png

    return render_png


class SlackReceiver(ReceiverConfig):
    """A Slack channel, through a bot token from SLACK_BOT_TOKEN (never in this file)."""

    kind: Literal["slack"]
    channel: str = Field(description="channel id, e.g. C0123456789 (the bot must be a member)")
    base_url: str | None = Field(default=None, description="Slack API base URL; only for tests and proxies")
    timeout: Duration = 10.0
    plots: bool = True
    actions: bool = Field(
        default=True, description="Acknowledge / Silence buttons (needs the interactivity URL)"
    )


def _build(config: SlackReceiver, context: BuildContext) -> SlackNotifier:
    return SlackNotifier(
        config.channel,
        token=context.secret("SLACK_BOT_TOKEN"),
        base_url=config.base_url,
        timeout=config.timeout,
        plots=config.plots,
        actions=config.actions,
    )


register("slack", SlackReceiver, _build)
