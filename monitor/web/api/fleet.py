"""``/api/runs/{id}/fleet``: a run's fleet raster, one row per GPU (or host), one column per time span.

Registered before ``/api/runs/{id}``, whose path parameter would otherwise take ``.../fleet`` as part
of a run id.
"""

from __future__ import annotations

import math

import numpy as np
from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from alerts.durations import parse_duration
from monitor.fleet.frame import member_name
from monitor.fleet.units import UNITS, resolution
from monitor.storage import raster_read
from monitor.storage.cells import Cells
from monitor.web import status
from monitor.web.context import ApiContext, context
from monitor.web.gates import CredentialsFirst, require_read
from monitor.web.schemas import ErrorOut, epoch_seconds

router = APIRouter(tags=["runs"], dependencies=[Depends(require_read)], route_class=CredentialsFirst)

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
    """[member][column], rounded to 4 significant digits of the largest value (a colour needs no
    more), None where there is no value."""
    if not columns:
        return [[] for _ in range(n)]
    m = np.stack([c.values(stat, n) for c in columns], axis=1)
    finite = np.isfinite(m)
    top = float(np.max(np.abs(m[finite]))) if finite.any() else 0.0
    digits = max(0, 3 - math.floor(math.log10(top))) if top > 0 else 4
    rounded = np.round(np.where(finite, m, 0.0), digits)
    return np.where(finite, rounded, None).tolist()


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
        run_id = status.one_run(s, run_id).id
        metas = raster_read.rasters_of(s, run_id)
        if not metas:
            raise HTTPException(404, f"run {run_id!r} has no fleet data (a Prometheus watch with fleet: set)")
        names = [m.metric for m in metas]
        name = metric or ("sm_active" if "sm_active" in names else names[0])
        if name not in names:
            raise HTTPException(
                404, f"run {run_id!r} has no fleet metric {name!r}; it has {', '.join(names)}"
            )
        view = raster_read.read(s, run_id, name, t0, t1, columns)
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
        scale=_scale(view.columns, n, view.unit, fixed),
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


def _scale(
    columns: list[Cells], n: int, unit: str, fixed: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The colour range: the means' own min..max, so that one odd row stands out, widened to at least
    10x the unit's resolution (so that noise in a healthy fleet stays pale), kept within ``fixed``."""
    if not columns:
        return None
    m = np.stack([c.values("mean", n) for c in columns])
    if not np.isfinite(m).any():
        return fixed
    lo, hi = float(np.nanmin(m)), float(np.nanmax(m))
    least = 10 * resolution(unit) or max(abs(hi), abs(lo), 1.0) * 1e-6
    if hi - lo < least:
        mid = (hi + lo) / 2
        lo, hi = mid - least / 2, mid + least / 2
    if fixed is not None:
        span = min(hi - lo, fixed[1] - fixed[0])
        lo = min(max(lo, fixed[0]), fixed[1] - span)
        hi = lo + span
    return (float(f"{lo:.4g}"), float(f"{hi:.4g}"))
