"""What each API route needs (``Need``: read, respond, admin) and the gates that check it, before the
request's body is read (``CredentialsFirst``). The roles' grants are ``monitor.delivery.actor.GRANTS``;
docs/security.md has the table of routes and roles that ``tests/security/test_role_sweep.py`` checks.

- Reads are open unless ``HEROWATCH_PROTECT_READS=true``; then any signed-in actor may read.
- Changes need an actor whose role grants them: the automation token, a personal token, a person from the
  sign-in proxy. A dashboard session is never enough for the JSON API (a cookie would let any web page
  drive it); a proxy-signed person's API change must come from herowatch's own origin for the same
  reason (``monitor.web.origin``).
- A refused request is a 401 (nobody), or a 403 naming the role it needed; both are recorded in the
  audit trail (``monitor.web.identity``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from monitor.delivery.actor import Actor, Need, Via
from monitor.web.auth import NO_TOKEN, unauthorized
from monitor.web.context import ApiContext, context
from monitor.web.identity import actor_of, record_refusal, sign_in_configured
from monitor.web.origin import cross_origin

WHO_MAY = {Need.read: "anyone signed in", Need.respond: "a responder or admin", Need.admin: "an admin"}


async def _check(request: Request, ctx: ApiContext, need: Need, always: bool = False) -> Actor | None:
    if need == Need.read and not ctx.settings.protect_reads and not always:
        return None
    if not sign_in_configured(ctx.settings):
        if need == Need.read and always:
            raise HTTPException(
                403,
                "the audit trail names people, so it needs sign-in: configure an API token "
                "(HEROWATCH_API_TOKEN), OpenID Connect (HEROWATCH_OIDC_ISSUER) or a sign-in proxy "
                "(HEROWATCH_AUTH_PROXIES)",
            )
        if need == Need.read:
            raise HTTPException(
                403,
                "reads are protected (HEROWATCH_PROTECT_READS) but no sign-in is configured: set "
                "HEROWATCH_API_TOKEN or HEROWATCH_OIDC_ISSUER",
            )
        raise HTTPException(403, NO_TOKEN)
    actor = await run_in_threadpool(actor_of, request, ctx)
    if actor is not None and need != Need.read and actor.via in (Via.oidc, Via.token) and _by_cookie(request):
        actor = None  # a session cookie is the dashboard's: the API's changes take a header
    if actor is None:
        raise unauthorized(
            "this needs credentials: 'Authorization: Bearer <token>' (a personal token or "
            "HEROWATCH_API_TOKEN), or sign in through the sign-in proxy"
        )
    if not actor.may(need):
        why = f"{actor.name} is a {actor.role.value}: this needs {WHO_MAY[need]}"
        await run_in_threadpool(record_refusal, request, ctx, actor.name, actor.via, why, actor.role.value)
        raise HTTPException(403, f"refused: {why}")
    if need != Need.read and actor.via == Via.proxy and (why := cross_origin(request)) is not None:
        raise HTTPException(403, f"refused: {why}")
    return actor


def may_read(request: Request, ctx: ApiContext) -> bool:
    """For answers that show more to readers (``/readyz``); a database read with a session cookie."""
    if not ctx.settings.protect_reads:
        return True
    try:
        return actor_of(request, ctx) is not None
    except HTTPException:
        return False


def _by_cookie(request: Request) -> bool:
    return not (request.headers.get("authorization") or "").strip()


async def require_read(request: Request, ctx: ApiContext = Depends(context)) -> None:
    await _check(request, ctx, Need.read)


async def require_signed_in(request: Request, ctx: ApiContext = Depends(context)) -> None:
    """Reads that name people (the audit trail): anyone signed in, whether or not reads are protected."""
    await _check(request, ctx, Need.read, always=True)


async def require_respond(request: Request, ctx: ApiContext = Depends(context)) -> None:
    await _check(request, ctx, Need.respond)


async def require_admin(request: Request, ctx: ApiContext = Depends(context)) -> None:
    await _check(request, ctx, Need.admin)


require_write = require_respond  # the name routes used before roles
GATES: dict[Callable[..., Any], Need] = {
    require_read: Need.read,
    require_signed_in: Need.read,
    require_respond: Need.respond,
    require_admin: Need.admin,
}


def acting(request: Request) -> Actor:
    """The actor a gated change runs as (its gate has found it)."""
    actor = actor_of(request, request.app.state.ctx)  # cached in the request's scope by the gate
    assert actor is not None, "a change route without a gate"
    return actor


def need_of(route: APIRoute) -> Need | None:
    """What an API route needs (None: no gate, e.g. Slack's signed endpoint or the probes)."""
    needs = [GATES[d.call] for d in route.dependant.dependencies if d.call in GATES]
    return max(needs, key=list(Need).index) if needs else None


class CredentialsFirst(APIRoute):
    """An API route whose gate (``require_read``, ``require_respond`` or ``require_admin`` among its
    dependencies) is checked before FastAPI reads, parses and validates the request's body and parameters
    (which it does before it solves dependencies): a request without credentials gets its 401 or 403
    whatever else is wrong with it, and an anonymous client never learns from a 422 how to form a
    request. FastAPI checks the same dependencies again afterwards (the actor is found once)."""

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
