"""Can an app-level token open a Slack Socket Mode connection from here (``herowatch doctor``)?

The check does what the Socket Mode client does, once: ``apps.connections.open`` with the token (is it
an app-level token with ``connections:write``?), then the websocket to the URL Slack gave (does the
network path, a proxy or a firewall, let it through?), then waits for Slack's ``hello`` and closes. It
is connected for a moment only; an envelope Slack might send it then is not acknowledged, so Slack
sends it again, to another connection.
"""

from __future__ import annotations

import json
import time

import websocket
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from alerts.notifiers.base import CheckProblem, CheckReport
from alerts.reachability import Cause, cause_of, fix_for

NEW_TOKEN = (
    "create an app-level token under Basic Information > App-Level Tokens with the scope connections:write "
    "and put it (xapp-...) in SLACK_APP_TOKEN"
)


def check_socket_mode(app_token: str, api_url: str, timeout: float = 10.0) -> CheckReport:
    rep = CheckReport()
    started = time.monotonic()
    try:
        url = WebClient(base_url=api_url, timeout=int(timeout)).apps_connections_open(app_token=app_token)[
            "url"
        ]
    except SlackApiError as exc:
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        err = str(data.get("error") or "unknown_error")
        what = {
            "invalid_auth": "Slack refuses SLACK_APP_TOKEN (invalid_auth: revoked, or of another app?)",
            "not_authed": "Slack got no token (not_authed)",
            "not_allowed_token_type": "SLACK_APP_TOKEN is not an app-level token (not_allowed_token_type)",
            "missing_scope": "the app-level token lacks connections:write (missing_scope)",
        }.get(err, f"apps.connections.open answers {err}")
        rep.problems.append(CheckProblem(what, NEW_TOKEN, cause=Cause.AUTH))
        return rep
    except (SlackClientError, OSError) as exc:
        cause = cause_of(exc) or Cause.UNREACHABLE
        rep.problems.append(
            CheckProblem(
                f"Slack's Web API cannot be reached: {type(exc).__name__}: {exc}",
                f"{fix_for(cause, api_url)}; allow HTTPS to slack.com (through a proxy: set HTTPS_PROXY)",
                cause=cause,
            )
        )
        return rep
    try:
        ws = websocket.create_connection(url, timeout=timeout)
        try:
            hello = json.loads(ws.recv())
        finally:
            ws.close()
    except (websocket.WebSocketException, OSError, ValueError) as exc:
        rep.problems.append(
            CheckProblem(
                f"Slack gave a Socket Mode URL, but its websocket does not open: {type(exc).__name__}: {exc}",
                "allow outgoing websockets (wss://, port 443) to *.slack.com (a proxy: set HTTPS_PROXY)",
            )
        )
        return rep
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        rep.problems.append(
            CheckProblem(f"Slack's first Socket Mode message is not hello: {str(hello)[:200]}", "try again")
        )
        return rep
    n = hello.get("num_connections")
    rep.facts.append(
        f"Socket Mode connects ({time.monotonic() - started:.2f}s to Slack's hello"
        + (f"; {n} connection(s) of this app, this check's included)" if isinstance(n, int) else ")")
    )
    return rep
