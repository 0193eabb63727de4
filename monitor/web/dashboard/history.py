"""``/alerts/history``: every alert of a time range, filterable by rule, run, state and severity, a page
at a time, each with its start and end as absolute times beside relative ones. The same query as
``GET /api/alerts?from=&to=`` (``api.alert_history``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from monitor.web import alert_history as hist
from monitor.web.context import ApiContext, context
from monitor.web.dashboard.pages import guard, page

router = APIRouter(include_in_schema=False)
PAGE = 50
STATES = ("", "active", "firing", "pending", "resolved")
SEVERITIES = ("", "critical", "warning", "info")
DEFAULT_FROM = "7d"


@router.get("/alerts/history", response_class=HTMLResponse)
def history_page(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    if (denied := guard(request, ctx)) is not None:
        return denied
    q = request.query_params
    form: dict[str, str] = {
        "from": q.get("from", DEFAULT_FROM)[:64],
        "to": q.get("to", "")[:64],
        "rule": q.get("rule", "")[:500],
        "run": q.get("run", "")[:200],
        "state": q.get("state", "") if q.get("state", "") in STATES else "",
        "severity": q.get("severity", "") if q.get("severity", "") in SEVERITIES else "",
    }
    values: dict[str, Any] = {"form": form, "states": STATES, "severities": SEVERITIES, "error": None}
    try:
        now = ctx.now()
        t0, t1 = hist.when(form["from"], now, "from"), hist.when(form["to"], now, "to")
        found, more = hist.history(
            ctx,
            start=t0,
            end=t1,
            rules=hist.rules_of(form["rule"]),
            run=form["run"] or None,
            state=form["state"] or None,
            severity=form["severity"] or None,
            after=hist.cursor_of(q.get("cursor")),
            limit=PAGE,
        )
    except HTTPException as exc:
        values.update(error=str(exc.detail), alerts=[], next_url=None)
        return page(request, ctx, "alerts_history.html", 400, **values)
    link = hist.next_headers(request, more).get("Link")
    values.update(alerts=found, next_url=link[1 : link.index(">")] if link else None)
    return page(request, ctx, "alerts_history.html", **values)
