"""Derived per-run figures for the API and dashboard: step rate, ETA, latest values, goodput.

Pure: fed every sample once, ``snapshot(now)`` gives a JSON-able dict the engine stores in
``runs.stats``; ``restore`` rebuilds the tracker from that dict after a restart. The goodput
accounting (``monitor.runs.goodput``) rides along: its state is stored under ``stats["goodput"]`` and
``goodput.report_of(stats, now)`` turns it into the breakdown at any later time.
"""

from __future__ import annotations

import math
from typing import Any

from monitor.runs.goodput import UPTIME_KEY, Goodput
from monitor.runs.goodput_book import DataWait

LATEST = ("train/loss", "throughput/tokens_per_second", "throughput/mfu", "grad/norm/total", "eval/loss")
RATE_WINDOW = 64  # steps over which the step rate is measured
STALE_GAPS = 3  # a value is stale once this many of its usual gaps have passed without a new one
DATA_WAIT = ("throughput/loading_time", "throughput/loading_fraction")  # canonical names (profiles)


def _data_wait(metrics: dict[str, float]) -> DataWait | None:
    """What a row logged of the time its steps waited for data: (seconds per step, share of the time)."""
    per_step, share = metrics.get(DATA_WAIT[0]), metrics.get(DATA_WAIT[1])
    if per_step is None and share is None:
        return None
    per_step = per_step if per_step is not None and math.isfinite(per_step) and per_step >= 0 else None
    share = share if share is not None and math.isfinite(share) and 0 <= share <= 1 else None
    return None if per_step is None and share is None else (per_step, share)


def stale_ages(stats: dict[str, Any], now: float, at_least: float) -> dict[str, float]:
    """Metric -> age in seconds of each latest value older than its cadence allows: ``STALE_GAPS`` of its
    usual gaps, and never less than ``at_least`` (the poll interval's worth of delay)."""
    out: dict[str, float] = {}
    every = stats.get("every") or {}
    for key, t in (stats.get("latest_at") or {}).items():
        gap = every.get(key)
        if gap is None:
            continue
        age = now - float(t)
        if age > max(STALE_GAPS * float(gap), at_least):
            out[key] = age
    return out


class RunStats:
    """``keys``: further metrics to keep the latest value of and to note once logged (the run kinds'
    evidence and headlines, monitor.rules.panels): ``seen`` is what a run's kind is inferred from."""

    def __init__(self, target_step: int | None = None, keys: frozenset[str] = frozenset()) -> None:
        self.target_step = target_step
        self.tracked = tuple(dict.fromkeys([*LATEST, *sorted(keys)]))
        self.seen: set[str] = set()
        self._unseen = set(keys)
        self.recent: list[tuple[float, int]] = []  # (t, step) of the last RATE_WINDOW new steps (a list:
        # an empty deque costs 624 B)
        self.latest: dict[str, float | None] = {}
        self.latest_at: dict[str, float] = {}  # when each latest value was logged
        self.every: dict[str, float] = {}  # a smoothed gap between two values of each key: its cadence
        self.first_seen: float | None = None
        self.last_step: int | None = None
        self.goodput = Goodput()

    def observe(
        self, t: float, step: int | None, metrics: dict[str, float], state: str | None = None
    ) -> None:
        uptime = metrics.get(UPTIME_KEY) if step is not None else None
        started = t - uptime if uptime is not None and math.isfinite(uptime) and uptime >= 0 else None
        keys, wait = (metrics.keys(), _data_wait(metrics)) if step is not None else ((), None)
        self.goodput.observe(t, step, state, started, keys, wait)
        if self.first_seen is None:
            self.first_seen = t
        if step is not None:
            if self.last_step is not None and step < self.last_step:
                self.recent.clear()  # a rewind: the rate restarts with the run
            if self.last_step is None or step != self.last_step:
                self.recent.append((t, step))
                if len(self.recent) > RATE_WINDOW:
                    del self.recent[0]
            self.last_step = step
        for key in self.tracked:
            if key in metrics:
                v = metrics[key]
                self.latest[key] = v if math.isfinite(v) else None
                before = self.latest_at.get(key)
                if before is not None and t > before:
                    gap = t - before
                    self.every[key] = gap if key not in self.every else 0.8 * self.every[key] + 0.2 * gap
                self.latest_at[key] = t
                if key in self._unseen:
                    self._unseen.discard(key)
                    self.seen.add(key)

    def steps_per_second(self) -> float | None:
        if len(self.recent) < 2:
            return None
        (t0, s0), (t1, s1) = self.recent[0], self.recent[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 and s1 > s0 else None

    def snapshot(self, now: float, known_until: float | None = None) -> dict[str, Any]:
        """``known_until``: when the run's own source last answered (``now`` unless it failed since):
        from then on herowatch could not see the run, which its goodput books as source blind (not as
        the run pausing), until the source answers again."""
        known = now if known_until is None else min(now, known_until)
        if known < now:
            self.goodput.blind(known)
        else:
            self.goodput.sight(now)
        rate = self.steps_per_second()
        eta = None
        if rate and self.target_step and self.last_step is not None and self.target_step > self.last_step:
            eta = (self.target_step - self.last_step) / rate
        return {
            "steps_per_second": rate,
            "target_step": self.target_step,
            "eta_seconds": eta,
            "latest": dict(self.latest),
            "latest_at": dict(self.latest_at),
            "every": dict(self.every),
            "first_seen": self.first_seen,
            "recent": tuple(self.recent),  # (t, step) tuples: JSON lists, untracked by the collector
            "goodput": self.goodput.to_dict(),
            "goodput_ratio": self.goodput.report(now)["ratio"],
            "known_until": known,
            "seen": tuple(sorted(self.seen)),
        }

    @classmethod
    def restore(
        cls, data: dict[str, Any] | None, target_step: int | None = None, keys: frozenset[str] = frozenset()
    ) -> RunStats:
        rs = cls(target_step, keys)
        if not data:
            return rs
        rs.seen = {str(k) for k in data.get("seen") or ()}
        rs._unseen -= rs.seen
        rs.recent.extend((float(t), int(s)) for t, s in data.get("recent", []))
        del rs.recent[:-RATE_WINDOW]
        rs.latest = dict(data.get("latest") or {})
        rs.latest_at = {str(k): float(v) for k, v in (data.get("latest_at") or {}).items()}
        rs.every = {str(k): float(v) for k, v in (data.get("every") or {}).items()}
        rs.first_seen = data.get("first_seen")
        rs.last_step = rs.recent[-1][1] if rs.recent else None
        rs.goodput = Goodput.from_dict(data.get("goodput"))
        return rs
