"""Who may do what: the API token, the dashboard's session cookie, and read protection.

- Mutations (silences, acknowledgements) always need the token, ``Authorization: Bearer <token>``
  with the value of ``HEROWATCH_API_TOKEN``. With no token configured they are refused (403) with a
  message saying to set it. There is deliberately no exception for a loopback listener: on a shared
  login node every local user reaches 127.0.0.1, and any web page the on-call's browser opens can
  send requests to it (cross-site requests, DNS rebinding); a header token is immune to both.
- Reads (``/api/*`` GETs, the dashboard, ``/metrics``) are open by default; with
  ``HEROWATCH_PROTECT_READS=true`` they need the token too (header, or the dashboard's cookie).
  ``/healthz`` and ``/readyz`` stay open for probes.
- The dashboard's login form takes the token once and sets an HttpOnly, SameSite=Strict cookie that
  holds an HMAC of the token (never the token itself); its forms carry a CSRF field derived the same
  way. Changing the token logs every browser out.

Every comparison is constant-time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Depends, HTTPException, Request

from monitor.settings import Settings
from monitor.web.api.context import ApiContext, context

SESSION_COOKIE = "herowatch_session"
USER_COOKIE = "herowatch_user"
SESSION_MAX_AGE = 12 * 3600
NO_TOKEN = (
    "changes are disabled: no API token is configured. Set HEROWATCH_API_TOKEN in herowatch's "
    "environment and restart it, then send it as 'Authorization: Bearer <token>'"
)


def token_of(settings: Settings) -> bytes | None:
    tok = settings.api_token.get_secret_value() if settings.api_token is not None else ""
    return tok.encode() if tok else None


def _derive(tok: bytes, purpose: str) -> str:
    return hmac.new(tok, f"herowatch dashboard {purpose} v1".encode(), hashlib.sha256).hexdigest()


def session_value(settings: Settings) -> str | None:
    tok = token_of(settings)
    return _derive(tok, "session") if tok else None


def csrf_value(settings: Settings) -> str | None:
    tok = token_of(settings)
    return _derive(tok, "csrf")[:40] if tok else None


def token_matches(settings: Settings, given: str | None) -> bool:
    tok = token_of(settings)
    if tok is None or not given:
        return False
    return hmac.compare_digest(tok, given.encode())


def bearer_ok(request: Request, settings: Settings) -> bool:
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(settings, value.strip())


def session_ok(request: Request, settings: Settings) -> bool:
    want = session_value(settings)
    got = request.cookies.get(SESSION_COOKIE) or ""
    return want is not None and hmac.compare_digest(want.encode(), got.encode())


def csrf_ok(settings: Settings, given: str | None) -> bool:
    want = csrf_value(settings)
    return want is not None and hmac.compare_digest(want.encode(), (given or "").encode())


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


def require_read(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """API reads: open unless HEROWATCH_PROTECT_READS=true."""
    if may_read(request, ctx.settings):
        return
    if token_of(ctx.settings) is None:
        raise HTTPException(
            403, "reads are protected (HEROWATCH_PROTECT_READS) but no HEROWATCH_API_TOKEN is set"
        )
    raise unauthorized("reads are protected: send 'Authorization: Bearer <HEROWATCH_API_TOKEN>'")
