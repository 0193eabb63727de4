"""The status API: runs, alerts and liveness. Reads only what the engine wrote."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import isoformat
from monitor import __version__
from monitor.api.schemas import AlertOut, Health, RunOut
from monitor.storage import alerts_repo, runs_repo
from monitor.storage.models import Alert, Run

log = logging.getLogger(__name__)


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def alert_out(a: Alert) -> AlertOut:
    ann = a.annotations or {}
    return AlertOut(
        id=a.id,
        fingerprint=a.fingerprint,
        rule=a.rule,
        kind=a.kind,
        run=a.run_id,
        metric=a.metric,
        severity=a.severity,
        state=a.state,
        labels={k: str(v) for k, v in (a.labels or {}).items()},
        summary=ann.get("summary", a.rule),
        description=ann.get("description"),
        runbook_url=ann.get("runbook_url"),
        value=_num(a.value),
        threshold=_num(a.threshold),
        step=a.step,
        active_at=isoformat(a.active_at) or "",
        fired_at=isoformat(a.fired_at),
        resolved_at=isoformat(a.resolved_at),
    )


def run_out(r: Run, firing: Counter) -> RunOut:
    counts = {sev: n for (run, sev), n in firing.items() if run == r.id}
    if counts.get("critical"):
        health = "critical"
    elif counts.get("warning") or r.source_error:
        health = "warning"
    elif r.last_seen_at is None:
        health = "unknown"
    else:
        health = "ok"
    return RunOut(
        id=r.id,
        watch=r.watch,
        source=r.source,
        display_name=r.display_name,
        url=r.url,
        labels={k: str(v) for k, v in (r.labels or {}).items()},
        state=r.state,
        step=r.last_step,
        last_step_at=isoformat(r.last_step_at),
        last_seen_at=isoformat(r.last_seen_at),
        last_polled_at=isoformat(r.last_polled_at),
        source_error=r.source_error,
        restarts=r.restarts or 0,
        health=health,
        active_alerts=counts,
    )


def create_app(
    sessions: sessionmaker[Session],
    on_start: Callable[[], None] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        if on_start:
            on_start()
        try:
            yield
        finally:
            if on_stop:
                on_stop()

    app = FastAPI(
        title="herowatch",
        version=__version__,
        lifespan=lifespan,
        description="Health of long GPU training runs: runs, alerts, incidents.",
    )

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "internal error", "detail": type(exc).__name__}, status_code=500)

    @app.get("/healthz", response_model=Health, tags=["health"], summary="The process is alive")
    def healthz() -> Health:
        return Health(status="ok", version=__version__)

    @app.get(
        "/api/runs", response_model=list[RunOut], tags=["runs"], summary="Every watched run with its health"
    )
    def runs() -> list[RunOut]:
        with sessions() as s:
            firing = Counter((a.run_id, a.severity) for a in alerts_repo.list_alerts(s, state="firing"))
            return [run_out(r, firing) for r in runs_repo.list_runs(s)]

    @app.get(
        "/api/alerts", response_model=list[AlertOut], tags=["alerts"], summary="Alert instances, newest first"
    )
    def alerts(
        state: Literal["pending", "firing", "resolved", "inactive"] | None = None,
        severity: Literal["critical", "warning", "info"] | None = None,
        run: str | None = None,
        limit: int = Query(200, ge=1, le=5000),
    ) -> list[AlertOut]:
        with sessions() as s:
            return [alert_out(a) for a in alerts_repo.list_alerts(s, state, run, severity, limit)]

    return app
