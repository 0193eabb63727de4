"""The status API and the on-call dashboard in one FastAPI app. Reads what the engine wrote; the only
writes are on-call's silences and acknowledgements."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from fastapi import FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import SQLAlchemyError

from monitor import __version__
from monitor.web import errors
from monitor.web.api import (
    alerts,
    audit,
    fleet,
    health,
    ingest,
    metrics,
    report,
    runs,
    silences,
    slack,
    stacks,
    stacks_ingest,
)
from monitor.web.api.slack_replay import SlackReplays
from monitor.web.auth import end_other_tokens_sessions
from monitor.web.context import ApiContext
from monitor.web.edge import BodyLimit, CleanTarget, HostCheck
from monitor.web.identity import ProxySignIns, RefusalBudget
from monitor.web.oidc import Provider
from monitor.web.oidc import configured as oidc_configured
from monitor.web.proxy import ForwardedHeaders
from monitor.web.snapshot import SnapshotStore
from monitor.web.throttle import LoginThrottle

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "dashboard" / "static"

DESCRIPTION = """
Health of long GPU training runs: every run's state at a glance, one run's whole story (series,
restarts, goodput, alert timeline), alerts, silences and acknowledgements.

**Auth.** Reads are open unless `HEROWATCH_PROTECT_READS=true`. Changes (POST and DELETE) need a role
that grants them (docs/security.md has the table): `Authorization: Bearer <token>` with a personal API
token (issued from the dashboard's Tokens page; it acts as its person) or the shared automation token
`HEROWATCH_API_TOKEN` (recorded as `automation`), or a person named by the trusted sign-in proxy.
Without any sign-in configured they are refused with 403, whatever address the server listens on.
Every change and every refused attempt is in the audit trail (`GET /api/audit`).
`/healthz` is always open; `/readyz` answers its verdict to anyone and its details only to readers.

**Limits.** Bodies over `HEROWATCH_MAX_BODY_API` (1 MiB) get 413 before they are read; a `Host`
not in `HEROWATCH_ALLOWED_HOSTS` (IP addresses and localhost always pass) gets 400. See
docs/security.md.

**Errors** are JSON: `{"error": "what went wrong", "detail": ...}`.

**Times** are ISO 8601 UTC; durations are seconds. "Now" is herowatch's clock (the demo's runs 30x).
"""

TAGS = [
    {"name": "runs", "description": "Watched runs: health, progress, goodput, series, timeline"},
    {"name": "alerts", "description": "Alert instances; acknowledging"},
    {"name": "silences", "description": "Muting alerts by label matchers for a while"},
    {
        "name": "reports",
        "description": "The hero-run report: where the GPU-hours went, incidents, alert quality",
    },
    {"name": "rules", "description": "The loaded rules"},
    {"name": "health", "description": "Liveness, readiness, Prometheus metrics"},
    {"name": "audit", "description": "Who did what, through which door, and what was refused"},
    {"name": "ingest", "description": "Jobs push their own samples (a push watch's ingest token)"},
    {"name": "slack", "description": "Slack's interactivity endpoint (signed by Slack, not the API token)"},
]


class Served(Protocol):
    """What the app serves: anything that hands out its port (the composition root's ``Service``)."""

    def api_context(self) -> ApiContext: ...


def create_app(
    service: Served | ApiContext,
    on_start: Callable[[], None] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> FastAPI:
    """The app over a built service's port (or a bare ApiContext, e.g. for a read-only replica or a
    bench).

    ``on_start``/``on_stop`` run in the server's lifespan (the CLI passes the service's start/stop).
    """
    ctx = service if isinstance(service, ApiContext) else service.api_context()

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        if on_start:
            on_start()
        _end_stale_sessions(ctx)
        ctx.polls.attach(ctx.scheduler())
        try:
            yield
        finally:
            if on_stop:
                on_stop()

    app = FastAPI(
        title="herowatch",
        version=__version__,
        description=DESCRIPTION,
        openapi_tags=TAGS,
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc are the dashboard's, on vendored assets (no CDN)
        redoc_url=None,
    )
    app.state.ctx = ctx
    app.state.snapshots = SnapshotStore()  # the status every reader shares (monitor.web.snapshot)
    app.state.registry = metrics.make_registry(ctx, app.state.snapshots)
    app.state.login_throttle = LoginThrottle()
    app.state.refusals = RefusalBudget()  # refused requests written to the audit trail (bounded)
    app.state.proxy_sign_ins = ProxySignIns()  # a proxy-signed person's first request is a sign-in
    app.state.oidc = Provider(ctx.settings) if oidc_configured(ctx.settings) else None
    app.state.slack_replays = SlackReplays()
    watches = ctx.config.watch if ctx.config is not None else []
    app.state.ingest = ingest.IngestDoor.from_watches(watches, ctx.settings.ingest_dir)  # push watches' door
    errors.install(app)
    for module in (
        health,
        fleet,
        stacks,
        runs,
        alerts,
        silences,
        audit,
        report,
        metrics,
        slack,
        ingest,
        stacks_ingest,
    ):  # fleet and stacks before runs: their paths
        app.include_router(module.router)
    _mount_dashboard(app)
    settings = ctx.settings
    # The last added runs first: proxy headers (trusted proxies only) -> security headers on every
    # answer -> Host check -> NUL bytes -> body size -> gzip -> the routes.
    app.add_middleware(GZipMiddleware, minimum_size=2048, compresslevel=5)  # pages of 200 runs, on a phone
    app.add_middleware(
        BodyLimit, api=settings.max_body_api, form=settings.max_body_form, slack=settings.max_body_slack
    )
    app.add_middleware(CleanTarget)
    app.add_middleware(HostCheck, allowed=settings.allowed_hosts)
    app.add_middleware(errors.SecurityHeaders)
    app.add_middleware(ForwardedHeaders, trusted=settings.trusted_proxies)
    return app


def _end_stale_sessions(ctx: ApiContext) -> None:
    """Dashboard sessions of an earlier API token end now (monitor.web.auth)."""
    try:
        ended = end_other_tokens_sessions(ctx)
    except SQLAlchemyError as exc:  # the database is down: it says so elsewhere; the cookies fail anyway
        log.warning("could not end the dashboard sessions of an earlier API token: %s", exc)
        return
    if ended:
        log.warning("ended %d dashboard session(s) started under an earlier API token", ended)


def _mount_dashboard(app: FastAPI) -> None:
    from monitor.web.dashboard import (
        docs_pages,
        forms,
        history,
        oidc_pages,
        overview,
        pages,
        people,
        reports_page,
    )
    from monitor.web.dashboard.charts import SparkCache
    from monitor.web.dashboard.overview_changes import Generations
    from monitor.web.dashboard.templating import Renderer

    app.state.renderer = Renderer()
    app.state.sparks = SparkCache()
    app.state.overview_generations = Generations()  # the last few versions of the overview's list
    app.include_router(overview.router)
    app.include_router(history.router)
    app.include_router(pages.router)
    app.include_router(forms.router)
    app.include_router(people.router)
    app.include_router(oidc_pages.router)
    app.include_router(docs_pages.router)
    app.include_router(reports_page.router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
