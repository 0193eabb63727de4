"""Liveness, readiness and the loaded rules."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse

from monitor import __version__
from monitor.durations import format_duration
from monitor.storage import views
from monitor.web.context import STALE_POLLS, ApiContext, context
from monitor.web.gates import CredentialsFirst, may_read, require_read
from monitor.web.schemas import ErrorOut, HealthOut, ReadyOut, RuleOut

log = logging.getLogger(__name__)
router = APIRouter(route_class=CredentialsFirst)
BASE_FIELDS = {"name", "kind", "metric", "for", "keep_firing_for", "severity", "labels", "annotations"}


@router.get("/healthz", response_model=HealthOut, tags=["health"], summary="The process is alive")
def healthz() -> HealthOut:
    return HealthOut(status="ok", version=__version__)


def readiness(ctx: ApiContext) -> ReadyOut:
    checks: dict[str, str] = {}
    reasons: list[str] = []
    try:
        with ctx.sessions() as s:
            views.ping(s)
        checks["database"] = "ok"
    except Exception as exc:  # the reason is logged in full; the probe gets no connection details
        log.warning("readiness: database unreachable: %s", exc)
        checks["database"] = f"unreachable ({type(exc).__name__})"
        reasons.append(f"database: {checks['database']}")
    engine = ctx.engine
    now = ctx.now()
    for kind, interval in sorted(ctx.source_intervals().items()):
        # "Polled recently" means the poll loop runs, not that the source answered: a W&B outage is an
        # alert (source_unavailable), and must not take the dashboard out of the load balancer.
        last = engine.source_polls.last_poll_at(kind)
        error = engine.source_polls.error(kind)
        limit = STALE_POLLS * interval
        if last is not None and now - last <= limit:
            checks[f"source:{kind}"] = "ok" + (f" (last poll failed: {error})" if error else "")
            for line in engine.source_polls.throttle_lines(kind):  # slower reads, said, not a failure
                checks[f"source:{kind}"] += f" ({line})"
            continue
        if last is None:
            what = "never polled"
        else:
            age = format_duration(round(now - last))
            what = f"last poll {age} ago (limit {format_duration(limit)})"
        checks[f"source:{kind}"] = what
        reasons.append(f"source {kind}: {what}")
    for watch in sorted(engine.watches) if engine is not None else ():
        for kind in sorted(engine.watches[watch].targets()):
            last_poll = engine.source_polls.of(watch, kind)
            if last_poll is not None and last_poll.ok_at is None:  # polled, never answered: blind from start
                what = f"never read ({last_poll.error})"
                checks[f"watch:{watch}:{kind}"] = what
                reasons.append(f"watch {watch}: source {kind} {what}")
        failing = engine.write_health.error(watch)
        if failing is not None:
            checks[f"watch:{watch}:writes"] = f"failing ({failing})"
            reasons.append(f"watch {watch}: its polls cannot be written: {failing}")
    return ReadyOut(status="not ready" if reasons else "ready", checks=checks, reasons=reasons)


@router.get(
    "/readyz",
    response_model=ReadyOut,
    tags=["health"],
    summary="Ready: the database answers and every source this replica polls was polled recently",
    description="200 when the database answers and each source kind this replica polls was polled within "
    f"{STALE_POLLS} poll intervals (whether the source answered or not: an outage is an alert, not a reason "
    "to take the dashboard away); 503 with the reasons otherwise. With `HEROWATCH_PROTECT_READS=true` the "
    "checks and reasons (which name sources and their errors) need the API token; without it the answer "
    "is the bare verdict, so that probes still work.",
    responses={503: {"model": ReadyOut, "description": "not ready, with reasons"}},
)
def readyz(request: Request, ctx: ApiContext = Depends(context)) -> JSONResponse:
    ready = readiness(ctx)
    status = 200 if not ready.reasons else 503
    if not may_read(request, ctx):  # the probe's verdict only: no source names or errors
        ready = ReadyOut(status=ready.status, checks={}, reasons=[])
    return JSONResponse(ready.model_dump(), status_code=status)


@router.get(
    "/api/rules",
    response_model=list[RuleOut],
    tags=["rules"],
    summary="The loaded rules with their parameters",
    description="With `watch`, the rules as that watch runs them (its overrides applied, disabled ones "
    "left out).",
    responses={404: {"model": ErrorOut}},
    dependencies=[Depends(require_read)],
)
def rules(
    watch: str | None = Query(None, max_length=200), ctx: ApiContext = Depends(context)
) -> list[RuleOut]:
    engine = ctx.engine
    if engine is None:
        return []
    if watch is None:
        specs = list(engine.rules.rules)
    else:
        w = engine.watches.get(watch)
        if w is None:
            raise HTTPException(404, f"no watch named {watch!r}")
        specs = engine.rules.for_run(w.rules.overrides, w.rules.disabled, w.rule_settings())
    out = []
    for spec in specs:
        raw = spec.raw()
        out.append(
            RuleOut(
                name=spec.name,
                kind=spec.kind,
                severity=spec.severity.value,
                metric=spec.metric,
                for_seconds=spec.for_,
                keep_firing_for_seconds=spec.keep_firing_for,
                parameters={k: v for k, v in raw.items() if k not in BASE_FIELDS},
                labels=dict(spec.labels),
                annotations=dict(spec.annotations),
            )
        )
    return out
