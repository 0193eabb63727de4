"""Who may do what: the API token, the dashboard's session cookie, and read protection.

- Mutations (silences, acknowledgements) always need the token, ``Authorization: Bearer <token>``
  with the value of ``HEROWATCH_API_TOKEN``. With no token configured they are refused (403) with a
  message saying to set it. There is deliberately no exception for a loopback listener: on a shared
  login node every local user reaches 127.0.0.1, and any web page the on-call's browser opens can
  send requests to it (cross-site requests, DNS rebinding); a header token is immune to both.
- Reads (``/api/*`` GETs, the dashboard, ``/metrics``) are open by default; with
  ``HEROWATCH_PROTECT_READS=true`` they need the token too (header, or the dashboard's cookie).
  ``/healthz`` stays open for probes; ``/readyz`` tells anyone its verdict, and readers its details.
- The dashboard's login form takes the token once and starts a session: an HttpOnly, SameSite=Strict
  cookie (``Secure`` over https, or behind a trusted proxy that says https) holding a random session id,
  the person's name, when it started, and an HMAC of those under the token. Nothing is stored server
  side, so sessions work across replicas and restarts; a session lasts 12 hours, and changing the token
  ends every session. Each session has its own CSRF token (an HMAC of its id), shown only in the pages
  of that logged-in session and checked on every form POST (logout too), together with the request's
  ``Origin``/``Sec-Fetch-Site`` (monitor/web/dashboard/origin.py).

Every comparison is constant-time (``hmac.compare_digest``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request

from monitor.settings import Settings
from monitor.web.context import ApiContext, context

SESSION_COOKIE = "herowatch_session"
SESSION_MAX_AGE = 12 * 3600
_CLOCK_SKEW = 60.0  # a session "issued" this far in the future still counts (replicas' clocks differ)
NO_TOKEN = (
    "changes are disabled: no API token is configured. Set HEROWATCH_API_TOKEN in herowatch's "
    "environment and restart it, then send it as 'Authorization: Bearer <token>'"
)


@dataclass(frozen=True)
class DashboardSession:
    sid: str  # random, per login
    name: str  # who logged in: acks and silences carry it
    issued: int  # epoch seconds


def token_of(settings: Settings) -> bytes | None:
    tok = settings.api_token.get_secret_value() if settings.api_token is not None else ""
    return tok.encode() if tok else None


def _mac(tok: bytes, message: str) -> str:
    return hmac.new(tok, message.encode(), hashlib.sha256).hexdigest()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


def new_session(settings: Settings, name: str, now: float | None = None) -> tuple[DashboardSession, str]:
    """A fresh session for ``name`` and its cookie value (the token must be configured)."""
    tok = token_of(settings)
    assert tok is not None, "no sessions without a token"
    session = DashboardSession(secrets.token_urlsafe(18), name, int(time.time() if now is None else now))
    fields = f"{session.sid}.{session.issued}.{_b64(name)}"
    return session, f"v2.{fields}.{_mac(tok, 'herowatch session v2|' + fields)}"


def session_of(request: Request, settings: Settings, now: float | None = None) -> DashboardSession | None:
    """The request's dashboard session, if its cookie is genuine, current and made with today's token."""
    tok = token_of(settings)
    value = request.cookies.get(SESSION_COOKIE) or ""
    if tok is None or len(value) > 1024:
        return None
    version, _, rest = value.partition(".")
    fields, _, mac = rest.rpartition(".")
    if version != "v2" or not hmac.compare_digest(_mac(tok, "herowatch session v2|" + fields), mac):
        return None
    try:
        sid, issued, name = fields.split(".")
        session = DashboardSession(sid, _unb64(name), int(issued))
    except ValueError:  # (UnicodeDecodeError and binascii.Error are ValueErrors)
        return None
    age = (time.time() if now is None else now) - session.issued
    return session if -_CLOCK_SKEW <= age <= SESSION_MAX_AGE else None


def csrf_token(settings: Settings, session: DashboardSession) -> str:
    """The CSRF token of one session: only that session's pages show it."""
    tok = token_of(settings)
    return _mac(tok, f"herowatch csrf v2|{session.sid}")[:43] if tok else ""


def csrf_ok(settings: Settings, session: DashboardSession | None, given: str | None) -> bool:
    if session is None or token_of(settings) is None:
        return False
    return hmac.compare_digest(csrf_token(settings, session).encode(), (given or "").encode())


def session_ok(request: Request, settings: Settings) -> bool:
    return session_of(request, settings) is not None


def token_matches(settings: Settings, given: str | None) -> bool:
    tok = token_of(settings)
    if tok is None or not given:
        return False
    return hmac.compare_digest(tok, given.encode())


def bearer_ok(request: Request, settings: Settings) -> bool:
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(settings, value.strip())


def unauthorized(message: str) -> HTTPException:
    return HTTPException(401, message, headers={"WWW-Authenticate": 'Bearer realm="herowatch"'})


def require_write(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """API mutations: the bearer token, nothing else (a cookie would allow cross-site requests)."""
    if token_of(ctx.settings) is None:
        raise HTTPException(403, NO_TOKEN)
    if not bearer_ok(request, ctx.settings):
        raise unauthorized("this needs the API token: send 'Authorization: Bearer <HEROWATCH_API_TOKEN>'")


def may_read(request: Request, settings: Settings) -> bool:
    return not settings.protect_reads or bearer_ok(request, settings) or session_ok(request, settings)


async def require_read(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """API reads: open unless HEROWATCH_PROTECT_READS=true (async: a few HMACs, no worker thread)."""
    if may_read(request, ctx.settings):
        return
    if token_of(ctx.settings) is None:
        raise HTTPException(
            403, "reads are protected (HEROWATCH_PROTECT_READS) but no HEROWATCH_API_TOKEN is set"
        )
    raise unauthorized("reads are protected: send 'Authorization: Bearer <HEROWATCH_API_TOKEN>'")
