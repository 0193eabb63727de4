"""The overview page and its 5-second refresh, from the status snapshot.

The list of runs (``_overview_body.html``: a head, then one row a run) is rendered once per snapshot and
kind and kept with it, with its ETag, whose hex digits are the list's version (``data-version``). The
refresh (static/overview_refresh.js) asks ``/fragments/overview/changes?since=<version>``: ``304 Not
Modified`` with no body while nothing the page shows has changed, else only the rows and head that
changed (``overview_changes``), or the whole list when its version is not one this app remembers. Every
row, on the page and in a refresh, is rendered by :func:`run_row`. The whole page adds the viewer's
header (their name, their CSRF token) around the same list.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markupsafe import Markup

from monitor.web import status
from monitor.web.conditional import Encoded, answer, current, encoded, memo
from monitor.web.context import ApiContext
from monitor.web.dashboard import overview_changes as changes
from monitor.web.dashboard.charts import Spark
from monitor.web.dashboard.pages import ALERT_GROUPS, REFRESH_SECONDS, group_alerts, guard
from monitor.web.dashboard.templating import Renderer
from monitor.web.schemas import RunOut
from monitor.web.snapshot import Snapshot
from monitor.web.viewer import Viewer, look_up_session, viewer_of

router = APIRouter(include_in_schema=False)
HTML = "text/html; charset=utf-8"


def overview_values(request: Request, ctx: ApiContext, snap: Snapshot, kind: str | None) -> dict[str, Any]:
    counts = snap.kinds
    every = sorted(snap.runs_of(kind), key=status.urgency)
    done = {r.id for r in every if status.finished(r, snap.now)}
    runs = [r for r in every if r.id not in done]  # the live runs, most urgent first
    with ctx.sessions() as s:
        sparks = request.app.state.sparks.by_headline(s, [(r.id, r.headline.metric) for r in every])
    known = [k for k in ctx.layouts.kind_names() if k in counts] + sorted(
        set(counts) - set(ctx.layouts.kind_names())
    )
    return {
        "runs": runs,
        "sparks": sparks,
        "health": Counter(r.health for r in runs),
        "finished": [r for r in every if r.id in done],  # over and done with, apart (status.finished)
        "finished_after": status.FINISHED_AFTER,
        "groups": group_alerts(snap.urgent_alerts(every if kind is not None else None)),
        "group_titles": ALERT_GROUPS,
        "kind": kind,
        "kinds": [(k, counts[k]) for k in known],
        "total": sum(counts.values()),
        "refresh": REFRESH_SECONDS,
        "backfill": sorted(snap.backfill.items()),  # watches whose past is being played, left out
    }


def the_kind(request: Request, snap: Snapshot) -> str | None:
    kind = request.query_params.get("kind") or None
    return kind if kind in snap.kinds else None  # a kind no run has (or a stale link): every run


def run_row(renderer: Renderer, now: float, run: RunOut, spark: Spark | None, finished: bool = False) -> str:
    """One run's row (``_run_row.html``): the one way a row is rendered, for the page and its refresh;
    a finished run's row says so (``data-section``), and the refresh puts it in the Finished list."""
    return renderer.render("_run_row.html", now, r=run, sp=spark, finished=finished)


def fragment(request: Request, snap: Snapshot, kind: str | None) -> changes.Rendered:
    """The live section (``_overview.html``) of this snapshot and kind, with its ETag, and its pieces
    (remembered as a generation the refresh can ask for the changes since)."""
    ctx: ApiContext = request.app.state.ctx
    renderer = request.app.state.renderer
    values = overview_values(request, ctx, snap, kind)
    head = renderer.render("_overview_head.html", snap.now, **values)
    sparks = values["sparks"]
    rows = {r.id: run_row(renderer, snap.now, r, sparks.get(r.id)) for r in values["runs"]}
    done = {r.id: run_row(renderer, snap.now, r, sparks.get(r.id), True) for r in values["finished"]}
    body = renderer.render(
        "_overview_body.html",
        snap.now,
        head=Markup(head),
        rows=[Markup(h) for h in rows.values()],
        finished_rows=[Markup(h) for h in done.values()],
        finished_after=values["finished_after"],
    )
    live = len(rows)
    rows.update(done)  # the refresh's order: the live runs, then the finished
    etag = encoded(f"overview|{kind}", body.encode()).etag
    html = renderer.render(
        "_overview.html", snap.now, body=Markup(body), version=changes.version_of(etag), **values
    )
    made = changes.rendered(Encoded(html.encode(), etag, HTML), head, rows, live)
    request.app.state.overview_generations.remember(kind, made.generation)
    return made


def whole_page(request: Request, snap: Snapshot, kind: str | None, viewer: Viewer, part: Encoded) -> Encoded:
    ctx: ApiContext = request.app.state.ctx
    html = request.app.state.renderer.render(
        "overview.html",
        snap.now,
        viewer=viewer,
        path="/",
        refresh=REFRESH_SECONDS,
        speed=ctx.speed,
        overview=Markup(part.body.decode()),
    )
    return encoded(f"page|{part.etag}|{viewer}|{snap.now}|{ctx.speed}", html.encode(), HTML)


@router.get("/", response_class=HTMLResponse)
async def overview_page(request: Request) -> Response:
    ctx: ApiContext = request.app.state.ctx
    await look_up_session(request, ctx)
    if (denied := guard(request, ctx)) is not None:
        return denied
    snap = await current(request)
    kind = the_kind(request, snap)
    made = await memo(snap, ("overview", kind), lambda: fragment(request, snap, kind))
    part = made.part
    viewer = viewer_of(request, ctx)
    return answer(
        request,
        await memo(snap, ("page", kind, viewer), lambda: whole_page(request, snap, kind, viewer, part)),
    )


@router.get("/fragments/overview", response_class=HTMLResponse)
async def overview_fragment(request: Request) -> Response:
    ctx: ApiContext = request.app.state.ctx
    await look_up_session(request, ctx)
    if (denied := guard(request, ctx, True)) is not None:
        return denied
    snap = await current(request)
    kind = the_kind(request, snap)
    made = await memo(snap, ("overview", kind), lambda: fragment(request, snap, kind))
    return answer(request, made.part)


NO_STORE = {"Cache-Control": "no-store"}  # the answer depends on ?since: never reused from a cache


@router.get("/fragments/overview/changes")
async def overview_changes(request: Request) -> Response:
    """What changed in the list since the version ``since`` (the page's ``data-version``)."""
    ctx: ApiContext = request.app.state.ctx
    await look_up_session(request, ctx)
    if (denied := guard(request, ctx, True)) is not None:
        return denied
    since = request.query_params.get("since", "")
    if not changes.valid_version(since):
        shown = since[:40] + ("…" if len(since) > 40 else "")
        return JSONResponse(
            {
                "error": f"since: {shown!r} is not a version of the overview "
                "(24 hexadecimal digits, as the page's data-version gives it)"
            },
            status_code=422,
        )
    snap = await current(request)
    kind = the_kind(request, snap)
    made: changes.Rendered = await memo(snap, ("overview", kind), lambda: fragment(request, snap, kind))
    if since == made.generation.version:
        return Response(status_code=304, headers={"ETag": made.part.etag, **NO_STORE})
    old = request.app.state.overview_generations.find(kind, since)
    if old is None:  # too old, from before a restart or from another replica: the whole list
        return answer(request, made.part, headers=NO_STORE)
    # made once per snapshot and remembered version (at most KEEP), however many pages ask
    delta = await memo(
        snap, ("overview-changes", kind, since), lambda: changes.changes(made, old) or made.part
    )
    return answer(request, delta, headers=NO_STORE)
