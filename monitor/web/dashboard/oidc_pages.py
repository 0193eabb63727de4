"""Sign-in with OpenID Connect, the dashboard's side (``monitor.web.oidc`` talks to the provider):
``/auth/oidc/login`` sends the browser to the provider, ``/auth/oidc/callback`` brings it back signed in
(a session of the person, with the role of their groups) or says why not. Logging out (``/logout``) ends
the session here, and at the provider when it offers an end-session endpoint."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from alerts.text import bad_character
from monitor.delivery.actor import Actor, Door, Via
from monitor.web.auth import SESSION_COOKIE, SESSION_MAX_AGE, signing_key, start_session
from monitor.web.context import ApiContext, context
from monitor.web.dashboard.forms import signed_in
from monitor.web.dashboard.pages import page
from monitor.web.identity import record_refusal, role_of_groups
from monitor.web.oidc import (
    PENDING_COOKIE,
    PENDING_MAX_AGE,
    PENDING_PATH,
    OidcError,
    Provider,
    new_pending,
    seal,
    unseal,
)
from monitor.web.viewer import safe_next

router = APIRouter(include_in_schema=False)
NOT_SET_UP = "OpenID Connect is not set up (HEROWATCH_OIDC_ISSUER, HEROWATCH_OIDC_CLIENT_ID)"


def redirect_uri(request: Request, ctx: ApiContext) -> str:
    base = (ctx.external_url or str(request.base_url)).rstrip("/")
    return f"{base}{PENDING_PATH}/callback"


def _provider(request: Request) -> Provider | None:
    return request.app.state.oidc


def _no(request: Request, ctx: ApiContext, status: int, message: str, who: str = "?") -> Response:
    if status in (400, 401, 403):
        record_refusal(request, ctx, who, Via.oidc, message)
    resp = page(request, ctx, "error.html", status, title="Not signed in", message=message)
    resp.delete_cookie(PENDING_COOKIE, path=PENDING_PATH)
    return resp


@router.get(f"{PENDING_PATH}/login")
def oidc_login(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    provider, key = _provider(request), signing_key(ctx.settings)
    if provider is None:
        return page(
            request, ctx, "error.html", 404, title="Not set up", message="OpenID Connect is not set up"
        )
    if key is None:
        return page(
            request,
            ctx,
            "error.html",
            503,
            title="Not set up",
            message="set HEROWATCH_SECRET_KEY to sign people in",
        )
    pending = new_pending(safe_next(request.query_params.get("next")))
    try:
        url = provider.authorize_url(redirect_uri(request, ctx), pending)
    except OidcError as exc:
        return page(request, ctx, "error.html", 502, title="Sign-in unavailable", message=str(exc))
    resp = RedirectResponse(url, status_code=303)
    resp.set_cookie(
        PENDING_COOKIE,
        seal(key, pending),
        max_age=PENDING_MAX_AGE,
        path=PENDING_PATH,
        httponly=True,
        samesite="lax",  # the provider's redirect back is a top-level navigation from its site
        secure=request.url.scheme == "https",
    )
    return resp


@router.get(f"{PENDING_PATH}/callback")
def oidc_callback(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    provider, key = _provider(request), signing_key(ctx.settings)
    if provider is None or key is None:
        return page(
            request, ctx, "error.html", 404, title="Not set up", message="OpenID Connect is not set up"
        )
    q = request.query_params
    pending = unseal(key, request.cookies.get(PENDING_COOKIE))
    if pending is None:
        return _no(request, ctx, 400, "This sign-in has expired or was not started here: sign in again.")
    if not hmac.compare_digest(pending.state.encode(), (q.get("state") or "").encode()):
        return _no(request, ctx, 400, "This sign-in does not match the one started here: sign in again.")
    if q.get("error"):
        said = (q.get("error") or "")[:100]
        said = said if bad_character(said) is None else "an error"
        return _no(request, ctx, 401, f"The sign-in provider refused: {said}.")
    code = q.get("code") or ""
    if not code or len(code) > 2048:
        return _no(request, ctx, 400, "The sign-in provider sent no code.")
    try:
        person = provider.finish(redirect_uri(request, ctx), pending, code)
    except OidcError as exc:
        return _no(request, ctx, 401, f"Not signed in: {exc}.")
    if bad_character(person.name) is not None:
        return _no(request, ctx, 400, "The sign-in provider's name for you is not plain text.")
    role = role_of_groups(ctx.settings, set(person.groups))
    if role is None:
        why = f"none of {person.name}'s groups has a role here (HEROWATCH_ROLE_GROUPS)"
        return _no(request, ctx, 403, f"Signed in, but {why}.", who=person.name)
    _, cookie = start_session(ctx, person.name, method=Via.oidc.value, role=role.value)
    signed_in(ctx, Actor(name=person.name, role=role, door=Door.dashboard, via=Via.oidc), "OpenID Connect")
    resp = RedirectResponse(pending.next, status_code=303)
    resp.delete_cookie(PENDING_COOKIE, path=PENDING_PATH)
    resp.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_MAX_AGE,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return resp
