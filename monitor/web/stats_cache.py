"""The figures derived from each run's stored ``stats`` (latest values, rate, ETA, goodput report),
computed once per poll of the run instead of once per request.

The engine rewrites ``runs.stats`` together with ``last_polled_at`` on every poll, so (last polled,
last seen, last step, restarts) identifies a version of the stats. A page over 200 runs then reads
the stats JSON (the heaviest column: the goodput state and the rate window) only of the runs polled
since the previous page, in one query; the rest come from here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from monitor.runs.goodput_report import report_of
from monitor.storage import views
from monitor.storage.models import Run

Key = tuple[float | None, float | None, int | None, int | None]


@dataclass(frozen=True)
class Derived:
    stats: dict[str, Any]  # the stored stats less the bulky tracker state
    report: dict[str, Any] | None  # goodput up to the run's last poll


def key_of(run: Run) -> Key:
    return (run.last_polled_at, run.last_seen_at, run.last_step, run.restarts)


def as_of(run: Run, stats: dict[str, Any], now: float) -> float:
    """Goodput is reported up to the run's last poll (a source outage since the source's last answer is
    booked source blind, not as the run pausing: monitor.runs.goodput_book)."""
    return min(now, run.last_polled_at) if run.last_polled_at is not None else now


def derive(run: Run, stats: dict[str, Any] | None, now: float) -> Derived:
    stats = stats or {}
    light = {k: v for k, v in stats.items() if k not in ("goodput", "recent")}
    return Derived(light, report_of(stats, as_of(run, stats, now)))


class StatsCache:
    def __init__(self, size: int = 20_000) -> None:
        self._data: OrderedDict[str, tuple[Key, Derived]] = OrderedDict()
        self._lock = threading.Lock()
        self.size = size

    def get_many(self, s: Session, runs: Sequence[Run], now: float) -> dict[str, Derived]:
        """Derived figures of ``runs`` (loaded with ``stats`` deferred): one query for the stale ones."""
        out: dict[str, Derived] = {}
        stale: list[Run] = []
        with self._lock:
            for run in runs:
                hit = self._data.get(run.id)
                if hit is not None and hit[0] == key_of(run) and run.last_polled_at is not None:
                    out[run.id] = hit[1]
                else:
                    stale.append(run)
        if not stale:
            return out
        loaded = views.stats_of(s, [r.id for r in stale])
        fresh = {run.id: (key_of(run), derive(run, loaded.get(run.id), now)) for run in stale}
        with self._lock:
            for run in stale:
                k, d = fresh[run.id]
                out[run.id] = d
                if run.last_polled_at is not None and now >= run.last_polled_at:  # else it depends on now
                    self._data[run.id] = (k, d)
                    self._data.move_to_end(run.id)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return out
