"""The dashboard's forms: log in with the API token, acknowledge, silence, expire a silence.

Plain HTML forms (they work with JavaScript off) posting url-encoded fields; each answers with a
redirect back (post/redirect/get) or the form again with the error. They call the same code as the
JSON API (``monitor.delivery.oncall``). A change needs the session cookie set by the login form and the
form's CSRF field.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from alerts.silences import split_matchers
from monitor.delivery.oncall import ActionError, ack_alert, create_silence, expire_silence
from monitor.web.api.auth import (
    NO_TOKEN,
    SESSION_COOKIE,
    SESSION_MAX_AGE,
    USER_COOKIE,
    csrf_ok,
    session_ok,
    session_value,
    token_matches,
    token_of,
)
from monitor.web.api.context import ApiContext, context
from monitor.web.api.schemas import SilenceIn
from monitor.web.dashboard.pages import page
from monitor.web.dashboard.viewer import safe_next, to_login, viewer_of

router = APIRouter(include_in_schema=False)
MAX_FORM = 64 * 1024


async def form_fields(request: Request) -> dict[str, str]:
    """The url-encoded form body as field -> last value (no multipart: nothing here uploads files)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "send the form url-encoded")
    body = await request.body()
    if len(body) > MAX_FORM:
        raise HTTPException(413, "form too large")
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=50)
    return {k: v[-1] for k, v in parsed.items()}


def referer_path(request: Request) -> str | None:
    """The path of the page the form was on, when it is this server's."""
    ref = request.headers.get("referer") or ""
    here = f"{request.url.scheme}://{request.url.netloc}"
    return ref[len(here) :] if ref.startswith(here + "/") else None


def back(target: str) -> RedirectResponse:
    return RedirectResponse(target, status_code=303)


def refused(request: Request, ctx: ApiContext, form: dict[str, str]) -> Response | None:
    """Why this change may not go ahead (as a page or a redirect to log in), or None."""
    if token_of(ctx.settings) is None:
        return page(request, ctx, "error.html", 403, title="Changes are disabled", message=NO_TOKEN)
    if not session_ok(request, ctx.settings):
        return to_login(request, safe_next(form.get("next"), safe_next(referer_path(request), "/alerts")))
    if not csrf_ok(ctx.settings, form.get("csrf")):
        return page(
            request,
            ctx,
            "error.html",
            403,
            title="Form expired",
            message="This form is out of date (the token may have changed). Reload the page and try again.",
        )
    return None


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
    name = form.get("name", "").strip()[:100]
    if token_of(ctx.settings) is None:
        return page(request, ctx, "login.html", 403, next=nxt, error=NO_TOKEN, name=name)
    if not name:
        return page(
            request,
            ctx,
            "login.html",
            422,
            next=nxt,
            error="Say who you are: acks and silences carry your name.",
            name=name,
        )
    if not token_matches(ctx.settings, form.get("token", "").strip()):
        return page(request, ctx, "login.html", 401, next=nxt, error="That is not the API token.", name=name)
    resp = back(nxt)
    secure = request.url.scheme == "https"
    resp.set_cookie(
        SESSION_COOKIE,
        session_value(ctx.settings) or "",
        max_age=SESSION_MAX_AGE,
        httponly=True,
        samesite="strict",
        secure=secure,
        path="/",
    )
    resp.set_cookie(
        USER_COOKIE, name, max_age=SESSION_MAX_AGE, httponly=True, samesite="strict", secure=secure, path="/"
    )
    return resp


@router.post("/logout")
def logout() -> Response:
    resp = back("/")
    resp.delete_cookie(SESSION_COOKIE, path="/")
    resp.delete_cookie(USER_COOKIE, path="/")
    return resp


# ---- actions ------------------------------------------------------------------------------------
@router.post("/alerts/{alert_id}/ack")
def ack(
    alert_id: int,
    request: Request,
    form: dict[str, str] = Depends(form_fields),
    ctx: ApiContext = Depends(context),
) -> Response:
    if (no := refused(request, ctx, form)) is not None:
        return no
    who = viewer_of(request, ctx.settings).name or "on-call"
    try:
        with ctx.sessions.begin() as s:
            ack_alert(s, alert_id, who, form.get("comment"), ctx.now())
    except ActionError as exc:
        return page(request, ctx, "error.html", exc.status, title="Not acknowledged", message=exc.message)
    return back(safe_next(form.get("next"), "/alerts"))


@router.post("/silences")
def silence(
    request: Request, form: dict[str, str] = Depends(form_fields), ctx: ApiContext = Depends(context)
) -> Response:
    if (no := refused(request, ctx, form)) is not None:
        return no
    who = viewer_of(request, ctx.settings).name or "on-call"
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
            created_by=who,
            comment=form.get("comment", ""),
        )
        with ctx.sessions.begin() as s:
            row = create_silence(s, body, ctx.now())
            created = row.id
    except ValidationError as exc:
        message = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        return page(request, ctx, "silence_new.html", 422, form=values, error=message)
    except ActionError as exc:
        return page(request, ctx, "silence_new.html", exc.status, form=values, error=exc.message)
    return back(f"/silences?created={created}")


@router.post("/silences/{silence_id}/expire")
def expire(
    silence_id: int,
    request: Request,
    form: dict[str, str] = Depends(form_fields),
    ctx: ApiContext = Depends(context),
) -> Response:
    if (no := refused(request, ctx, form)) is not None:
        return no
    try:
        with ctx.sessions.begin() as s:
            expire_silence(s, silence_id, ctx.now())
    except ActionError as exc:
        return page(request, ctx, "error.html", exc.status, title="Not expired", message=exc.message)
    return back("/silences")
