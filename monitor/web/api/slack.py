"""Slack's interactivity endpoint: button clicks on herowatch's alert messages.

Slack signs every request; a missing, wrong or stale signature gets 401 and changes nothing. Then, in
order: a request already handled (same signature: a replay) gets 409; a click from another workspace
than ``HEROWATCH_SLACK_TEAM_ID`` gets 403; a payload that is not a herowatch button click gets 400; a
click on anything but herowatch's own message for that alert group (channel and message ts as
herowatch posted them) gets 403. Only then does the click act. The body is at most
``HEROWATCH_MAX_BODY_SLACK`` bytes (monitor/web/edge.py).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from alerts.notifiers.slack.interactions import BadPayload, BadSignature, parse_payload, verify_signature
from monitor.delivery import oncall
from monitor.storage import groups_repo
from monitor.web.context import ApiContext, context

log = logging.getLogger(__name__)
router = APIRouter(tags=["slack"])


@router.post(
    "/api/slack/interactions",
    responses={
        400: {"description": "signed correctly, but not a herowatch button"},
        401: {"description": "missing, wrong or stale Slack signature: nothing changed"},
        403: {"description": "another workspace, or not herowatch's message for that alert group"},
        409: {"description": "this signed request was already handled (a replay): nothing changed"},
        413: {"description": "body larger than HEROWATCH_MAX_BODY_SLACK"},
        429: {"description": "too many Slack requests within five minutes"},
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
        verify_signature(request.headers, body, secret.get_secret_value(), now)
    except BadSignature as exc:
        log.warning("refused a Slack interaction: %s", exc)
        raise HTTPException(401, "bad or stale Slack signature") from None
    refused = request.app.state.slack_replays.check(
        request.headers["x-slack-signature"], float(request.headers["x-slack-request-timestamp"]), now
    )
    if refused is not None:
        log.warning("refused a Slack interaction: %s", refused[1])
        raise HTTPException(*refused)
    try:
        action = parse_payload(body)
    except BadPayload as exc:
        raise HTTPException(400, f"not a herowatch action: {exc}") from None
    team = ctx.settings.slack_team_id
    if team and action.team_id != team:
        log.warning("refused a Slack click from workspace %r (expected %r)", action.team_id, team)
        raise HTTPException(403, "this Slack workspace is not the one herowatch serves")
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
            result = oncall.ack_group(s, group, action.alert_ids, who, now)
        else:
            try:
                result = oncall.silence_group(s, group, action.duration or 3600.0, who, now)
            except oncall.ActionError as exc:
                result = oncall.Outcome(f"Not silenced: {exc.message}", 0)
    log.info("slack %s by %s on %s: %s", action.action, action.user_name, action.group_key, result.text)
    return JSONResponse({"response_type": "ephemeral", "replace_original": False, "text": result.text})
