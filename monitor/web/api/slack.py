"""Slack's interactivity endpoint: button clicks on herowatch's alert messages.

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
    parse_payload,
    verify_signature,
)
from monitor.delivery import oncall
from monitor.storage import groups_repo
from monitor.web.context import ApiContext, context

log = logging.getLogger(__name__)
router = APIRouter(tags=["slack"])


@router.post(
    "/api/slack/interactions",
    responses={
        400: {"description": "a signature header twice, or signed correctly but not a herowatch button"},
        401: {"description": "missing, wrong or stale Slack signature: nothing changed"},
        403: {"description": "another workspace, or not herowatch's message for that alert group"},
        409: {"description": "this signed request was already handled (a replay): nothing changed"},
        413: {"description": "body larger than HEROWATCH_MAX_BODY_SLACK"},
        503: {"description": "SLACK_SIGNING_SECRET is not set"},
    },
    summary="Slack button clicks (Acknowledge, Silence 1 h / 4 h)",
    description="Configure this URL as the Slack app's interactivity request URL. Requests must "
    "carry Slack's signature (SLACK_SIGNING_SECRET); a bad or stale one is refused with 401.",
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
        raise HTTPException(400, str(exc)) from None
    except BadSignature as exc:
        log.warning("refused a Slack interaction: %s", exc)
        raise HTTPException(401, "bad or stale Slack signature") from None
    if not request.app.state.slack_replays.first_time(signed, now):
        log.warning("refused a Slack interaction: this signed request was already handled (a replay?)")
        raise HTTPException(409, "this signed request was already handled (a replay?)")
    try:
        action = parse_payload(body)
    except BadPayload as exc:
        log.warning("refused a signed Slack request: not a herowatch action: %s", exc)
        raise HTTPException(400, f"not a herowatch action: {exc}") from None
    team = ctx.settings.slack_team_id
    if team and action.team_id != team:
        log.warning("refused a Slack click from workspace %r (expected %r)", action.team_id, team)
        raise HTTPException(403, "this Slack workspace is not the one herowatch serves")
    result = await run_in_threadpool(act, ctx, action, now)  # database work off the event loop
    log.info("slack %s by %s on %s: %s", action.action, action.user_name, action.group_key, result.text)
    return JSONResponse({"response_type": "ephemeral", "replace_original": False, "text": result.text})


def act(ctx: ApiContext, action: Interaction, now: float) -> oncall.Outcome:
    """The click's on-call action, on herowatch's own message for that alert group only (else 403)."""
    who = action.user_name or action.user_id
    with ctx.sessions.begin() as s:
        group = groups_repo.by_root(s, action.group_key, f"{action.channel_id}:{action.message_ts}")
        if group is None:
            log.warning(
                "refused a Slack click on %s:%s: not herowatch's message for group %s",
                action.channel_id,
                action.message_ts,
                action.group_key,
            )
            raise HTTPException(403, "this button is not on herowatch's message for that alert group")
        if action.action == "ack":
            return oncall.ack_group(s, group, action.alert_ids, who, now)
        try:
            return oncall.silence_group(s, group, action.duration or 3600.0, who, now)
        except oncall.ActionError as exc:
            return oncall.Outcome(f"Not silenced: {exc.message}", 0)
