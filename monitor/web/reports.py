"""The report as the API and the dashboard ask for it: the period from query parameters, the watch
config's GPU counts, the clock of this herowatch (the demo's is simulated)."""

from __future__ import annotations

from fastapi import HTTPException
from sqlalchemy.orm import Session

from monitor.reports import period as periods
from monitor.reports.make import make
from monitor.reports.model import Report
from monitor.web.context import ApiContext


def report_for(
    ctx: ApiContext,
    s: Session,
    *,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    week: str | None = None,
    watch: str | None = None,
    runs: list[str] | None = None,
    tz: str = "UTC",
) -> Report:
    now = ctx.now()
    cfg = ctx.config
    if cfg is not None and watch is not None and watch not in {w.name for w in cfg.watch}:
        raise HTTPException(404, f"no watch named {watch!r}")
    try:
        zone = periods.zone(tz)
        p = periods.choose(now, zone, since=since, start=start, end=end, week=week)
    except periods.PeriodError as exc:
        raise HTTPException(422, str(exc)) from None
    return make(s, cfg, p, now=now, tz=zone.key, watch=watch, runs=runs or None)
