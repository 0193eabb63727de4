"""``/api/silences``: list, create and expire silences (label matchers with a time window)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from alerts.routing import Matcher
from alerts.silences import matches_filter
from monitor.delivery.oncall import ActionError, expire_silence
from monitor.storage import views
from monitor.web.auth import CredentialsFirst, require_read, require_write
from monitor.web.context import ApiContext, clock_header, context
from monitor.web.schemas import ErrorOut, SilenceIn, SilenceOut, db_id
from monitor.web.silences import create_from, run_matchers, silence_out, unknown_runs

router = APIRouter(tags=["silences"], dependencies=[Depends(clock_header)], route_class=CredentialsFirst)
MUTATION_ERRORS = {401: {"model": ErrorOut}, 403: {"model": ErrorOut}, 422: {"model": ErrorOut}}


@router.get(
    "/api/silences",
    response_model=list[SilenceOut],
    summary="Silences: active and pending first, then expired",
    dependencies=[Depends(require_read)],
)
def list_silences(
    state: Literal["active", "pending", "expired"] | None = None,
    filter: list[str] = Query(  # noqa: A002 - Alertmanager's name for it
        [],
        description="only silences whose matchers match all of these, as `amtool silence query`: "
        '`run=hero-a` finds the silences for hero-a, `alertname=~"progress_.*"` those for any progress rule',
    ),
    limit: int = Query(500, ge=1, le=5000),
    ctx: ApiContext = Depends(context),
) -> list[SilenceOut]:
    now = ctx.now()
    with ctx.sessions() as s:
        try:
            filters = [Matcher.parse(f) for f in run_matchers(s, filter)]  # a run's name finds its id
        except ValueError as exc:
            raise HTTPException(422, f"filter: {exc}") from None
        except ActionError as exc:
            raise HTTPException(exc.status, f"filter: {exc.message}") from None
        active = views.active_alerts(s)
        rows = views.list_silences(s, now, state, 5000 if filters else limit)
        if filters:
            rows = [r for r in rows if matches_filter(views.matchers_of(r), filters)][:limit]
        return [silence_out(r, now, ctx.silences, active) for r in rows]


@router.get(
    "/api/silences/{silence_id}",
    response_model=SilenceOut,
    summary="One silence",
    responses={404: {"model": ErrorOut}},
    dependencies=[Depends(require_read)],
)
def get_silence(silence_id: db_id, ctx: ApiContext = Depends(context)) -> SilenceOut:
    now = ctx.now()
    with ctx.sessions() as s:
        row = views.get_silence(s, silence_id)
        if row is None:
            raise HTTPException(404, f"no silence with id {silence_id}")
        return silence_out(row, now, ctx.silences, views.active_alerts(s))


@router.post(
    "/api/silences",
    response_model=SilenceOut,
    status_code=201,
    summary="Create a silence",
    description='Matchers as in Alertmanager (`run=hero-a`, `alertname=~"progress_.*"`, `!=`, `!~`); '
    "a silenced alert is still recorded and shown, but not sent. Give `duration` (e.g. `2h`) or "
    "`ends_at`. Needs the API token.",
    responses=MUTATION_ERRORS,
    dependencies=[Depends(require_write)],
)
def post_silence(body: SilenceIn, ctx: ApiContext = Depends(context)) -> SilenceOut:
    now = ctx.now()
    with ctx.sessions.begin() as s:
        try:
            notes = unknown_runs(s, body.matchers)
            row = create_from(s, body, now)
        except ActionError as exc:
            raise HTTPException(exc.status, exc.message) from None
        return silence_out(row, now, ctx.silences, views.active_alerts(s)).model_copy(update={"notes": notes})


@router.delete(
    "/api/silences/{silence_id}",
    response_model=SilenceOut,
    summary="Expire a silence now",
    description="The silence stays listed as expired. Expiring an expired silence changes nothing. "
    "Needs the API token.",
    responses={**MUTATION_ERRORS, 404: {"model": ErrorOut}},
    dependencies=[Depends(require_write)],
)
def delete_silence(silence_id: db_id, ctx: ApiContext = Depends(context)) -> SilenceOut:
    now = ctx.now()
    with ctx.sessions.begin() as s:
        try:
            row = expire_silence(s, silence_id, now)
        except ActionError as exc:
            raise HTTPException(exc.status, exc.message) from None
        return silence_out(row, now, ctx.silences)
