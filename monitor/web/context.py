"""What the API and dashboard need of the running service, in one object on ``app.state.ctx``: the
web side's port. The composition root fills it in (``Service.api_context``); a read-only replica, a
bench or a test fills in what it has.

All "now" comes from the service's clock (the demo's runs 30x fast; tests move a manual clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from alerts.silences import CompiledSilences
from monitor.rules.panels import Layouts
from monitor.settings import Settings
from monitor.stacks.broker import StackBroker
from monitor.web.poll_counter import PollCounter
from monitor.web.stats_cache import StatsCache

if TYPE_CHECKING:
    from monitor.config.schema import WatchConfig
    from monitor.delivery.pipeline import Pipeline
    from monitor.delivery.send_stats import SendLatency
    from monitor.engine.cycle import Engine
    from monitor.engine.gc_policy import GcPolicy

DEFAULT_POLL_INTERVAL = 60.0
STALE_POLLS = 3  # a source or run not polled for this many intervals is late


@dataclass
class ApiContext:
    sessions: sessionmaker[Session]
    clock: Clock
    settings: Settings
    poll_intervals: dict[str, float] = field(default_factory=dict)  # watch -> seconds
    engine: Engine | None = None  # when a poller runs in this process
    outbox: Pipeline | None = None
    config: WatchConfig | None = None  # the watch config served (its watches, the reports' GPU counts)
    send_latency: SendLatency | None = None  # the notifiers' send times (/metrics)
    gc_policy: GcPolicy | None = None  # the collector's pauses (/metrics)
    scheduler: Callable[[], Any] = lambda: None  # the service's job scheduler, once started (poll counts)
    polls: PollCounter = field(default_factory=PollCounter)
    stats_cache: StatsCache = field(default_factory=StatsCache)
    layouts: Layouts = field(default_factory=Layouts)  # run kinds and panels of the packs in force
    references: dict[str, dict[str, float]] = field(default_factory=dict)  # watch -> reference values
    external_url: str | None = None  # server.external_url: where people reach the dashboard (links)
    # silences' compiled matchers, kept while each is in force (the delivery pipeline's own, when served
    # with the engine: one compilation per silence in the process)
    silences: CompiledSilences = field(default_factory=CompiledSilences)
    # the wrappers' long polls and the stack captures asked of them (one per serve process)
    stacks: StackBroker | None = None

    def now(self) -> float:
        return self.clock.time()

    @property
    def speed(self) -> float:
        """How much faster than real time the clock runs: 1, or the demo's ScaledClock's speed."""
        return float(getattr(self.clock, "speed", 1.0))

    @property
    def simulated(self) -> bool:
        return self.speed != 1.0

    def poll_interval(self, watch: str) -> float:
        return self.poll_intervals.get(watch, DEFAULT_POLL_INTERVAL)

    def source_intervals(self) -> dict[str, float]:
        """Source kind -> the shortest poll interval of the watches that use it and that this replica
        polls (with several replicas, each holds the leases of some watches only)."""
        out: dict[str, float] = {}
        if self.engine is None:
            return out
        for w in self.engine.watches.values():
            if self.engine.leases is not None and w.name not in self.engine.adopted:
                continue
            for kind in w.targets():
                out[kind] = min(out.get(kind, float("inf")), float(w.poll_interval))
        return out


async def context(request: Request) -> ApiContext:
    """FastAPI dependency: the app's context (async: no worker thread for a dictionary lookup)."""
    return request.app.state.ctx


CLOCK_SPEED_HEADER = "X-Herowatch-Clock-Speed"


def clock_header(request: Request, response: Response) -> None:
    """Router dependency: tells clients (``herowatch silence``) when durations run on a simulated clock."""
    ctx: ApiContext = request.app.state.ctx
    if ctx.simulated:
        response.headers[CLOCK_SPEED_HEADER] = f"{ctx.speed:g}"
