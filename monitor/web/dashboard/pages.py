"""The dashboard's pages (complete HTML from the server) and the fragments htmx refreshes them with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alerts.model import AlertState, Severity
from monitor.rules.panels import OTHER
from monitor.storage import raster_read, runs_repo, views
from monitor.web import status
from monitor.web.context import ApiContext, context
from monitor.web.coverage import coverage_out
from monitor.web.dashboard.charts import chart_payload
from monitor.web.dashboard.panel_data import panel_metrics
from monitor.web.dashboard.templating import run_url, short_duration
from monitor.web.dashboard.watch_page import watch_values
from monitor.web.run_detail import run_detail
from monitor.web.schemas import MAX_ID, AlertOut, RunDetail
from monitor.web.stacks_view import connected, stacks_of
from monitor.web.viewer import may_see, to_login, viewer_of

router = APIRouter(include_in_schema=False)
REFRESH_SECONDS = 5


def page(
    request: Request, ctx: ApiContext, template: str, status_code: int = 200, /, **values: Any
) -> HTMLResponse:
    html = request.app.state.renderer.render(
        template,
        ctx.now(),
        viewer=viewer_of(request, ctx),
        oidc=request.app.state.oidc is not None,  # the login page offers the team's sign-in
        path=request.url.path,
        refresh=REFRESH_SECONDS,
        speed=ctx.speed,
        **values,
    )
    return HTMLResponse(html, status_code=status_code)


def guard(request: Request, ctx: ApiContext, fragment: bool = False) -> Response | None:
    if may_see(request, ctx):
        return None
    return Response("login needed", status_code=401) if fragment else to_login(request)


CHART_RANGES = ("1h", "6h", "24h", "7d")  # the run charts' time-range picker (static/run_charts.js reads it)


# ---- alert groups: the same words and counts on every page ----------------------------------------
ALERT_GROUPS = (
    ("firing", "Firing"),  # firing, nobody has it yet, not silenced: the ones that need someone
    ("acknowledged", "Acknowledged"),  # firing or pending, someone has it
    ("pending", "Pending"),
    ("info", "Info"),  # info alerts, firing or pending: worth knowing, never a page
    ("silenced", "Silenced"),
)


def group_alerts(active: Sequence[AlertOut]) -> dict[str, list[AlertOut]]:
    """Active alerts into the groups the overview counts and /alerts lists, each alert in exactly one."""
    groups: dict[str, list[AlertOut]] = {key: [] for key, _ in ALERT_GROUPS}
    for a in active:
        if a.silenced:
            groups["silenced"].append(a)
        elif a.severity == Severity.INFO:
            groups["info"].append(a)
        elif a.acknowledged:
            groups["acknowledged"].append(a)
        elif a.state == AlertState.FIRING:
            groups["firing"].append(a)
        elif a.state == AlertState.PENDING:
            groups["pending"].append(a)
    return groups


# ---- one run ------------------------------------------------------------------------------------
def story(run: RunDetail) -> list[dict[str, Any]]:
    """Alert transitions and goodput incidents in one list, newest first."""
    items: list[dict[str, Any]] = []
    for t in run.timeline:
        ack = t.from_state == t.to_state  # an acknowledgement: the state did not change
        items.append(
            {
                "at": t.at,
                "kind": "ack" if ack else t.to_state,
                "title": t.rule,
                "severity": t.severity,
                "step": t.step,
                "text": t.reason,
                "change": "" if ack else f"{t.from_state} → {t.to_state}",
                "alert_id": t.alert_id,
                "alerts": [],
            }
        )
    for inc in run.goodput.incidents if run.goodput else []:
        what = {"stall": "stalled", "restart": "restarted", "down": "down", "startup": "starting"}.get(
            inc.kind, inc.kind
        )
        redo = f", {inc.steps_redone} steps redone" if inc.steps_redone else ""
        items.append(
            {
                "at": inc.start,
                "kind": f"incident-{inc.kind}",
                "title": what,
                "severity": "",
                "step": inc.step,
                "text": f"lost {short_duration(inc.seconds_lost)}{redo}"
                + (" (ongoing)" if inc.ongoing else ""),
                "change": "",
                "alert_id": None,
                "seconds": inc.seconds_lost,
                "alerts": inc.alerts,
            }
        )
    return sorted(items, key=lambda i: i["at"], reverse=True)


GOODPUT_LABELS = {  # in the order of monitor.runs.goodput.BUCKETS
    "productive": "Productive training",
    "data_loading": "Data loading (steps waiting for their batch)",
    "checkpoint": "Checkpoint saves",
    "evaluation": "Evaluation",
    "paused": "Other pauses (slow steps, unexplained)",
    "startup": "Start-up and restore (process start to first step)",
    "stalled": "Hung (no step)",
    "restarting": "Restarting (exit to the new process)",
    "down": "Down (crashed, killed, preempted)",
    "rework": "Redone steps (lost after a rewind)",
    "source_blind": "Source blind (herowatch could not read the run's source)",
}


def goodput_bar(run: RunDetail) -> list[dict[str, Any]]:
    """The breakdown as segments of a 1000-wide bar, every bucket listed (zero ones too)."""
    g = run.goodput
    if g is None:
        return []
    seconds = {"productive": g.productive_seconds, **g.lost_seconds}
    wall = sum(seconds.values()) or 1.0
    out, x = [], 0.0
    for kind, label in GOODPUT_LABELS.items():
        share = seconds.get(kind, 0.0) / wall
        out.append(
            {
                "kind": kind,
                "label": label,
                "seconds": seconds.get(kind, 0.0),
                "share": share,
                "x": round(x, 2),
                "w": round(share * 1000, 2),
            }
        )
        x += share * 1000
    return out


def run_values(ctx: ApiContext, run_id: str) -> dict[str, Any] | None:
    with ctx.sessions() as s:
        row = views.get_run(s, run_id)
        if row is None:
            return None
        panels = ctx.layouts.panels_for(row.kind or OTHER)  # the panels of the packs for its kind
        figures = (row.stats or {}).get("figures") or {}
        run = run_detail(ctx, s, row, metrics=panel_metrics(panels), max_points=512, timeline_limit=200)
        coverage = coverage_out(row)
        fleet = [{"metric": m.metric, "label": m.label} for m in raster_read.rasters_of(s, run_id)]
        stacks = stacks_of(s, row.id, ctx.now())
    bar = goodput_bar(run)
    charts = chart_payload(run, ctx.now(), panels, ctx.references.get(row.watch, {}), figures)
    order = {"blind": 0, "warming": 1, "unknown": 2, "covered": 3, "ended": 4, "unused": 5}
    return {
        "run": run,
        "coverage": coverage,
        "cov_rules": sorted(coverage.rules, key=lambda r: order.get(r.state, 9)),
        "charts": charts,
        "story": story(run),
        "bar_all": bar,
        "bar": [b for b in bar if b["w"] > 0],
        "fleet": sorted(fleet, key=lambda m: m["metric"] != "sm_active"),
        "stacks": stacks,
        "stack_nodes": connected(ctx, row.id),  # wrappers polling now: a capture can be asked
    }


@router.get("/runs/{run_id:path}", response_class=HTMLResponse)
def run_page(run_id: str, request: Request, ctx: ApiContext = Depends(context)) -> Response:
    if (denied := guard(request, ctx)) is not None:
        return denied
    values = run_values(ctx, run_id)
    if values is None:  # a display name or a source's own run id (an old link): the run, or a choice
        with ctx.sessions() as s:
            found = views.lookup_runs(s, run_id)
        if len(found) == 1:
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(run_url(found[0].id) + query, status_code=303)
        if found:
            return page(request, ctx, "runs_named.html", 300, key=run_id, runs=found)
        watch = watch_values(ctx, run_id)  # a watch's own alerts carry the watch as their run
        if watch is not None:
            return page(request, ctx, "watch.html", **watch)
        return page(
            request, ctx, "error.html", 404, title="No such run", message=f"No run with id {run_id!r}."
        )
    axis = "step" if request.query_params.get("axis") == "step" else "time"
    chosen = request.query_params.get("range", "")
    span = chosen if chosen in CHART_RANGES else ""
    return page(request, ctx, "run.html", axis=axis, span=span, ranges=CHART_RANGES, **values)


@router.get("/fragments/runs/{run_id:path}", response_class=HTMLResponse)
def run_fragment(run_id: str, request: Request, ctx: ApiContext = Depends(context)) -> Response:
    if (denied := guard(request, ctx, True)) is not None:
        return denied
    values = run_values(ctx, run_id)
    if values is None:
        return Response("no such run", status_code=404)
    part = "story" if request.query_params.get("part") == "story" else "head"
    return page(request, ctx, "_run_live.html", part=part, **values)


# ---- alerts and silences ------------------------------------------------------------------------
def alerts_values(ctx: ApiContext) -> dict[str, Any]:
    now = ctx.now()
    with ctx.sessions() as s:
        silences = views.active_silence_specs(s, now, ctx.silences)
        active = sorted(
            (status.alert_out(a, silences, now) for a in views.active_alerts(s)), key=status.alert_order
        )
        resolved = [
            status.alert_out(a, silences, now)
            for _, a in zip(range(20), views.find_alerts(s, state="resolved"), strict=False)
        ]
        titles = runs_repo.titles(s, (a.run for a in [*active, *resolved]))
    active, resolved = (
        [a.model_copy(update={"run_title": titles.get(a.run)}) for a in x] for x in (active, resolved)
    )
    return {"groups": group_alerts(active), "group_titles": ALERT_GROUPS, "resolved": resolved}


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    return guard(request, ctx) or page(request, ctx, "alerts.html", **alerts_values(ctx))


@router.get("/fragments/alerts", response_class=HTMLResponse)
def alerts_fragment(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    return guard(request, ctx, True) or page(request, ctx, "_alerts.html", **alerts_values(ctx))


def silences_values(ctx: ApiContext) -> dict[str, Any]:
    from monitor.web.silences import silence_out

    now = ctx.now()
    with ctx.sessions() as s:
        active = views.active_alerts(s)
        rows = [silence_out(r, now, ctx.silences, active) for r in views.list_silences(s, now, None, 200)]
    return {
        "live": [r for r in rows if r.state != "expired"],
        "expired": [r for r in rows if r.state == "expired"],
    }


@router.get("/silences", response_class=HTMLResponse)
def silences_page(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    if (denied := guard(request, ctx)) is not None:
        return denied
    created = request.query_params.get("created")
    return page(request, ctx, "silences.html", created=created, form=None, error=None, **silences_values(ctx))


def alert_param(request: Request) -> int | None:
    """``?alert=`` as an alert id (empty: none); anything else, a huge number or digits that are not
    ASCII (``²``, ``①``) included, is a 422 that says so."""
    raw = request.query_params.get("alert") or ""
    if not raw:
        return None
    if len(raw) > 10 or not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_ID:
        raise HTTPException(422, f"alert: {raw[:20]!r} is not an alert id")
    return int(raw)


def prefill(ctx: ApiContext, alert_id: int | None) -> dict[str, str]:
    """A new silence's form, filled in from the alert it is for."""
    form = {"matchers": "", "duration": "2h", "comment": "", "alert": ""}
    if alert_id is not None:
        with ctx.sessions() as s:
            a = views.get_alert(s, alert_id)
        if a is not None:
            form["matchers"] = f'alertname="{a.rule}"\nrun="{a.run_id}"'
            form["alert"] = str(a.id)
    return form


@router.get("/silences/new", response_class=HTMLResponse)
def silence_form(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    if (denied := guard(request, ctx)) is not None:
        return denied
    form = prefill(ctx, alert_param(request))
    return page(request, ctx, "silence_new.html", form=form, error=None)
