"""The demo's past, for ``/reports``: while the demo runs, its simulated runs' previous attempts are
played through the real engine from the start of the last full week (the report's default period) up
to the demo's start, on a manual clock, in the background: goodput, incidents, the pages the rules
raised. Up to the demo's start, not only to the week's end: the demo's clock runs 30x, so it soon
crosses into the next week, and that week's report then shows the past up to the live runs, not a
week with nothing before them.

They are their own watches and runs (``<watch>-lastweek``, ``<run>-lastweek``), so the live demo and
the past never share a run; their runs finish as the week ends (their open alerts resolve, as a
finished run's do). Nobody is told
about the past: its receivers are ``dashboard`` receivers (recorded, never sent), so no outbox row is
written that the live demo's dispatcher could deliver as news.
"""

from __future__ import annotations

import logging
import threading
import time

from alerts.clock import ManualClock, SystemClock
from alerts.notifiers.dashboard import DashboardReceiver
from monitor.config.schema import WatchConfig
from monitor.reports.period import Period, last_full_week, make, zone
from monitor.runs import backfill
from monitor.settings import Settings

POLL = 300.0  # seconds of simulated time between polls of the past (the rules see every sample)
SUFFIX = "-lastweek"
PAUSE = 0.01  # real seconds between polls of the past
log = logging.getLogger(__name__)


def past_config(cfg: WatchConfig, finish_after: float | None = None) -> WatchConfig:
    """The demo's watches as last week's: renamed, each simulated run under its own name, finishing
    ``finish_after`` seconds after its first poll."""
    watches = []
    for w in cfg.watch:
        update = {"run": (w.sim.run or w.name) + SUFFIX, "finish_after": finish_after}
        sim = w.sim.model_copy(update=update) if w.sim is not None else None
        watches.append(w.model_copy(update={"name": w.name + SUFFIX, "sim": sim}))
    quiet = [DashboardReceiver(name=r.name, kind="dashboard") for r in cfg.receivers]
    return cfg.model_copy(update={"watch": watches, "receivers": quiet, "reports": [], "watchdog": None})


def play(
    cfg: WatchConfig, settings: Settings, stop: threading.Event | None = None, period: Period | None = None
) -> None:
    """Play the demo's runs' previous attempts into the database, over ``period`` (by default from the
    start of the last full week to now)."""
    from monitor.service import build_service

    now = SystemClock().time()
    week = period or since_last_week(now)
    clock = ManualClock(week.start - 3600.0)
    first_poll = clock.time() + POLL  # the simulated runs start then, and finish as the week ends
    service = build_service(past_config(cfg, week.end - first_poll), settings, clock, auto_migrate=True)
    service.engine.resume()
    names = list(service.engine.watches)
    start, span = clock.time(), week.end - clock.time()
    backfill.playing(names, 0.0)  # the overview leaves these runs out until their week is played
    try:
        while clock.time() < week.end and not (stop and stop.is_set()):
            clock.advance(min(POLL, week.end - clock.time()))
            for name in names:
                service.engine.poll(name)
            backfill.playing(names, (clock.time() - start) / span)
            time.sleep(PAUSE)  # the live demo comes first: the past takes a few minutes more
    except Exception:  # the past is a nicety: the live demo goes on without it
        log.exception("could not play the demo's last week")
    finally:
        backfill.over(names)
        service.engine.close()
        for src in service.sources.values():
            src.close()
        service.db.dispose()


def since_last_week(until: float) -> Period:
    """From the start of the last full week (as of ``until``) to ``until``."""
    return make(last_full_week(until, zone("UTC")).start, until, zone("UTC"))


def start(cfg: WatchConfig, settings: Settings, until: float) -> threading.Thread:
    """Play the past up to ``until`` (the live demo's start, on its clock) in a background thread."""
    period = since_last_week(until)
    args = (cfg, settings, None, period)
    thread = threading.Thread(target=play, args=args, name="demo-history", daemon=True)
    thread.start()
    return thread
