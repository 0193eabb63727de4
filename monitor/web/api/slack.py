"""Slack's interactivity endpoint: button clicks on herowatch's alert messages, and the ``/herowatch``
slash command (a form with ``command`` and ``text`` instead of ``payload``: monitor/web/slack/).

A request with the signature or timestamp header twice gets 400 (which copy counts is what a replay
with an extra junk header plays on). Slack signs every request; a missing, wrong or stale signature, or
a timestamp that is not a whole number of seconds, gets 401 and changes nothing. Then, in order: a
request already handled (the same verified signature: a replay) gets 409; a click from another workspace
than ``HEROWATCH_SLACK_TEAM_ID`` gets 403; a payload that is not a herowatch button click gets 400; a
click on anything but herowatch's own message for that alert group (channel and message ts as
herowatch posted them) gets 403. Only then does the click act. The body is at most
``HEROWATCH_MAX_BODY_SLACK`` bytes (monitor/web/edge.py).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from alerts.notifiers.slack.interactions import (
    AmbiguousRequest,
    BadPayload,
    BadSignature,
    Interaction,
    SlashCommand,
    parse_command,
    parse_form,
    parse_payload,
    verify_signature,
)
from monitor.delivery.actor import Via
from monitor.web.context import ApiContext, context
from monitor.web.identity import record_refusal
from monitor.web.slack import clicks, commands
from monitor.web.slack.replies import Refused, Reply, check_team

log = logging.getLogger(__name__)
router = APIRouter(tags=["slack"])


@router.post(
    "/api/slack/interactions",
    responses={
        400: {
            "description": "a signature header twice, or signed correctly but not a herowatch button "
            "or slash command"
        },
        401: {"description": "missing, wrong or stale Slack signature: nothing changed"},
        403: {"description": "another workspace, or not herowatch's message for that alert group"},
        409: {"description": "this signed request was already handled (a replay): nothing changed"},
        413: {"description": "body larger than HEROWATCH_MAX_BODY_SLACK"},
        503: {"description": "SLACK_SIGNING_SECRET is not set"},
    },
    summary="Slack button clicks (Acknowledge, Silence 1 h / 4 h, Capture stacks) and the /herowatch command",
    description="Configure this URL as the Slack app's interactivity request URL and as the /herowatch "
    "command's URL (`herowatch slack manifest` does both). Requests must carry Slack's signature "
    "(SLACK_SIGNING_SECRET); a bad or stale one is refused with 401.",
)
async def interactions(request: Request, ctx: ApiContext = Depends(context)) -> JSONResponse:
    secret = ctx.settings.slack_signing_secret
    if secret is None:
        raise HTTPException(503, "Slack interactivity is off: set SLACK_SIGNING_SECRET")
    body = await request.body()
    now = ctx.clock.time()
    try:
        signed = verify_signature(request.headers, body, secret.get_secret_value(), now)
    except AmbiguousRequest as exc:
        log.warning("refused a Slack interaction: %s", exc)
        raise await _refused(request, ctx, "?", 400, str(exc)) from None
    except BadSignature as exc:
        log.warning("refused a Slack interaction: %s", exc)
        raise await _refused(request, ctx, "?", 401, "bad or stale Slack signature") from None
    if not request.app.state.slack_replays.first_time(signed, now):
        log.warning("refused a Slack interaction: this signed request was already handled (a replay?)")
        raise await _refused(request, ctx, "?", 409, "this signed request was already handled (a replay?)")
    try:
        form = parse_form(body)
        if "payload" not in form and "command" in form:  # a slash command posts its fields
            return await _command(ctx, form, now)
        click = parse_payload(body)
    except BadPayload as exc:
        log.warning("refused a signed Slack request: not a herowatch action: %s", exc)
        raise HTTPException(400, f"not a herowatch action: {exc}") from None
    try:
        check_team(ctx.settings.slack_team_id, click.team_id)
        reply = await run_in_threadpool(_act, ctx, click, now)  # database work off the event loop
    except Refused as exc:
        log.warning("refused a Slack click by %s: %s", click.actor, exc.message)
        raise await _refused(request, ctx, click.actor, exc.status, exc.message) from None
    return JSONResponse(reply.message())


async def _refused(request: Request, ctx: ApiContext, who: str, status: int, why: str) -> HTTPException:
    """The refusal, recorded in the audit trail (within its budget) with who Slack said it was."""
    await run_in_threadpool(record_refusal, request, ctx, who[:200], Via.slack, why)
    return HTTPException(status, why)


def _act(ctx: ApiContext, click: Interaction, now: float) -> Reply:
    with ctx.sessions.begin() as s:
        return clicks.act(s, click, now, commands.CommandPorts.of(ctx))


def _answer(ctx: ApiContext, cmd: SlashCommand, now: float) -> Reply:
    with ctx.sessions.begin() as s:
        return commands.answer(commands.CommandPorts.of(ctx), s, cmd, now)


async def _command(ctx: ApiContext, form: dict[str, str], now: float) -> JSONResponse:
    """``/herowatch ...`` posted by Slack: answered in the response body (Slack shows it to the person)."""
    cmd = parse_command(form)
    try:
        check_team(ctx.settings.slack_team_id, cmd.team_id)
    except Refused as exc:
        log.warning("refused %s from workspace %r", cmd.command, cmd.team_id)
        raise HTTPException(exc.status, exc.message) from None
    reply = await run_in_threadpool(_answer, ctx, cmd, now)  # database work off the event loop
    return JSONResponse(reply.message())
