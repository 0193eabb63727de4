"""The composition root: builds sources, rules, engine, outbox dispatcher, scheduler and API from
config + settings + clock, and nothing else does. It hands each part only what it uses (the API and
the dashboard ``api_context``, Socket Mode ``SlackPorts``, the report schedule a ``ReportJob``); only
the entry points (monitor/cli) import it."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine as DbEngine
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from alerts.notifiers.base import refresh_every
from alerts.outbox import Dispatcher
from monitor.alerting_setup import build_inhibit_rules, build_notifiers, build_route, check_matchers
from monitor.config.schema import WatchConfig
from monitor.config_rules import build_layouts, build_rules
from monitor.database_setup import DatabaseInUse, SchemaNotReady, lock_sqlite, prepare_database
from monitor.delivery import reminders
from monitor.delivery.compose import Composer
from monitor.delivery.enqueue import Enqueuer
from monitor.delivery.pipeline import Pipeline
from monitor.delivery.send_stats import SendLatency
from monitor.delivery.stacks_settle import StackSettler
from monitor.engine.cycle import Engine
from monitor.engine.gc_policy import GcPolicy
from monitor.engine.scheduling import add_interval_job, make_scheduler
from monitor.engine.stack_asks import StackAsks
from monitor.reports import schedule as report_schedule
from monitor.reports.schedule import ReportJob
from monitor.rules.loader import RuleSet
from monitor.rules.spec import RuleSpec
from monitor.settings import Settings
from monitor.sources.base import Source
from monitor.sources.registry import make_source
from monitor.stacks.broker import StackBroker
from monitor.storage import goodput_repo
from monitor.storage.db import is_sqlite, make_sessionmaker
from monitor.storage.leases import Leases
from monitor.web.context import ApiContext
from monitor.web.slack import socket_mode
from monitor.web.slack.socket_mode import SlackPorts, SocketMode

log = logging.getLogger(__name__)
__all__ = ["DatabaseInUse", "SchemaNotReady", "Service", "build_service", "lock_sqlite", "prepare_database"]


def runbooks_base(cfg: WatchConfig) -> str:
    """The base of the runbook links (``{runbooks}`` in a rule's ``runbook_url``): the configured wiki, else
    the runbooks herowatch serves itself, under ``server.external_url`` when set (for Slack) or as a
    path on the dashboard."""
    if cfg.server.runbooks_url:
        return cfg.server.runbooks_url.rstrip("/")
    return (cfg.server.external_url or "").rstrip("/") + "/runbooks"


def with_runbooks(rules: RuleSet, base: str) -> RuleSet:
    def resolved(spec: RuleSpec) -> RuleSpec:
        url = spec.annotations.get("runbook_url", "")
        if "{runbooks}" not in url:
            return spec
        annotations = {**spec.annotations, "runbook_url": url.replace("{runbooks}", base)}
        return spec.model_copy(update={"annotations": annotations})

    return RuleSet(tuple(resolved(r) for r in rules.rules))


@dataclass
class Service:
    config: WatchConfig
    settings: Settings
    clock: Clock
    db: DbEngine
    sessions: sessionmaker[Session]
    engine: Engine
    dispatcher: Dispatcher
    outbox: Pipeline
    speed: float = 1.0
    sources: dict[str, Source] = field(default_factory=dict)
    started_at: float | None = None
    send_latency: SendLatency = field(default_factory=SendLatency)  # for /metrics
    refresh: dict[str, float] = field(default_factory=dict)  # receiver -> re-tell what fires this often
    gc_policy: GcPolicy = field(default_factory=GcPolicy)
    socket_mode: SocketMode | None = None  # Slack's buttons and /herowatch over Socket Mode (SLACK_APP_TOKEN)
    stacks: StackBroker | None = None  # the wrappers' long polls: stack captures (monitor.stacks)
    settler: StackSettler | None = None  # settled captures: culprits stored, Slack clicks answered
    scheduler: BackgroundScheduler | None = field(default=None, init=False)  # set by ``start``
    _lock_fd: int | None = field(default=None, init=False, repr=False)  # the SQLite file's lock, while held

    def claim_database(self, held: int | None = None) -> None:
        """SQLite is single-process: refuse to start when another herowatch uses the same file.
        ``held``: the lock already taken by :func:`lock_sqlite` (the demo takes it before touching files)."""
        if held is not None:
            self._lock_fd = held
        if self._lock_fd is None:
            self._lock_fd = lock_sqlite(self.settings.database_url)

    def start(self) -> None:
        self.claim_database()
        self.started_at = self.clock.time()
        self.engine.resume()
        watches = self.config.watch
        self.scheduler = sched = make_scheduler(workers=16 if len(watches) > 8 else 8)
        spread = 0.0 if len(watches) <= 16 else min(0.02 * len(watches), 1.0)  # of an interval: stagger
        for i, w in enumerate(watches):
            real = w.poll_interval / self.speed
            add_interval_job(
                sched,
                f"poll:{w.name}",
                # hands its results to the batch writer and returns (engine.batching): the next poll of
                # the watch waits for that write, a failed write lets the watch go
                lambda n=w.name: self.engine.poll(n, wait=False),
                real,
                jitter=min(real * 0.1, 5.0),
                first_in=real * spread * i / len(watches),
            )
        if watches:  # source health on its own clock (a stuck poll cannot delay it): one job for all
            every = min(min(w.poll_interval, 5.0) for w in watches) / self.speed
            add_interval_job(sched, "health", self.engine.check_health, every)
        add_interval_job(sched, "outbox", self.dispatcher.run_once, 1.0)
        planner = min([60.0, *(every / 2 for every in self.refresh.values())])  # a refresh is never late
        add_interval_job(sched, "repeats", self.plan_repeats, planner / self.speed)
        if self.settler is not None:
            add_interval_job(sched, "stacks_settle", self.settle_stacks, 1.0)
        if self.config.watchdog:
            add_interval_job(sched, "watchdog", self.heartbeat, self.config.watchdog.interval / self.speed)
        zone = (
            self.config.reports[0].timezone if self.config.reports else "UTC"
        )  # old goodput slots: hours, days
        compact = lambda: goodput_repo.compact_now(self.sessions, self.clock.time(), zone)  # noqa: E731
        add_interval_job(
            sched, "goodput-compact", compact, goodput_repo.COMPACT_EVERY / self.speed, first_in=60.0
        )
        self.gc_policy.install()  # full collections skip the runs' long-lived state (engine.gc_policy)
        every = self.gc_policy.thaw_every
        add_interval_job(sched, "gc", self.gc_policy.full_collection, every, first_in=every)
        self.scheduler.start()
        if self.socket_mode is not None:
            self.socket_mode.start(self.scheduler)
        env = {**os.environ, **self.settings.secret_env()}
        job = ReportJob(self.config, self.sessions, self.clock, env)
        report_schedule.install(sched, job, self.speed)  # scheduled reports, once per period across replicas
        url = self.settings.redacted_database_url()
        log.info("herowatch started: %d watches, database %s", len(self.config.watch), url)

    def api_context(self) -> ApiContext:
        """What the API, the dashboard and Slack's doors use of this service (monitor.web.context)."""
        cfg = self.config
        return ApiContext(
            sessions=self.sessions,
            clock=self.clock,
            settings=self.settings,
            poll_intervals={w.name: float(w.poll_interval) for w in cfg.watch},
            engine=self.engine,
            outbox=self.outbox,
            config=cfg,
            send_latency=self.send_latency,
            gc_policy=self.gc_policy,
            scheduler=lambda: self.scheduler,
            layouts=self.engine.layouts,
            references={w.name: dict(w.references) for w in cfg.watch},
            external_url=cfg.server.external_url,
            silences=self.outbox.silences,
            stacks=self.stacks,
        )

    def _singleton(self, name: str, ttl: float) -> bool:
        """Work one replica does at a time (reminders, heartbeat): held by lease across replicas."""
        return self.engine.leases is None or self.engine.leases.acquire(name, self.clock.time(), ttl)

    def plan_repeats(self) -> int:
        if not self._singleton("planner", 180.0):
            return 0
        with self.sessions.begin() as s:
            return reminders.plan(
                s, self.clock.time(), self.outbox.inhibit_rules, self.outbox.silences, self.refresh
            )

    def settle_stacks(self) -> int:
        if self.settler is None or not self._singleton("stacks_settle", 30.0):
            return 0
        return self.settler.run_once()

    def heartbeat(self) -> None:
        wd = self.config.watchdog
        if wd is not None and self._singleton("watchdog", 3 * wd.interval):
            with self.sessions.begin() as s:
                reminders.heartbeat(s, wd.receiver, wd.interval, self.clock.time())

    def stop(self) -> None:
        if self.socket_mode is not None:
            self.socket_mode.stop()  # first: no click may act while the rest shuts down
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.gc_policy.uninstall()
        try:
            saved = self.engine.checkpoint()  # every rule resumes where it was after the restart
            log.info("herowatch stopping: rule state of %d runs saved", saved)
        except Exception:  # a database that is gone must not turn a stop into a crash
            log.exception("could not save the rule state at shutdown")
        self.engine.close()
        for src in self.sources.values():
            src.close()
        self.db.dispose()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None


def build_service(
    cfg: WatchConfig,
    settings: Settings,
    clock: Clock,
    *,
    base_dir: Path = Path("."),
    config_path: str = "<config>",
    speed: float = 1.0,
    auto_migrate: bool | None = None,
) -> Service:
    rules = with_runbooks(build_rules(cfg, base_dir, config_path), runbooks_base(cfg))
    layouts = build_layouts(cfg, rules, base_dir, config_path)
    check_matchers(cfg, config_path)
    db = prepare_database(settings, auto_migrate)
    sessions = make_sessionmaker(db)
    kinds = {k for w in cfg.watch for k in w.targets()}
    sources = {k: make_source(k, settings) for k in sorted(kinds)}
    enqueuer = Enqueuer(build_route(cfg.route), {r.name: r.kind for r in cfg.receivers})
    composer = Composer(
        cfg.server.external_url,
        {r.name: bool(getattr(r, "actions", False)) for r in cfg.receivers},
        runbooks_base(cfg),
    )
    worker = f"{socket.gethostname()}:{os.getpid()}"
    leases = None if is_sqlite(settings.database_url) else Leases(sessions, worker)
    stacks = StackBroker(clock.time, hold=settings.stacks_hold)
    engine = Engine(
        watches=cfg.watch,
        sources=sources,
        rules=rules,
        delivery=enqueuer,
        sessions=sessions,
        clock=clock,
        leases=leases,
        speed=speed,
        layouts=layouts,
        asks=StackAsks(stacks),
    )
    notifiers = build_notifiers(cfg, settings, config_path)
    outbox = Pipeline(sessions, composer, build_inhibit_rules(cfg))
    latency = SendLatency({r.name: r.kind for r in cfg.receivers})
    dispatcher = Dispatcher(outbox, notifiers, clock.time, worker=worker, observer=latency.observe)
    refresh = {name: every for name, n in notifiers.items() if (every := refresh_every(n)) is not None}
    service = Service(
        config=cfg,
        settings=settings,
        clock=clock,
        db=db,
        sessions=sessions,
        engine=engine,
        dispatcher=dispatcher,
        outbox=outbox,
        speed=speed,
        sources=sources,
        send_latency=latency,
        refresh=refresh,
        stacks=stacks,
        settler=StackSettler(sessions, clock.time, notifiers, cfg.server.external_url),
    )
    ports = SlackPorts.of(service.api_context())
    service.socket_mode = socket_mode.from_settings(settings, ports)  # None without SLACK_APP_TOKEN
    return service
