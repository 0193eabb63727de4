"""The dashboard's pages about people: the audit trail (``/audit``) and one's personal API tokens
(``/tokens``: issue one for the CLI, see it once, revoke it; an admin sees and revokes everyone's)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from monitor.delivery.actor import Actor, Need, Role
from monitor.delivery.oncall import ActionError
from monitor.storage import audit_repo, views
from monitor.web import people_tokens
from monitor.web.context import ApiContext, context
from monitor.web.dashboard.forms import action_form, back, refused
from monitor.web.dashboard.pages import page
from monitor.web.identity import record_refusal
from monitor.web.schemas import db_id, epoch_seconds
from monitor.web.viewer import dashboard_actor, to_login

router = APIRouter(include_in_schema=False)
ACTIONS = set(audit_repo.ACTIONS)


@router.get("/audit")
def audit_page(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    """Who did what; anyone signed in (it names people, so never open to anonymous readers)."""
    if dashboard_actor(request, ctx) is None:
        return to_login(request)
    q = request.query_params
    person = (q.get("person") or "").strip()[:200] or None
    run = (q.get("run") or "").strip()[:512] or None
    action = q.get("action") if q.get("action") in ACTIONS else None
    try:
        since = epoch_seconds(q.get("since") or None)
    except ValueError as exc:
        return page(request, ctx, "error.html", 422, title="Bad time", message=f"since: {exc}")
    with ctx.sessions() as s:
        runs = [run, *(r.id for r in views.lookup_runs(s, run))] if run else []
        query = audit_repo.AuditQuery(person=person, run=runs, action=action, since=since, limit=500)
        rows = audit_repo.find(s, query)
    filters = {
        "person": person or "",
        "run": run or "",
        "action": action or "",
        "since": q.get("since") or "",
    }
    return page(request, ctx, "audit.html", rows=rows, filters=filters, actions=sorted(ACTIONS))


def _person(request: Request, ctx: ApiContext) -> Actor | None:
    actor = dashboard_actor(request, ctx)
    return actor if actor is not None and actor.role != Role.automation else None


@router.get("/tokens")
def tokens_page(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    actor = _person(request, ctx)
    if actor is None:
        if dashboard_actor(request, ctx) is None:
            return to_login(request)
        return page(
            request,
            ctx,
            "error.html",
            403,
            title="Personal tokens are for people",
            message="You are signed in with the shared automation token: sign in as yourself (the sign-in "
            "proxy or OpenID Connect) to issue a personal token.",
        )
    rows = people_tokens.listed(ctx, actor)
    return page(request, ctx, "tokens.html", rows=rows, issued=None, admin=actor.may(Need.admin))


@router.post("/tokens")
def issue_token(
    request: Request, form: dict[str, str] = Depends(action_form), ctx: ApiContext = Depends(context)
) -> Response:
    if not isinstance(actor := refused(request, ctx, form, Need.read), Actor):
        return actor
    try:
        _, token = people_tokens.issue(ctx, actor, form.get("label", ""))
    except ActionError as exc:
        if exc.status == 403:
            record_refusal(request, ctx, actor.name, actor.via, exc.message, actor.role.value)
        return page(request, ctx, "error.html", exc.status, title="No token issued", message=exc.message)
    rows = people_tokens.listed(ctx, actor)
    return page(request, ctx, "tokens.html", 201, rows=rows, issued=token, admin=actor.may(Need.admin))


@router.post("/tokens/{token_id}/revoke")
def revoke_token(
    token_id: db_id,
    request: Request,
    form: dict[str, str] = Depends(action_form),
    ctx: ApiContext = Depends(context),
) -> Response:
    if not isinstance(actor := refused(request, ctx, form, Need.read), Actor):
        return actor
    try:
        people_tokens.revoke(ctx, actor, token_id)
    except ActionError as exc:
        if exc.status == 403:
            record_refusal(request, ctx, actor.name, actor.via, exc.message, actor.role.value)
        return page(request, ctx, "error.html", exc.status, title="Not revoked", message=exc.message)
    return back("/tokens")
