"""``/api/runs/{id}/fleet``: a run's fleet raster, one row per GPU (or host), one column per time span.

Registered before ``/api/runs/{id}``, whose path parameter would otherwise take ``.../fleet`` as part
of a run id.
"""

from __future__ import annotations

import math

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from alerts.durations import parse_duration
from monitor.fleet.frame import member_name
from monitor.fleet.units import UNITS
from monitor.storage import raster, views
from monitor.storage.cells import Cells
from monitor.web.api.auth import require_read
from monitor.web.api.context import ApiContext, context
from monitor.web.api.schemas import ErrorOut, epoch_seconds

router = APIRouter(tags=["runs"], dependencies=[Depends(require_read)])

STATS = ("mean", "min", "max")


class FleetMetricOut(BaseModel):
    name: str
    label: str
    unit: str
    members: int


class FleetMemberOut(BaseModel):
    host: str
    device: str | None = Field(description="null: the member is the host itself")
    name: str = Field(description='e.g. "node-17 GPU 3"')


class FleetOut(BaseModel):
    run: str
    metric: str
    label: str
    unit: str
    unit_label: str = Field(description='the unit as a legend says it ("°C", "bytes/s")')
    device_word: str | None = Field(description='what a member is ("GPU"); null: the members are hosts')
    scale: tuple[float, float] | None = Field(
        description="the colour range: fixed for ratios, else the data's"
    )
    metrics: list[FleetMetricOut] = Field(description="every fleet metric of the run")
    members: list[FleetMemberOut] = Field(description="rows, grouped by host, in order")
    starts: list[float] = Field(description="each column's start, epoch seconds")
    ends: list[float] = Field(description="each column's end, epoch seconds")
    mean: list[list[float | None]] | None = Field(description="[row][column]; null: no value")
    min: list[list[float | None]] | None = None
    max: list[list[float | None]] | None = None


def _since(text: str | None, now: float) -> float | None:
    """An ISO 8601 time, epoch seconds, or a duration before now ("6h")."""
    if text is None or text == "":
        return None
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        return epoch_seconds(text)
    except ValueError as exc:
        raise HTTPException(422, f"since: {exc}; or a duration before now, e.g. 6h") from None


def _rows(columns: list[Cells], n: int, stat: str) -> list[list[float | None]]:
    def r(v: float) -> float | None:
        return None if v != v or math.isinf(v) else float(f"{v:.4g}")

    out: list[list[float | None]] = [[None] * len(columns) for _ in range(n)]
    for j, c in enumerate(columns):
        values = getattr(c, stat)
        for i in range(min(n, len(c))):
            if c.count[i]:
                out[i][j] = r(values[i])
    return out


@router.get(
    "/api/runs/{run_id:path}/fleet",
    response_model=FleetOut,
    summary="A run's fleet raster: one row per GPU or host, one column per time span",
    description="Rows are the fleet's members (GPUs grouped by host, or hosts) of one fleet metric "
    "(`metric`, default the first; `metrics` lists them all); columns are time spans, oldest first, at "
    "most `columns` of them (neighbours merged: min and max survive, means are weighted). Each cell "
    "holds the member's mean, min and max over the span (`stats` picks which). The last hour keeps "
    "every poll step; older spans merge as the run grows, so a raster stays bounded however long the "
    "run. Filled by a Prometheus watch with `fleet:` set.",
    responses={404: {"model": ErrorOut, "description": "no such run, or no fleet data for it"}},
)
def get_fleet(
    run_id: str,
    metric: str | None = Query(None, max_length=60, description="a fleet metric, e.g. sm_active"),
    since: str | None = Query(None, max_length=64, description="ISO 8601 time, epoch seconds, or e.g. 6h"),
    until: str | None = Query(None, max_length=64, description="ISO 8601 time or epoch seconds"),
    columns: int = Query(240, ge=8, le=2000, description="at most this many columns"),
    stats: list[str] = Query(["mean", "min", "max"], description="which of mean, min, max (repeatable)"),
    ctx: ApiContext = Depends(context),
) -> FleetOut:
    bad = [s for s in stats if s not in STATS]
    if bad:
        raise HTTPException(422, f"stats: {bad[0]!r} is not one of mean, min, max")
    now = ctx.now()
    t0 = _since(since, now)
    try:
        t1 = epoch_seconds(until) if until else None
    except ValueError as exc:
        raise HTTPException(422, f"until: {exc}") from None
    with ctx.sessions() as s:
        if views.get_run(s, run_id) is None:
            raise HTTPException(404, f"no run with id {run_id!r}")
        metas = raster.rasters_of(s, run_id)
        if not metas:
            raise HTTPException(404, f"run {run_id!r} has no fleet data (a Prometheus watch with fleet: set)")
        names = [m.metric for m in metas]
        name = metric or ("sm_active" if "sm_active" in names else names[0])
        if name not in names:
            raise HTTPException(
                404, f"run {run_id!r} has no fleet metric {name!r}; it has {', '.join(names)}"
            )
        view = raster.read(s, run_id, name, t0, t1, columns)
        listed = [
            FleetMetricOut(name=m.metric, label=m.label, unit=m.unit, members=len(m.members or []))
            for m in metas
        ]
    assert view is not None
    n = len(view.members)
    unit_label, fixed = UNITS.get(view.unit, ("", None))
    out = {stat: _rows(view.columns, n, stat) if stat in stats else None for stat in STATS}
    return FleetOut(
        run=run_id,
        metric=view.metric,
        label=view.label,
        unit=view.unit,
        unit_label=unit_label,
        device_word=view.device_word,
        scale=fixed or _scale(out["mean"] or out["max"] or out["min"] or []),
        metrics=listed,
        members=[
            FleetMemberOut(host=h, device=d, name=member_name((h, d), view.device_word))
            for h, d in view.members
        ],
        starts=[a for a, _ in view.spans],
        ends=[b for _, b in view.spans],
        mean=out["mean"],
        min=out["min"],
        max=out["max"],
    )


def _scale(rows: list[list[float | None]]) -> tuple[float, float] | None:
    values = [v for row in rows for v in row if v is not None]
    if not values:
        return None
    lo, hi = min(values), max(values)
    return (lo, hi if hi > lo else lo + 1.0)
