"""Polling a watch's sources: concurrently, each within its own time limit, results validated where
they enter herowatch.

A source whose poll is slow (stuck in retries against a failing server) must not hold back the
others: each source of a watch is polled in its own thread; the cycle waits at most its budget for
them, and a poll still running then stays in flight. Its result is taken by a later cycle (its
cursors are still the ones it started from: no other poll of that source and watch ran meanwhile),
and ``SourceHealth`` counts it as failing once it has run longer than the source's limit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from alerts.text import bounded
from monitor.config.schema import Watch
from monitor.engine.joins import Joins
from monitor.engine.source_health import SourceHealth
from monitor.sources.base import Cursor, PollResult, Source, Target

log = logging.getLogger(__name__)


def stuck_after(cfg: object, poll_interval: float) -> float:
    """How long a poll of one source may run before it counts as failing: a few times the source's own
    request limit (timeout x attempts), and never less than two poll intervals."""
    timeout = float(getattr(cfg, "timeout", 10.0) or 10.0)
    attempts = int(getattr(cfg, "retries", 0) or 0) + 1
    return max(2 * poll_interval, 3 * timeout * attempts)


@dataclass
class WatchPoller:
    """The sources of one watch, their polls in flight and their health."""

    watch: str
    health: SourceHealth = field(default_factory=SourceHealth)
    inflight: dict[str, Future[PollResult]] = field(default_factory=dict)

    def poll(
        self,
        pool: ThreadPoolExecutor,
        sources: Mapping[str, Source],
        targets: Mapping[str, Target],
        cursors: Mapping[str, Mapping[str, Cursor]],
        time: Callable[[], float],
        budget: float,
    ) -> dict[str, PollResult]:
        """Start a poll of every source not already in flight, wait up to ``budget`` real seconds for
        them, and return the results at hand (finished late polls included), validated."""
        results: dict[str, PollResult] = {}
        started: dict[str, Future[PollResult]] = {}
        for kind, target in targets.items():
            running = self.inflight.get(kind)
            if running is not None:
                if not running.done():
                    continue  # still busy from an earlier cycle: counted as failing once it is stuck
                del self.inflight[kind]
                results[kind] = _outcome(kind, self.watch, running)
                self.health.polled(kind, time(), results[kind].error)
                continue
            self.health.started(kind, time())
            started[kind] = pool.submit(_poll, sources[kind], target, cursors.get(kind, {}), time())
        if started:
            wait(started.values(), timeout=budget)
        for kind, fut in started.items():
            if fut.done():
                results[kind] = _outcome(kind, self.watch, fut)
                self.health.polled(kind, time(), results[kind].error)
            else:
                self.inflight[kind] = fut
                log.warning(
                    "poll of %s for watch %s is taking longer than %.0fs; the other sources go on",
                    kind,
                    self.watch,
                    budget,
                )
        return results


def _poll(source: Source, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
    return source.poll(target, cursors, now)


def _outcome(kind: str, watch: str, fut: Future[PollResult]) -> PollResult:
    try:
        return fut.result().validated()
    except Exception as exc:  # a source bug is an outage of that source, not of herowatch
        log.error("source %s raised while polling %s: %s", kind, watch, bounded(exc), exc_info=exc)
        return PollResult(error=bounded(f"{type(exc).__name__}: {exc}"))


def read_sources(
    poller: WatchPoller,
    pool: ThreadPoolExecutor,
    sources: Mapping[str, Source],
    watch: Watch,
    known: dict[str, dict],
    names: dict[str, str],
    cursors: Mapping[str, Mapping[str, Cursor]],
    time: Callable[[], float],
    budget: float,
    joins: Joins | None = None,
) -> dict[str, PollResult]:
    """One poll of a watch's sources. ``known`` and ``names`` grow with the runs the sources found.
    ``joins``: the watch's joined runs (``join:``), their parts read under their own ids and returned as
    the joined run."""
    if joins is not None and joins.active:
        cursors = {kind: joins.cursors_in(by_run) for kind, by_run in cursors.items()}
    # A watch that knows no run yet hears first from the sources that find runs (a tracker), so that
    # another source of the watch (Prometheus) reads those runs under their ids, not ids of its own.
    phases = [watch.targets()]
    if not known:
        finders = {k: c for k, c in watch.targets().items() if c.finds_runs}
        phases = [finders, {k: c for k, c in watch.targets().items() if k not in finders}]
    results: dict[str, PollResult] = {}
    for phase in phases:
        if not phase:
            continue
        targets = {kind: Target(watch.name, cfg, watch.labels, known, names) for kind, cfg in phase.items()}
        got = poller.poll(pool, sources, targets, cursors, time, budget)
        if joins is not None:
            got = joins.join(got, time())
        for res in got.values():
            for info in res.runs:
                known.setdefault(info.run, dict(info.labels))
                if info.name:
                    names.setdefault(info.run, info.name)
        results.update(got)
    return results
