"""The overview page and its 5-second refresh, from the status snapshot.

The list of runs (``_overview_body.html``) is rendered once per snapshot and kind and kept with it, with
its ETag. The refresh sends that ETag back (``hx-headers``): while nothing the page shows has changed
the answer is ``304 Not Modified`` with no body, and htmx leaves the page as it is. The whole page adds
the viewer's header (their name, their CSRF token) around the same list.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from monitor.web import status
from monitor.web.conditional import Encoded, answer, current, encoded, memo
from monitor.web.context import ApiContext
from monitor.web.dashboard.pages import ALERT_GROUPS, REFRESH_SECONDS, group_alerts, guard
from monitor.web.snapshot import Snapshot
from monitor.web.viewer import Viewer, viewer_of

router = APIRouter(include_in_schema=False)
HTML = "text/html; charset=utf-8"


def overview_values(request: Request, ctx: ApiContext, snap: Snapshot, kind: str | None) -> dict[str, Any]:
    counts = snap.kinds
    runs = sorted(snap.runs_of(kind), key=status.urgency)
    with ctx.sessions() as s:
        sparks = request.app.state.sparks.by_headline(s, [(r.id, r.headline.metric) for r in runs])
    known = [k for k in ctx.layouts.kind_names() if k in counts] + sorted(
        set(counts) - set(ctx.layouts.kind_names())
    )
    return {
        "runs": runs,
        "sparks": sparks,
        "health": Counter(r.health for r in runs),
        "groups": group_alerts(snap.urgent_alerts(runs if kind is not None else None)),
        "group_titles": ALERT_GROUPS,
        "kind": kind,
        "kinds": [(k, counts[k]) for k in known],
        "total": sum(counts.values()),
        "refresh": REFRESH_SECONDS,
    }


def the_kind(request: Request, snap: Snapshot) -> str | None:
    kind = request.query_params.get("kind") or None
    return kind if kind in snap.kinds else None  # a kind no run has (or a stale link): every run


def fragment(request: Request, snap: Snapshot, kind: str | None) -> Encoded:
    """The live section (``_overview.html``) of this snapshot and kind, with its ETag."""
    ctx: ApiContext = request.app.state.ctx
    renderer = request.app.state.renderer
    values = overview_values(request, ctx, snap, kind)
    body = renderer.render("_overview_body.html", snap.now, **values)
    etag = encoded(f"overview|{kind}", body.encode()).etag
    html = renderer.render("_overview.html", snap.now, body=Markup(body), etag=etag, **values)
    return Encoded(html.encode(), etag, HTML)


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
    if (denied := guard(request, ctx)) is not None:
        return denied
    snap = await current(request)
    kind = the_kind(request, snap)
    part = await memo(snap, ("overview", kind), lambda: fragment(request, snap, kind))
    viewer = viewer_of(request, ctx.settings)
    return answer(
        request,
        await memo(snap, ("page", kind, viewer), lambda: whole_page(request, snap, kind, viewer, part)),
    )


@router.get("/fragments/overview", response_class=HTMLResponse)
async def overview_fragment(request: Request) -> Response:
    ctx: ApiContext = request.app.state.ctx
    if (denied := guard(request, ctx, True)) is not None:
        return denied
    snap = await current(request)
    kind = the_kind(request, snap)
    return answer(request, await memo(snap, ("overview", kind), lambda: fragment(request, snap, kind)))
