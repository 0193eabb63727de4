"""``/api/report``: the hero-run report of a period (JSON; Markdown or self-contained HTML on request)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from monitor.reports import html, markdown, pictures
from monitor.reports.model import Report
from monitor.web.auth import CredentialsFirst, require_read
from monitor.web.context import ApiContext, clock_header, context
from monitor.web.reports import report_for
from monitor.web.schemas import ErrorOut

router = APIRouter(tags=["reports"], dependencies=[Depends(clock_header)], route_class=CredentialsFirst)


@router.get(
    "/api/report",
    response_model=Report,
    summary="The hero-run report of a period: goodput and GPU-hours per run, incidents, alert quality",
    description="By default the last full week (Monday 00:00 to Monday 00:00 in `tz`). Give one of "
    "`since` (e.g. `7d`, up to now), `from` and `to` (ISO dates or times; `to` defaults to now) or `week` "
    "(any date in the week). `format=md` answers Markdown, `format=html` one self-contained HTML file "
    "(pictures and styles inline, as a download). docs/reports.md explains every figure.",
    responses={
        200: {"content": {"text/markdown": {}, "text/html": {}}},
        404: {"model": ErrorOut, "description": "no such watch"},
        422: {"model": ErrorOut, "description": "a period that cannot be reported"},
    },
    dependencies=[Depends(require_read)],
)
def get_report(
    since: str | None = Query(None, max_length=64),
    from_: str | None = Query(None, alias="from", max_length=64),
    to: str | None = Query(None, max_length=64),
    week: str | None = Query(None, max_length=64),
    watch: str | None = Query(None, max_length=128),
    run: list[str] = Query([], max_length=50, description="only these runs (id or name)"),
    tz: str = Query("UTC", max_length=64, description="IANA time zone of the week and the times"),
    format: Literal["json", "md", "html"] = "json",  # noqa: A002 - the parameter's public name
    ctx: ApiContext = Depends(context),
) -> Response | Report:
    with ctx.sessions() as s:
        r = report_for(ctx, s, since=since, start=from_, end=to, week=week, watch=watch, runs=run, tz=tz)
        if format == "md":
            return PlainTextResponse(markdown.render(r), media_type="text/markdown; charset=utf-8")
        if format == "html":
            name = f"herowatch-report-{r.period.label.split(' ')[0]}.html"
            disposition = {"content-disposition": f'attachment; filename="{name}"'}
            return HTMLResponse(html.document(r, pictures.collect(s, r)), headers=disposition)
    return r
