"""``/reports``: the hero-run report on the dashboard: the last full week by default, a week picker,
the watch to report on, downloads (Markdown, HTML, JSON), printable."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from monitor.reports import html, pictures
from monitor.web.context import ApiContext, context
from monitor.web.dashboard.pages import guard, page
from monitor.web.reports import report_for

router = APIRouter(include_in_schema=False)
CSS = Path(html.__file__).parent / "templates" / "report.css"


@router.get("/reports/report.css")
def report_css() -> FileResponse:
    return FileResponse(CSS, media_type="text/css")


def _week_text(t: float, tz: str) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%Y-%m-%d")


@router.get("/reports", response_class=HTMLResponse)
def reports_page(
    request: Request,
    week: str | None = Query(None, max_length=32),
    watch: str | None = Query(None, max_length=128),
    tz: str = Query("UTC", max_length=64),
    ctx: ApiContext = Depends(context),
) -> Response:
    if (denied := guard(request, ctx)) is not None:
        return denied
    watches = [w.name for w in ctx.config.watch] if ctx.config is not None else []
    try:
        with ctx.sessions() as s:
            r = report_for(ctx, s, week=week or None, watch=watch or None, tz=tz)
            body = html.body(r, pictures.collect(s, r))
    except HTTPException as exc:
        return page(request, ctx, "error.html", exc.status_code, title="No report", message=exc.detail)
    this_week = _week_text(r.period.start, r.timezone)

    def link(start: float) -> str:
        q = {"week": _week_text(start, r.timezone), "tz": r.timezone, **({"watch": watch} if watch else {})}
        return "/reports?" + urlencode(q)

    query = {"week": this_week, "tz": r.timezone, **({"watch": watch} if watch else {})}
    return page(
        request,
        ctx,
        "reports.html",
        report=r,
        body=body,
        watches=watches,
        watch=watch or "",
        week=this_week,
        tz=r.timezone,
        earlier=link(r.period.start - 1),  # a moment of the week before names it (a DST week is 167 or 169 h)
        later=link(r.period.end) if r.period.end <= ctx.now() else None,
        downloads={f: "/api/report?" + urlencode({**query, "format": f}) for f in ("md", "html", "json")},
    )
