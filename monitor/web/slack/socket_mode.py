"""Slack's Socket Mode inside ``herowatch serve``: button clicks and ``/herowatch`` commands over a
websocket herowatch opens to Slack, for clusters Slack cannot reach (no inbound port, no public URL).

With an app-level token (``SLACK_APP_TOKEN``, ``xapp-...``) slack-sdk's Socket Mode client (on
websocket-client) asks ``apps.connections.open`` for a websocket URL, connects, and hands each envelope
to :meth:`SocketMode.on_request`. It reconnects by itself on Slack's ``disconnect`` messages and on a
dropped socket; herowatch keeps trying the first connection until Slack answers, and replaces a
connection whose pings go unanswered (a silent network path, which no error reports).

Each envelope:

1. is acted on in one database transaction that first claims its identity (Slack's ``trigger_id`` of
   the person's action, else the envelope id) in ``slack_deliveries``: a re-delivered envelope, or the
   same action delivered to another replica's connection, finds the claim and is answered with the
   reply stored there, so it never acts twice (monitor/storage/slack_deliveries.py);
2. is acknowledged within Slack's 3 seconds: with the answer to a slash command in the
   acknowledgement when it was ready within :data:`ACK_BUDGET`, else with an empty acknowledgement
   and the answer posted to the request's ``response_url`` when it is ready; a click's answer always
   goes to its ``response_url``;
3. if acting fails (the database is down), is answered that nothing changed.

It acts through its port, ``SlackPorts`` (the database, the clock, the workspace, what the commands
read), which the composition root builds.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.socket_mode.websocket_client import SocketModeClient
from slack_sdk.web import WebClient
from slack_sdk.webhook import WebhookClient
from sqlalchemy.orm import Session, sessionmaker

from alerts.notifiers.slack.interactions import BadPayload, parse_block_actions, parse_command
from monitor.engine.scheduling import add_interval_job
from monitor.storage import slack_deliveries
from monitor.web.context import ApiContext
from monitor.web.slack import clicks, commands
from monitor.web.slack.commands import CommandPorts
from monitor.web.slack.replies import Refused, Reply, check_team

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from monitor.settings import Settings

log = logging.getLogger(__name__)
ACK_BUDGET = 2.0  # seconds from an envelope's arrival to its acknowledgement (Slack allows 3)
PING_INTERVAL = 10.0  # websocket pings; three unanswered in a row and the connection is replaced
SLASH, INTERACTIVE = "slash_commands", "interactive"


class _Client(SocketModeClient):
    """slack-sdk's Socket Mode client (on websocket-client), less a start-up race: its session starts
    receiving up to half a second after it is made, and until then it looked closed, so its monitor (or
    the closing of the connection it replaces) made another one, and another, each a new URL from
    Slack. A connection made in the last few seconds counts as connected; one that fails is replaced
    once that time is up, by the client's monitor."""

    STARTING = 5.0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.made_at: float | None = None  # monotonic time the session was made, until it opens
        self.on_open_listeners.append(self._opened)

    def connect(self) -> None:
        self.made_at = time.monotonic()  # before: the monitor it starts looks at once
        super().connect()

    def _opened(self, _ws: Any) -> None:
        self.made_at = None  # started: from now on, its socket says whether it is connected

    def is_connected(self) -> bool:
        made = self.made_at
        starting = made is not None and time.monotonic() - made < self.STARTING
        return super().is_connected() or (starting and not self.closed)

    def _monitor_current_session(self) -> None:
        if not self.is_connected():
            super()._monitor_current_session()


def _routine_drop(record: logging.LogRecord) -> bool:
    """A dropped connection is routine in Socket Mode (herowatch connects again at once); slack-sdk and
    websocket-client log it as an error: here it is a warning."""
    if record.levelno == logging.ERROR and (
        "on_error invoked" in record.getMessage() or record.getMessage().endswith("- goodbye")
    ):
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


@dataclass(frozen=True)
class SlackPorts:
    """What Socket Mode acts through."""

    sessions: sessionmaker[Session]  # claims, replies and the actions, each in one transaction
    now: Callable[[], float]  # the service's clock
    team_id: str | None  # the workspace allowed to act (``SLACK_TEAM_ID``; None: any)
    commands: CommandPorts  # what ``/herowatch`` reads

    @classmethod
    def of(cls, ctx: ApiContext) -> SlackPorts:
        return cls(ctx.sessions, ctx.clock.time, ctx.settings.slack_team_id, CommandPorts.of(ctx))


@dataclass(frozen=True)
class Handled:
    reply: Reply | None  # what to answer (None: nothing, e.g. a click on another app's button)
    duplicate: bool  # acted on before (a re-delivery): answered with the stored reply, not again


class SocketMode:
    def __init__(
        self,
        *,
        app_token: str,
        api_url: str,
        ports: SlackPorts,
        worker: str,
        ack_budget: float = ACK_BUDGET,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        self.ports = ports
        self.worker = worker
        self.ack_budget = ack_budget
        self.ping_interval = ping_interval
        self._app_token, self._api_url = app_token, api_url
        self.client: _Client | None = None  # made by start(): it starts threads as it is made
        self._pool: ThreadPoolExecutor | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.opened_at: float | None = None  # time.time() the current connection opened
        self.connected_once = False

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, scheduler: BackgroundScheduler | None = None) -> None:
        sdk = logging.getLogger("herowatch.slack.socket")
        sdk.setLevel(logging.WARNING)  # its INFO tells of every session it makes; ours says what matters
        for name in ("herowatch.slack.socket", "websocket"):
            logging.getLogger(name).addFilter(_routine_drop)
        self.client = _Client(
            app_token=self._app_token,
            web_client=WebClient(base_url=self._api_url, timeout=10),
            ping_interval=self.ping_interval,
            concurrency=8,
            logger=sdk,
            on_open_listeners=[self._opened],
            on_message_listeners=[self._heard],
        )
        self.client.socket_mode_request_listeners.append(self.on_request)
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="slack-socket")
        self._thread = threading.Thread(target=self._supervise, name="slack-socket-mode", daemon=True)
        self._thread.start()
        if scheduler is not None:
            add_interval_job(scheduler, "slack-deliveries", self.forget_old, 3600.0, first_in=60.0)

    def stop(self) -> None:
        self._stop.set()
        self._close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._thread is not None:
            self._thread.join(5)
        self._close()  # a connection the supervisor was opening while we closed: closed once it is open

    def _close(self) -> None:
        """Close the connection, and one still being opened. websocket-client's close() passes over a
        socket whose handshake is under way; that socket then opens with no one to read or close it, and
        Slack would send envelopes to it. So no new session is started, a handshake under way is waited
        for (at most a few seconds) and what it opened is closed, until the session runner has ended."""
        client = self.client
        if client is None:
            return
        client.auto_reconnect_enabled = False
        runner = client.current_session_runner
        runner.event.set()  # the session under way is the last one
        deadline = time.monotonic() + 5.0
        try:
            while time.monotonic() < deadline:
                session = client.current_session
                ws = getattr(session, "sock", None)
                if ws is not None and ws.connected:
                    session.close()
                elif ws is None and not runner.is_alive():
                    break
                time.sleep(0.02)
            client.close()
        except Exception as exc:  # noqa: BLE001 - closing what is already half closed
            log.debug("Slack Socket Mode: closing: %s", exc)

    def _supervise(self) -> None:
        """The first connection, retried until Slack answers (after it, slack-sdk reconnects by itself);
        then every ping interval, a connection whose pings go unanswered is replaced."""
        client = self.client
        assert client is not None, "started"
        delay = 1.0
        while not self._stop.is_set():
            if not self.connected_once:
                try:
                    client.connect()
                    self.connected_once = True
                    if self._stop.is_set():  # stopped while connecting: this connection must not stay
                        self._close()
                        break
                except Exception as exc:  # noqa: BLE001 - Slack down, a bad token: said, and retried
                    log.warning("cannot open a Slack Socket Mode connection (again in %gs): %s", delay, exc)
                    self._stop.wait(delay)
                    delay = min(delay * 2, 60.0)
                    continue
            elif self._silent():
                log.warning("Slack Socket Mode: no answer to three pings; opening a new connection")
                self._drop(client)
            self._stop.wait(self.ping_interval)

    @staticmethod
    def _drop(client: _Client) -> None:
        """Cut the current connection as a network failure would: the client reconnects at once, as for
        any dropped socket (closing it politely would wait for an answer that never comes)."""
        ws = getattr(client.current_session, "sock", None)
        try:
            ws.sock.shutdown(socket.SHUT_RDWR)  # wakes its reader with an end of stream
        except (AttributeError, OSError):
            try:
                client.connect_to_new_endpoint(force=True)
            except Exception as exc:  # noqa: BLE001 - the client's monitor retries too
                log.warning("Slack Socket Mode: reconnecting failed: %s", exc)

    def _silent(self) -> bool:
        """The connection is open, but its last pings went unanswered for three intervals."""
        session = self.client.current_session if self.client is not None else None
        if session is None or session.sock is None or self.opened_at is None:
            return False
        answered = max(session.last_pong_tm, self.opened_at)
        return session.last_ping_tm - answered > 2.5 * self.ping_interval

    def _opened(self, _ws: Any) -> None:
        self.opened_at = time.time()

    def _heard(self, _ws: Any, raw: str) -> None:
        """Slack's own messages, for the log: ``hello`` on connecting, ``disconnect`` before a refresh."""
        if '"hello"' not in raw[:100] and '"disconnect"' not in raw[:100]:
            return  # an envelope: on_request's
        try:
            kind = json.loads(raw).get("type")
        except (ValueError, AttributeError):
            return
        if kind == "hello":
            log.info("Slack Socket Mode connected: %s", raw[:300])
        elif kind == "disconnect":
            log.info("Slack Socket Mode: Slack asks for a new connection: %s", raw[:300])

    def forget_old(self) -> int:
        """Drop the claims older than a day: their envelopes will not come again."""
        with self.ports.sessions.begin() as s:
            return slack_deliveries.forget_before(s, self.ports.now() - slack_deliveries.KEEP)

    # ---- envelopes -------------------------------------------------------------------------------
    def on_request(self, client: SocketModeClient, req: SocketModeRequest) -> None:
        """Act, then acknowledge within the budget (slack-sdk runs this on its worker threads)."""
        if req.type not in (SLASH, INTERACTIVE):
            self._ack(req.envelope_id, None)  # herowatch subscribes to no events: nothing to do
            return
        assert self._pool is not None, "started"
        future = self._pool.submit(self.handle, req)
        try:
            handled = future.result(timeout=self.ack_budget)
        except FutureTimeout:
            self._ack(req.envelope_id, None)
            log.warning("Slack %s took over %gs: acknowledged; the answer follows", req.type, self.ack_budget)
            future.add_done_callback(lambda f: self._follow_up(req, f))
            return
        except Exception as exc:  # noqa: BLE001 - the transaction rolled back: nothing changed
            log.exception("Slack %s %s failed", req.type, req.envelope_id)
            handled = _failed(exc)
        reply = handled.reply
        self._ack(req.envelope_id, reply.message() if reply is not None and req.type == SLASH else None)
        if reply is not None and req.type == INTERACTIVE and not handled.duplicate:
            self._respond(req.payload.get("response_url"), reply)

    def _follow_up(self, req: SocketModeRequest, future: Future[Handled]) -> None:
        try:
            handled = future.result()
        except Exception as exc:  # noqa: BLE001
            handled = _failed(exc)
        if handled.reply is not None and not handled.duplicate:
            self._respond(req.payload.get("response_url"), handled.reply)

    def _ack(self, envelope_id: str, payload: dict[str, Any] | None) -> None:
        assert self.client is not None, "started"
        try:
            ack = SocketModeResponse(envelope_id=envelope_id, payload=payload)
            self.client.send_socket_mode_response(ack)
        except Exception as exc:  # noqa: BLE001 - the socket went away: Slack re-delivers, we answer then
            log.warning("Slack Socket Mode: could not acknowledge %s: %s", envelope_id, exc)

    def _respond(self, url: Any, reply: Reply) -> None:
        """Post an answer to the request's ``response_url`` (only the person who asked sees it)."""
        if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
            return
        try:
            answer = WebhookClient(url, timeout=10).send_dict(reply.message())
            if answer.status_code != 200:
                log.warning("Slack refused an answer: %s %s", answer.status_code, str(answer.body)[:200])
        except Exception as exc:  # noqa: BLE001 - the answer is lost, the action stands
            log.warning("could not post an answer to Slack's response_url: %s", exc)

    def handle(self, req: SocketModeRequest) -> Handled:
        """Claim the request's identity and act, in one transaction; a claimed one gets its stored reply."""
        now = self.ports.now()
        try:
            if req.type == SLASH:
                cmd = parse_command(req.payload)
                trigger, actor, team = cmd.trigger_id, cmd.actor, cmd.team_id
                act = lambda s: commands.answer(self.ports.commands, s, cmd, now)  # noqa: E731
            else:
                if req.payload.get("type") != "block_actions":
                    return Handled(None, False)  # herowatch has no shortcuts, modals or menus
                click = parse_block_actions(req.payload)
                trigger, actor, team = click.trigger_id, click.actor, click.team_id
                act = lambda s: clicks.act(s, click, now, self.ports.commands)  # noqa: E731
        except BadPayload as exc:
            log.warning("Slack Socket Mode: ignored a %s envelope: %s", req.type, exc)
            unread = Reply(f"herowatch cannot read this: {exc}")
            return Handled(None if req.type == INTERACTIVE else unread, False)
        try:
            check_team(self.ports.team_id, team)
        except Refused as exc:
            log.warning("refused a Slack %s by %s from workspace %r", req.type, actor, team)
            return Handled(Reply(exc.message), False)
        key = f"trigger:{trigger}" if trigger else f"envelope:{req.envelope_id}"
        with self.ports.sessions.begin() as s:
            if slack_deliveries.claim(
                s, key, envelope_id=req.envelope_id, kind=req.type, actor=actor, now=now, worker=self.worker
            ):
                try:
                    reply = act(s)
                except Refused as exc:
                    reply = Reply(exc.message)
                slack_deliveries.record_reply(s, key, reply.message())
                return Handled(reply, False)
        with self.ports.sessions() as s:
            stored = slack_deliveries.reply_of(s, key)
        log.info("Slack %s %s (%s) was acted on already: not again", req.type, req.envelope_id, key)
        return Handled(Reply.from_message(stored) if stored else None, True)


def _failed(exc: BaseException) -> Handled:
    """The transaction rolled back: nothing changed, and the person is told so."""
    return Handled(Reply(f"herowatch could not do this, nothing changed: {type(exc).__name__}"), False)


def from_settings(settings: Settings, ports: SlackPorts) -> SocketMode | None:
    """The Socket Mode door when ``SLACK_APP_TOKEN`` is set (``Service.start`` starts it)."""
    token = settings.slack_app_token
    if token is None:
        return None
    return SocketMode(
        app_token=token.get_secret_value(),
        api_url=settings.slack_api_url,
        ports=ports,
        worker=f"{socket.gethostname()}:{os.getpid()}",
    )
