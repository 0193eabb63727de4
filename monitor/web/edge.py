"""Checks at the edge, as plain ASGI middleware, before any route runs or any body is read.

- :class:`BodyLimit`: a body larger than the limit for its path gets 413. A declared ``Content-Length``
  over the limit is refused before one byte of the body is read; a streamed (chunked) body is counted
  as it arrives and refused as soon as it passes the limit, so a 300 MB upload costs at most the limit
  in memory. Limits: ``/api/slack/`` (Slack's small form posts), other ``/api/`` (JSON), and the rest
  (the dashboard's forms), from ``HEROWATCH_MAX_BODY_SLACK`` / ``_API`` / ``_FORM``.
- :class:`HostCheck`: the ``Host`` header must name herowatch (``HEROWATCH_ALLOWED_HOSTS``), an IP
  address or localhost. DNS rebinding (a web page on ``attacker.example`` whose name is made to resolve
  to herowatch's address) always carries the attacker's name, never an IP literal, so it gets 400.
- :class:`CleanTarget`: a path or query string holding a NUL byte gets 422, like any other invalid
  parameter (PostgreSQL cannot store one in text, and no run, alert or filter has one).

Each refusal is JSON ``{"error": ...}`` with ``Connection: close``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


async def refuse(send: Send, status: int, message: str, detail: object = None) -> None:
    body = json.dumps({"error": message} if detail is None else {"error": message, "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class BodyTooLarge(Exception):
    """Raised from ``receive`` once a streamed body passes its limit (the middleware answers 413)."""


class BodyLimit:
    def __init__(self, app: ASGIApp, *, api: int, form: int, slack: int) -> None:
        self.app = app
        self.api, self.form, self.slack = api, form, slack

    def limit_for(self, path: str) -> int:
        if path.startswith("/api/slack/"):
            return self.slack
        return self.api if path.startswith("/api/") else self.form

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope.get("path", ""))
        too_large = f"request body over {limit} bytes (the limit for {scope.get('path', '')})"
        declared = header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await refuse(send, 400, "Content-Length is not a number")
                return
            if int(declared) > limit:
                await refuse(send, 413, too_large)
                return
        received = 0
        exceeded = started = answered = False

        async def counted() -> Message:
            nonlocal received, exceeded
            if exceeded:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge(too_large)
            return message

        async def guarded(message: Message) -> None:
            # Whatever the app made of the BodyTooLarge (FastAPI turns it into a 400 "error parsing the
            # body"), the client gets the 413.
            nonlocal started, answered
            if exceeded and not started:
                if message["type"] == "http.response.start" and not answered:
                    answered = True
                    await refuse(send, 413, too_large)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except BodyTooLarge:
            if not started and not answered:
                await refuse(send, 413, too_large)


def _host_name(value: str) -> str:
    """The name in a Host header, without the port; IPv6 literals keep their brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    name, sep, port = value.rpartition(":")
    return name if sep and port.isdigit() else value


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class HostCheck:
    MAX_LOGGED = 100  # refused names logged once each, up to this many (a scan must not flood the log)

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        names = {a.strip().lower().rstrip(".") for a in allowed if a.strip()}
        self.any = "*" in names
        self.exact = {n for n in names if not n.startswith("*.")} | {"localhost"}
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))  # "*.example.com" -> ".example.com"
        self.logged: set[str] = set()

    def allows(self, host_header: str | None) -> bool:
        if self.any or host_header is None:  # HTTP/1.0 without Host: no browser, no rebinding
            return True
        name = _host_name(host_header).rstrip(".")
        if is_ip_literal(name) or name in self.exact:
            return True
        return bool(self.suffixes) and name.endswith(self.suffixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = header(scope, b"host")
        if self.allows(host):
            await self.app(scope, receive, send)
            return
        name = _host_name(host or "")[:100]
        if name not in self.logged and len(self.logged) < self.MAX_LOGGED:
            self.logged.add(name)
            log.warning("refused a request for host %r: not in HEROWATCH_ALLOWED_HOSTS", name)
        await refuse(
            send,
            400,
            f"host {name!r} is not served here: add the names clients use to HEROWATCH_ALLOWED_HOSTS "
            "(comma-separated, e.g. herowatch.example.com)",
        )


class CleanTarget:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = scope.get("query_string", b"").lower()
            where = "path" if "\x00" in scope.get("path", "") else None
            if b"%00" in query or b"\x00" in query:
                where = "query"
            if where is not None:
                msg = "holds a NUL byte"
                detail = [{"loc": [where], "msg": msg, "type": "value_error"}]
                await refuse(send, 422, f"invalid request: {where}: {msg}", detail)
                return
        await self.app(scope, receive, send)
