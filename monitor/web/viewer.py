"""Who is looking at the dashboard: logged in (the session cookie) or not, and what they may do."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from monitor.web.auth import SESSION_COOKIE, bearer_ok, csrf_token, session_of, session_ok, token_of
from monitor.web.context import ApiContext


@dataclass(frozen=True)
class Viewer:
    token_set: bool  # HEROWATCH_API_TOKEN is configured: changes are possible at all
    logged_in: bool
    name: str
    csrf: str

    @property
    def can_act(self) -> bool:
        return self.token_set and self.logged_in


def viewer_of(request: Request, ctx: ApiContext) -> Viewer:
    """Who is looking (a database read when the request has a session cookie: from a worker thread)."""
    session = session_of(request, ctx)
    return Viewer(
        token_set=token_of(ctx.settings) is not None,
        logged_in=session is not None,
        name=session.subject if session else "",
        csrf=csrf_token(ctx.settings, session) if session else "",  # never shown to anonymous visitors
    )


async def look_up_session(request: Request, ctx: ApiContext) -> None:
    """For async handlers: the request's session is looked up in a worker thread (a database read, once
    per request), so that ``viewer_of`` and ``may_see`` after it do not block the event loop."""
    if SESSION_COOKIE in request.cookies:
        await run_in_threadpool(session_of, request, ctx)


def may_see(request: Request, ctx: ApiContext) -> bool:
    settings = ctx.settings
    return not settings.protect_reads or bearer_ok(request, settings) or session_ok(request, ctx)


def safe_next(target: str | None, default: str = "/") -> str:
    """Only a path on this server: never an absolute or scheme-relative URL (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target


def to_login(request: Request, next_path: str | None = None) -> RedirectResponse:
    """To the login form, and back to ``next_path`` (default: this page) afterwards."""
    here = next_path or request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/login?next=" + quote(safe_next(here), safe=""), status_code=303)
