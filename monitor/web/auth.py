"""Who may do what: the API token, the dashboard's session cookie, and read protection.

- Mutations (silences, acknowledgements) always need the token, ``Authorization: Bearer <token>``
  with the value of ``HEROWATCH_API_TOKEN``. With no token configured they are refused (403) with a
  message saying to set it. There is deliberately no exception for a loopback listener: on a shared
  login node every local user reaches 127.0.0.1, and any web page the on-call's browser opens can
  send requests to it (cross-site requests, DNS rebinding); a header token is immune to both.
- Reads (``/api/*`` GETs, the dashboard, ``/metrics``) are open by default; with
  ``HEROWATCH_PROTECT_READS=true`` they need the token too (header, or the dashboard's cookie).
  ``/healthz`` stays open for probes; ``/readyz`` tells anyone its verdict, and readers its details.
- The dashboard's login form takes the token once and starts a session, kept server side
  (``monitor.storage.login_sessions``: who, how, when it ends, whether it was revoked), so that logging
  out ends it at once, on every replica, and a changed token ends every session of the old one. The
  browser holds an HttpOnly, SameSite=Strict cookie (``Secure`` over https, or behind a trusted proxy
  that says https) with a random session id and an HMAC of it under the token (a forged or stale cookie
  is refused without a database lookup); the table keeps only the id's SHA-256. A session lasts 12
  hours. Each session has its own CSRF token (an HMAC of its id), shown only in the pages of that
  logged-in session and checked on every form POST (logout too), together with the request's
  ``Origin``/``Sec-Fetch-Site`` (monitor/web/dashboard/origin.py).
- API routes check their credentials before the request's body is read or validated
  (:class:`CredentialsFirst`): without them the answer is 401 or 403, whatever else is wrong.

Every comparison is constant-time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from monitor.settings import Settings
from monitor.storage import login_sessions
from monitor.web.context import ApiContext, context

log = logging.getLogger(__name__)
SESSION_COOKIE = "herowatch_session"
SESSION_MAX_AGE = 12 * 3600
_COOKIE_VERSION = "v3"  # v2 cookies (stateless, before sessions were kept server side) are no sessions
_SCOPE_KEY = "herowatch.session"  # the request's session, looked up once per request
NO_TOKEN = (
    "changes are disabled: no API token is configured. Set HEROWATCH_API_TOKEN in herowatch's "
    "environment and restart it, then send it as 'Authorization: Bearer <token>'"
)


@dataclass(frozen=True)
class DashboardSession:
    sid: str  # the random id in the cookie (the table keeps its SHA-256 only)
    subject: str  # who the session acts as: acks and silences carry it
    method: str  # how they signed in: "token"
    expires_at: float  # epoch seconds


def token_of(settings: Settings) -> bytes | None:
    tok = settings.api_token.get_secret_value() if settings.api_token is not None else ""
    return tok.encode() if tok else None


def _mac(tok: bytes, message: str) -> str:
    return hmac.new(tok, message.encode(), hashlib.sha256).hexdigest()


def _key_id(tok: bytes) -> str:
    """Which token a session was started under (stored with it; not the token, nor usable as one)."""
    return _mac(tok, "herowatch session key id v3")[:32]


def _row_key(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


def _cookie_mac(tok: bytes, sid: str) -> str:
    return _mac(tok, f"herowatch session {_COOKIE_VERSION}|{sid}")


def _cookie_sid(tok: bytes, value: str) -> str | None:
    """The session id in a cookie value, if its HMAC under the token is right."""
    if len(value) > 256:
        return None
    version, _, rest = value.partition(".")
    sid, _, mac = rest.partition(".")
    if version != _COOKIE_VERSION or not sid or not mac:
        return None
    return sid if hmac.compare_digest(_cookie_mac(tok, sid).encode(), mac.encode()) else None


def start_session(
    ctx: ApiContext, subject: str, method: str = "token", now: float | None = None
) -> tuple[DashboardSession, str]:
    """A new session for ``subject`` (recorded in the database) and its cookie value (the token must be
    configured)."""
    tok = token_of(ctx.settings)
    assert tok is not None, "no sessions without a token"
    at = time.time() if now is None else now
    sid = secrets.token_urlsafe(32)
    with ctx.sessions.begin() as s:
        row = login_sessions.start(
            s,
            _row_key(sid),
            subject=subject,
            method=method,
            key_id=_key_id(tok),
            now=at,
            lifetime=SESSION_MAX_AGE,
        )
        session = DashboardSession(sid, row.subject, row.method, row.expires_at)
    return session, f"{_COOKIE_VERSION}.{sid}.{_cookie_mac(tok, sid)}"


def session_of(request: Request, ctx: ApiContext, now: float | None = None) -> DashboardSession | None:
    """The request's dashboard session, if its cookie is genuine and the session current (not logged out,
    not expired, of today's token). Looked up once per request (a database read: call it from a worker
    thread, not the event loop)."""
    if _SCOPE_KEY in request.scope:
        return request.scope[_SCOPE_KEY]
    session = None
    tok = token_of(ctx.settings)
    sid = _cookie_sid(tok, request.cookies.get(SESSION_COOKIE) or "") if tok is not None else None
    if tok is not None and sid is not None:
        try:
            with ctx.sessions() as s:
                at = time.time() if now is None else now
                row = login_sessions.current(s, _row_key(sid), _key_id(tok), at)
                if row is not None:
                    session = DashboardSession(sid, row.subject, row.method, row.expires_at)
        except SQLAlchemyError as exc:  # the database is down: no session (/readyz still says why)
            log.warning("could not look up a dashboard session: %s", type(exc).__name__)
    request.scope[_SCOPE_KEY] = session
    return session


def end_session(request: Request, ctx: ApiContext, session: DashboardSession) -> None:
    """Log out: the session is revoked for every replica, its cookie no good from now on."""
    with ctx.sessions.begin() as s:
        login_sessions.revoke(s, _row_key(session.sid), time.time())
    request.scope[_SCOPE_KEY] = None


def end_other_tokens_sessions(ctx: ApiContext) -> int:
    """At start: the sessions of any other token than today's end for good (a token changed because it
    leaked must not revive them if it is ever changed back). Returns how many ended."""
    tok = token_of(ctx.settings)
    with ctx.sessions.begin() as s:
        return login_sessions.revoke_all_but(s, _key_id(tok) if tok is not None else None, time.time())


def csrf_token(settings: Settings, session: DashboardSession) -> str:
    """The CSRF token of one session: only that session's pages show it."""
    tok = token_of(settings)
    return _mac(tok, f"herowatch csrf v2|{session.sid}")[:43] if tok else ""


def csrf_ok(settings: Settings, session: DashboardSession | None, given: str | None) -> bool:
    if session is None or token_of(settings) is None:
        return False
    return hmac.compare_digest(csrf_token(settings, session).encode(), (given or "").encode())


def session_ok(request: Request, ctx: ApiContext) -> bool:
    return session_of(request, ctx) is not None


def token_matches(settings: Settings, given: str | None) -> bool:
    tok = token_of(settings)
    if tok is None or not given:
        return False
    return hmac.compare_digest(tok, given.encode())


def bearer_ok(request: Request, settings: Settings) -> bool:
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(settings, value.strip())


WRONG_TOKEN = (
    "the API token sent is not this server's: check HEROWATCH_API_TOKEN (a typo, an old token, or another "
    "herowatch?)"
)


def no_token_or_wrong(request: Request, needed: str) -> HTTPException:
    """401 that says which: no token was sent (``needed`` says how to send one), or the one sent is wrong."""
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return unauthorized(WRONG_TOKEN)
    return unauthorized(needed)


def unauthorized(message: str) -> HTTPException:
    return HTTPException(401, message, headers={"WWW-Authenticate": 'Bearer realm="herowatch"'})


async def require_write(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """API mutations: the bearer token, nothing else (a cookie would allow cross-site requests)."""
    if token_of(ctx.settings) is None:
        raise HTTPException(403, NO_TOKEN)
    if not bearer_ok(request, ctx.settings):
        raise no_token_or_wrong(
            request, "this needs the API token: send 'Authorization: Bearer <HEROWATCH_API_TOKEN>'"
        )


def may_read(request: Request, ctx: ApiContext) -> bool:
    return not ctx.settings.protect_reads or bearer_ok(request, ctx.settings) or session_ok(request, ctx)


async def require_read(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """API reads: open unless HEROWATCH_PROTECT_READS=true; then the token, or a dashboard session (looked
    up in a worker thread, and only when the request carries a session cookie)."""
    if not ctx.settings.protect_reads or bearer_ok(request, ctx.settings):
        return
    if SESSION_COOKIE in request.cookies and await run_in_threadpool(session_ok, request, ctx):
        return
    if token_of(ctx.settings) is None:
        raise HTTPException(
            403, "reads are protected (HEROWATCH_PROTECT_READS) but no HEROWATCH_API_TOKEN is set"
        )
    raise no_token_or_wrong(
        request, "reads are protected: send 'Authorization: Bearer <HEROWATCH_API_TOKEN>'"
    )


GATES = (require_read, require_write)


class CredentialsFirst(APIRoute):
    """An API route whose credentials (``require_read`` or ``require_write`` among its dependencies) are
    checked before FastAPI reads, parses and validates the request's body and parameters (which it does
    before it solves dependencies): a request without them gets its 401 or 403 whatever else is wrong
    with it, and an anonymous client never learns from a 422 how to form a request. FastAPI checks the
    same dependencies again afterwards (a constant-time comparison; a session is looked up once)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        gates = [d.call for d in self.dependant.dependencies if d.call in GATES]
        if not gates:
            return handler

        async def credentials_first(request: Request) -> Response:
            ctx: ApiContext = request.app.state.ctx
            for gate in gates:
                await gate(request, ctx)
            return await handler(request)

        return credentials_first
