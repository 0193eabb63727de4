"""``/api/alerts``: alert instances with filters, acknowledging one, and its picture."""

from __future__ import annotations

from itertools import islice
from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from monitor.delivery.oncall import ActionError, ack_alert
from monitor.delivery.plots import plot_for
from monitor.storage import runs_repo, views
from monitor.web import alert_history as hist
from monitor.web import status
from monitor.web.auth import CredentialsFirst, require_read, require_write
from monitor.web.conditional import Encoded, answer, current, encoded, json_bytes, memo
from monitor.web.context import ApiContext, context
from monitor.web.schemas import AckIn, AlertOut, ErrorOut, db_id

router = APIRouter(tags=["alerts"], route_class=CredentialsFirst)
ACTIVE = ("active", "pending", "firing")


@router.get(
    "/api/alerts",
    response_model=list[AlertOut],
    summary="Alert instances, newest first; with from, to, rule or cursor: the history, page by page",
    description="Filters combine. With `from`, `to`, `rule` or `cursor` the answer is the history: every "
    "alert active in that time range (times as ISO 8601, epoch seconds, or a duration ago such as `24h`), "
    'newest start first, `limit` per page; the next page is in the `Link` header (`rel="next"`) and '
    "`X-Next-Cursor`. `state=active` means pending or firing. Only pending and firing alerts "
    "can be silenced: `silenced=true` lists those an active silence mutes now. Pending and firing alerts "
    "are served from the status snapshot (at most one poll interval old); every answer carries an `ETag` "
    "and a request with `If-None-Match` gets `304 Not Modified` while nothing has changed.",
    responses={
        304: {"description": "not modified since the ETag sent in If-None-Match"},
        400: {"model": ErrorOut, "description": "from or to is not a time, or a cursor is not one of ours"},
    },
    dependencies=[Depends(require_read)],
)
async def list_alerts(
    request: Request,
    state: Literal["active", "pending", "firing", "resolved", "inactive"] | None = None,
    severity: Literal["critical", "warning", "info"] | None = None,
    run: str | None = Query(
        None,
        max_length=512,
        description="only this run's alerts: its id, or a display name (every run of that name)",
    ),
    silenced: bool | None = None,
    acknowledged: bool | None = None,
    limit: int = Query(200, ge=1, le=5000),
    start: str | None = Query(
        None,
        alias="from",
        max_length=64,
        description="history: alerts active at or after this time (ISO 8601, epoch seconds, or 24h ago)",
    ),
    end: str | None = Query(
        None, alias="to", max_length=64, description="history: ... and started by this time"
    ),
    rule: str | None = Query(
        None, max_length=2000, description="history: these rules only (comma-separated)"
    ),
    cursor: str | None = Query(None, max_length=40, description="history: the next page (X-Next-Cursor)"),
) -> Response:
    if start or end or rule or cursor:  # the history: by start time, a page at a time
        ctx = request.app.state.ctx
        now = ctx.now()
        t0, t1 = hist.when(start, now, "from"), hist.when(end, now, "to")
        if t0 is not None and t1 is not None and t1 < t0:
            raise HTTPException(400, "to: before from")
        found, more = await run_in_threadpool(
            lambda: hist.history(
                ctx,
                start=t0,
                end=t1,
                rules=hist.rules_of(rule),
                run=run,
                state=state if state != "inactive" else None,
                severity=severity,
                after=hist.cursor_of(cursor),
                limit=limit,
            )
        )
        variant = "alerts-history|" + str(sorted(request.query_params.multi_items()))
        return answer(
            request, encoded(variant, json_bytes(AlertOut, found)), headers=hist.next_headers(request, more)
        )
    if silenced is True and state in (None, "resolved", "inactive"):
        state = state or "active"  # only active alerts can be silenced
    key = ("api/alerts", state, severity, run, silenced, acknowledged, limit)
    variant = "alerts|" + "|".join(map(str, key[1:]))
    snap = await current(request)
    if state in ACTIVE:  # pending and firing alerts: all in the snapshot

        def make() -> Encoded:
            runs = set([run, *snap.lookup(run)]) if run else None
            out = (
                a.model_copy(update={"run_title": snap.api_titles.get(a.run)})
                for a in snap.alerts
                if (state == "active" or a.state == state)
                and (severity is None or a.severity == severity)
                and (runs is None or a.run in runs)
                and (acknowledged is None or a.acknowledged == acknowledged)
                and (silenced is None or a.silenced == silenced)
            )
            return encoded(variant, json_bytes(AlertOut, list(islice(out, limit))))

        return answer(request, await memo(snap, key, make))
    ctx = request.app.state.ctx
    found = await run_in_threadpool(from_database, ctx, state, severity, run, silenced, acknowledged, limit)
    return answer(request, encoded(variant, json_bytes(AlertOut, found)))


def from_database(
    ctx: ApiContext,
    state: str | None,
    severity: str | None,
    run: str | None,
    silenced: bool | None,
    acknowledged: bool | None,
    limit: int,
) -> list[AlertOut]:
    """Resolved and inactive alerts too (the history is not in the snapshot): read now."""
    now = ctx.now()
    with ctx.sessions() as s:
        silences = views.active_silence_specs(s, now, ctx.silences)
        # the id itself (a watch's own alerts, source_unavailable, carry the watch as their run), and
        # the runs a display name stands for
        runs = list(dict.fromkeys([run, *(r.id for r in views.lookup_runs(s, run))])) if run else None
        rows = views.find_alerts(s, state=state, severity=severity, run=runs, acknowledged=acknowledged)
        out = (status.alert_out(a, silences, now) for a in rows)
        if silenced is not None:
            out = (a for a in out if a.silenced == silenced)
        found = list(islice(out, limit))
        titles = runs_repo.titles(s, (a.run for a in found))
        return [a.model_copy(update={"run_title": titles.get(a.run)}) for a in found]


@router.post(
    "/api/alerts/{alert_id}/ack",
    response_model=AlertOut,
    summary="Acknowledge a pending or firing alert",
    description="Records who took it (and an optional comment, which goes into the run's timeline). "
    "Needs the API token.",
    responses={
        401: {"model": ErrorOut},
        403: {"model": ErrorOut},
        404: {"model": ErrorOut},
        409: {"model": ErrorOut, "description": "the alert is not pending or firing"},
    },
    dependencies=[Depends(require_write)],
)
def acknowledge(alert_id: db_id, body: AckIn, ctx: ApiContext = Depends(context)) -> AlertOut:
    now = ctx.now()
    with ctx.sessions.begin() as s:
        try:
            row = ack_alert(s, alert_id, body.by, body.comment, now)
        except ActionError as exc:
            raise HTTPException(exc.status, exc.message) from None
        return status.alert_out(row, views.active_silence_specs(s, now, ctx.silences), now)


@router.get(
    "/api/alerts/{alert_id}/plot.png",
    response_class=Response,
    summary="The alert's picture (PNG), as notifications show it",
    description="Its metric around the event, or the run's progress with the stall shaded, drawn from "
    "the stored series now. Receivers that link images (PagerDuty) point here. 404 when the alert has "
    "no picture.",
    responses={200: {"content": {"image/png": {}}}, 404: {"model": ErrorOut}},
    dependencies=[Depends(require_read)],
)
def plot_png(alert_id: db_id, ctx: ApiContext = Depends(context)) -> Response:
    from alerts.plot import render_png  # matplotlib: loaded when a picture is asked for

    with ctx.sessions() as s:
        row = views.get_alert(s, alert_id)
        if row is None:
            raise HTTPException(404, f"no alert with id {alert_id}")
        plot = plot_for(s, row, ctx.now())
    if plot is None:
        raise HTTPException(404, f"alert {alert_id} has no picture")
    return Response(render_png(plot), media_type="image/png", headers={"Cache-Control": "max-age=60"})
