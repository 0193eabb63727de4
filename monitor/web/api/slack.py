"""Slack's interactivity endpoint: button clicks on herowatch's alert messages.

Slack signs every request; a missing, wrong or stale signature gets 401 and changes nothing.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from alerts.slack_interactions import BadPayload, BadSignature, verify_and_parse
from monitor.delivery import oncall
from monitor.storage import groups_repo
from monitor.web.api.context import ApiContext, context

log = logging.getLogger(__name__)
router = APIRouter(tags=["slack"])


@router.post(
    "/api/slack/interactions",
    responses={
        400: {"description": "signed correctly, but not a herowatch button"},
        401: {"description": "missing, wrong or stale Slack signature: nothing changed"},
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
        action = verify_and_parse(dict(request.headers), body, secret.get_secret_value(), now)
    except BadSignature as exc:
        log.warning("refused a Slack interaction: %s", exc)
        raise HTTPException(401, "bad or stale Slack signature") from None
    except BadPayload as exc:
        raise HTTPException(400, f"not a herowatch action: {exc}") from None
    who = action.user_name or action.user_id
    with ctx.sessions.begin() as s:
        group = groups_repo.by_key(s, action.group_key)
        if group is None:
            result = oncall.Outcome("This alert group is no longer known to herowatch.", 0)
        elif action.action == "ack":
            result = oncall.ack_group(s, group, action.alert_ids, who, now)
        else:
            try:
                result = oncall.silence_group(s, group, action.duration or 3600.0, who, now)
            except oncall.ActionError as exc:
                result = oncall.Outcome(f"Not silenced: {exc.message}", 0)
    log.info("slack %s by %s on %s: %s", action.action, action.user_name, action.group_key, result.text)
    return JSONResponse({"response_type": "ephemeral", "replace_original": False, "text": result.text})
