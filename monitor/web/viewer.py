"""Who is looking at the dashboard (``monitor.web.identity``: a proxy-signed person, a session, or nobody),
and what they may do."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from monitor.delivery.actor import Actor, Need, Via
from monitor.web.auth import csrf_token, session_of, signing_key
from monitor.web.context import ApiContext
from monitor.web.identity import actor_of, proxy_csrf, sign_in_configured


@dataclass(frozen=True)
class Viewer:
    token_set: bool  # some sign-in is configured: changes are possible at all
    logged_in: bool
    name: str
    role: str
    via: str  # token, proxy, oidc: the proxy's people cannot log out here
    csrf: str
    can_act: bool  # may acknowledge, silence, expire
    can_admin: bool


ANONYMOUS = Viewer(False, False, "", "", "", "", False, False)


def dashboard_actor(request: Request, ctx: ApiContext) -> Actor | None:
    """The actor of a dashboard request; a refused identity (headers not from the proxy) is nobody here,
    the gates of changes refuse it with its reason."""
    try:
        return actor_of(request, ctx)
    except HTTPException:
        return None


def csrf_of(request: Request, ctx: ApiContext, actor: Actor) -> str:
    if signing_key(ctx.settings) is None:
        return ""
    if actor.via == Via.proxy:
        return proxy_csrf(ctx.settings, actor)
    session = session_of(request, ctx)
    return csrf_token(ctx.settings, session) if session is not None else ""


def viewer_of(request: Request, ctx: ApiContext) -> Viewer:
    """Who is looking (a database read with a session cookie: from a worker thread)."""
    configured = sign_in_configured(ctx.settings)
    actor = dashboard_actor(request, ctx)
    if actor is None:
        return Viewer(configured, False, "", "", "", "", False, False)
    csrf = csrf_of(request, ctx, actor)
    return Viewer(
        token_set=configured,
        logged_in=True,
        name=actor.name,
        role=actor.role.value,
        via=actor.via.value,
        csrf=csrf,  # never shown to anonymous visitors
        can_act=bool(csrf) and actor.may(Need.respond),
        can_admin=bool(csrf) and actor.may(Need.admin),
    )


async def look_up_session(request: Request, ctx: ApiContext) -> None:
    """For async handlers: who is asking is found in a worker thread (a database read, once per request),
    so that ``viewer_of`` and ``may_see`` after it do not block the event loop."""
    await run_in_threadpool(dashboard_actor, request, ctx)


def may_see(request: Request, ctx: ApiContext) -> bool:
    return not ctx.settings.protect_reads or dashboard_actor(request, ctx) is not None


def safe_next(target: str | None, default: str = "/") -> str:
    """Only a path on this server: never an absolute or scheme-relative URL (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target


def to_login(request: Request, next_path: str | None = None) -> RedirectResponse:
    """To the login form, and back to ``next_path`` (default: this page) afterwards."""
    here = next_path or request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/login?next=" + quote(safe_next(here), safe=""), status_code=303)
