"""The dashboard's forms: log in with the API token, acknowledge, silence, expire a silence, capture a
run's stacks.

Plain HTML forms (they work with JavaScript off) posting url-encoded fields; each answers with a
redirect back (post/redirect/get) or the form again with the error. They call the same code as the
JSON API (``monitor.delivery.oncall``). A change needs the session cookie set by the login form, the
session's own CSRF token in the form, and a request from herowatch's own origin (``origin.py``);
logging out too. Wrong tokens at the login form are throttled per client address (``throttle.py``).
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from alerts.silences import split_matchers
from monitor.delivery.actor import Actor, Door, Need, Role, Via
from monitor.delivery.oncall import ActionError, ack_alert, audit, expire_silence
from monitor.web.auth import (
    NO_TOKEN,
    SESSION_COOKIE,
    SESSION_MAX_AGE,
    csrf_ok,
    end_session,
    session_of,
    start_session,
    token_matches,
    token_of,
)
from monitor.web.context import ApiContext, context
from monitor.web.dashboard.pages import page
from monitor.web.dashboard.templating import run_url
from monitor.web.gates import WHO_MAY
from monitor.web.identity import actor_of, record_refusal, sign_in_configured
from monitor.web.oncall_schemas import SilenceIn
from monitor.web.origin import cross_origin
from monitor.web.schemas import db_id
from monitor.web.silences import create_from
from monitor.web.stacks_view import capture_now
from monitor.web.viewer import csrf_of, dashboard_actor, look_up_session, safe_next, to_login

router = APIRouter(include_in_schema=False)
MAX_FIELDS = 20  # the largest form has 6; a body is bounded by HEROWATCH_MAX_BODY_FORM as well
MAX_NAME = 100


def same_origin(request: Request) -> None:
    """Forms are accepted from herowatch's own pages only (``origin.py``)."""
    if (why := cross_origin(request)) is not None:
        raise HTTPException(403, f"refused: {why}. Use the form on herowatch's own page.")


async def read_form(request: Request) -> dict[str, str]:
    """The url-encoded form body as field -> last value (no multipart: nothing here uploads files)."""
    body = await request.body()
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if body and kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "send the form url-encoded")
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not UTF-8") from None
    except ValueError:
        raise HTTPException(400, f"the form has more than {MAX_FIELDS} fields") from None
    fields = {k: v[-1] for k, v in parsed.items()}
    if any("\x00" in k or "\x00" in v for k, v in fields.items()):
        raise HTTPException(400, "the form holds a NUL byte")
    return fields


async def form_fields(request: Request) -> dict[str, str]:
    """Logging in and out: the form, from one of herowatch's own pages."""
    same_origin(request)
    return await read_form(request)


async def action_form(request: Request, ctx: ApiContext = Depends(context)) -> dict[str, str]:
    """The form of a change (ack, silence, expire), credentials first: without a session the body is not
    read at all (``refused`` sends the browser to log in, back to the page the form was on)."""
    same_origin(request)
    await look_up_session(request, ctx)
    if dashboard_actor(request, ctx) is None:
        return {}
    return await read_form(request)


def client_of(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def referer_path(request: Request) -> str | None:
    """The path of the page the form was on, when it is this server's."""
    ref = request.headers.get("referer") or ""
    here = f"{request.url.scheme}://{request.url.netloc}"
    return ref[len(here) :] if ref.startswith(here + "/") else None


def back(target: str) -> RedirectResponse:
    return RedirectResponse(target, status_code=303)


def refused(
    request: Request, ctx: ApiContext, form: dict[str, str], need: Need = Need.respond
) -> Response | Actor:
    """Why this change may not go ahead (as a page or a redirect to log in), or who does it."""
    if not sign_in_configured(ctx.settings):
        return page(request, ctx, "error.html", 403, title="Changes are disabled", message=NO_TOKEN)
    try:
        actor = actor_of(request, ctx)
    except HTTPException as exc:
        return page(request, ctx, "error.html", exc.status_code, title="Refused", message=str(exc.detail))
    if actor is None:
        return to_login(request, safe_next(form.get("next"), safe_next(referer_path(request), "/alerts")))
    csrf = csrf_of(request, ctx, actor)
    if not csrf or not hmac.compare_digest(csrf.encode(), (form.get("csrf") or "").encode()):
        return page(
            request,
            ctx,
            "error.html",
            403,
            title="Form expired",
            message="This form is out of date (the token may have changed). Reload the page and try again.",
        )
    if not actor.may(need):
        why = f"{actor.name} is a {actor.role.value}: this needs {WHO_MAY[need]}"
        record_refusal(request, ctx, actor.name, actor.via, why, actor.role.value)
        return page(request, ctx, "error.html", 403, title="Not allowed", message=why)
    return actor


def signed_in(ctx: ApiContext, actor: Actor, how: str) -> None:
    with ctx.sessions.begin() as s:
        audit(s, actor, "sign_in", "session", ctx.now(), detail=f"with {how} as {actor.role.value}")


# ---- login --------------------------------------------------------------------------------------
@router.get("/login")
def login_form(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    nxt = safe_next(request.query_params.get("next"))
    return page(request, ctx, "login.html", next=nxt, error=None, name="")


@router.post("/login")
def login(
    request: Request, form: dict[str, str] = Depends(form_fields), ctx: ApiContext = Depends(context)
) -> Response:
    nxt = safe_next(form.get("next"))
    name = form.get("name", "").strip()[:MAX_NAME]
    if token_of(ctx.settings) is None:
        return page(request, ctx, "login.html", 403, next=nxt, error=NO_TOKEN, name=name)
    throttle = request.app.state.login_throttle
    client = client_of(request)
    if (wait := throttle.retry_after(client)) is not None:
        error = f"Too many wrong tokens from {client}: try again in {int(wait) + 1} seconds."
        resp = page(request, ctx, "login.html", 429, next=nxt, error=error, name=name)
        resp.headers["Retry-After"] = str(int(wait) + 1)
        return resp
    if not name or not name.isprintable():
        return page(
            request,
            ctx,
            "login.html",
            422,
            next=nxt,
            error="Say who you are (plain text): acks and silences carry your name.",
            name=name if name.isprintable() else "",
        )
    if not token_matches(ctx.settings, form.get("token", "").strip()):
        throttle.failed(client)
        record_refusal(request, ctx, f"{name} (unverified)", Via.token, "a wrong token at the login form")
        return page(request, ctx, "login.html", 401, next=nxt, error="That is not the API token.", name=name)
    throttle.succeeded(client)
    session, cookie = start_session(ctx, name)
    signed_in(ctx, Actor.automation(Door.dashboard, said=name), "the automation token")
    resp = back(nxt)
    resp.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_MAX_AGE,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",  # behind TLS, or a trusted proxy that says so
        path="/",
    )
    return resp


@router.post("/logout")
def logout(
    request: Request, form: dict[str, str] = Depends(form_fields), ctx: ApiContext = Depends(context)
) -> Response:
    session = session_of(request, ctx)
    if session is not None and not csrf_ok(ctx.settings, session, form.get("csrf")):
        return page(
            request,
            ctx,
            "error.html",
            403,
            title="Form expired",
            message="This form is out of date. Reload the page and log out again.",
        )
    if session is not None:
        end_session(request, ctx, session)  # on every replica, whoever still holds the cookie
        who = Actor.automation(Door.dashboard, said=session.subject)
        if session.method == Via.oidc:
            who = Actor(name=session.subject, role=Role(session.role), door=Door.dashboard, via=Via.oidc)
        with ctx.sessions.begin() as s:
            audit(s, who, "sign_out", "session", ctx.now())
    resp = back("/")
    provider = request.app.state.oidc
    if session is not None and session.method == Via.oidc and provider is not None:
        # and at the provider too, when it offers that (RP-initiated logout)
        if (url := provider.end_session_url(str(request.base_url))) is not None:
            resp = back(url)
    resp.delete_cookie(SESSION_COOKIE, path="/", secure=request.url.scheme == "https", httponly=True)
    return resp


# ---- actions ------------------------------------------------------------------------------------
@router.post("/alerts/{alert_id}/ack")
def ack(
    alert_id: db_id,
    request: Request,
    form: dict[str, str] = Depends(action_form),
    ctx: ApiContext = Depends(context),
) -> Response:
    if not isinstance(actor := refused(request, ctx, form), Actor):
        return actor
    try:
        with ctx.sessions.begin() as s:
            ack_alert(s, alert_id, actor, form.get("comment"), ctx.now())
    except ActionError as exc:
        return page(request, ctx, "error.html", exc.status, title="Not acknowledged", message=exc.message)
    return back(safe_next(form.get("next"), "/alerts"))


@router.post("/silences")
def silence(
    request: Request, form: dict[str, str] = Depends(action_form), ctx: ApiContext = Depends(context)
) -> Response:
    if not isinstance(actor := refused(request, ctx, form), Actor):
        return actor
    lines = split_matchers(form.get("matchers", ""))
    values = {
        "matchers": form.get("matchers", ""),
        "duration": form.get("duration", ""),
        "comment": form.get("comment", ""),
        "alert": form.get("alert", ""),
    }
    try:
        body = SilenceIn(
            matchers=lines,
            duration=form.get("duration") or None,
            comment=form.get("comment", ""),
        )
        with ctx.sessions.begin() as s:
            row = create_from(s, body, actor, ctx.now())
            created = row.id
    except ValidationError as exc:
        message = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        return page(request, ctx, "silence_new.html", 422, form=values, error=message)
    except ActionError as exc:
        return page(request, ctx, "silence_new.html", exc.status, form=values, error=exc.message)
    return back(f"/silences?created={created}")


@router.post("/silences/{silence_id}/expire")
def expire(
    silence_id: db_id,
    request: Request,
    form: dict[str, str] = Depends(action_form),
    ctx: ApiContext = Depends(context),
) -> Response:
    if not isinstance(actor := refused(request, ctx, form), Actor):
        return actor
    try:
        with ctx.sessions.begin() as s:
            expire_silence(s, silence_id, actor, ctx.now())
    except ActionError as exc:
        return page(request, ctx, "error.html", exc.status, title="Not expired", message=exc.message)
    return back("/silences")


@router.post("/runs/{run_id:path}/stacks")
def capture(
    run_id: str,
    request: Request,
    form: dict[str, str] = Depends(action_form),
    ctx: ApiContext = Depends(context),
) -> Response:
    """Capture the run's stacks now (a responder; audited); back to the run page, which waits for them."""
    if not isinstance(actor := refused(request, ctx, form), Actor):
        return actor
    with ctx.sessions.begin() as s:  # a refusal is committed too: it is in the audit trail
        try:
            capture_now(ctx, s, run_id, actor)
        except ActionError as exc:
            failed = exc
        else:
            failed = None
    if failed is not None:
        return page(request, ctx, "error.html", failed.status, title="Not captured", message=failed.message)
    return back(run_url(run_id) + "#stacks")
