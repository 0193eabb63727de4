"""The demo's past: before the demo starts, its simulated runs are played through the real engine from
the start of the last full week up to now, on a manual clock, so that ``/reports`` (the last full week by
default) shows a real report of them: goodput, incidents, the pages the rules raised, alert quality.

Nobody is told about the past: its notifications go to a console nobody reads. The runs then carry on
live from where the history stopped (the sources' cursors and the rules' state are stored as after a
restart).
"""

from __future__ import annotations

import io
from collections.abc import Callable

from alerts.clock import ManualClock, SystemClock
from alerts.notifiers.console import ConsoleNotifier
from monitor.config.schema import WatchConfig
from monitor.reports.period import last_full_week, zone
from monitor.settings import Settings

POLL = 900.0  # seconds of simulated time between polls of the past (the rules see every sample)


def play(cfg: WatchConfig, settings: Settings, progress: Callable[[float], None] | None = None) -> float:
    """Play the demo's watches from the start of the last full week to now; returns the seconds played."""
    from monitor.service import build_service

    now = SystemClock().time()
    start = last_full_week(now, zone("UTC")).start - 3600.0
    clock = ManualClock(start)
    service = build_service(cfg, settings, clock, auto_migrate=True)
    service.dispatcher.notifiers = {
        name: ConsoleNotifier(stream=io.StringIO()) for name in service.dispatcher.notifiers
    }
    service.engine.resume()
    try:
        while clock.time() < now:
            clock.advance(min(POLL, now - clock.time()))
            for name in service.engine.watches:  # the watches' writes go in one batch
                service.engine.poll(name, wait=False)
            service.engine.batches.drain()
            if int(clock.time() // 3600) != int((clock.time() - POLL) // 3600):
                service.dispatcher.run_once()  # hourly is enough: nobody reads these
            if progress is not None:
                progress((clock.time() - start) / (now - start))
        service.engine.checkpoint()
    finally:
        service.engine.close()
        for src in service.sources.values():
            src.close()
        service.db.dispose()
    return now - start
