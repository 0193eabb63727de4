"""Derived per-run figures for the API and dashboard: step rate, ETA, latest values, goodput.

Pure: fed every sample once, ``snapshot(now)`` gives a JSON-able dict the engine stores in
``runs.stats``; ``restore`` rebuilds the tracker from that dict after a restart. The goodput
accounting (``monitor.runs.goodput``) rides along: its state is stored under ``stats["goodput"]`` and
``goodput.report_of(stats, now)`` turns it into the breakdown at any later time.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from monitor.runs.goodput import Goodput

LATEST = ("train/loss", "throughput/tokens_per_second", "throughput/mfu", "grad/norm/total", "eval/loss")
RATE_WINDOW = 64  # steps over which the step rate is measured


class RunStats:
    """``keys``: further metrics to keep the latest value of and to note once logged (the run kinds'
    evidence and headlines, monitor.rules.panels): ``seen`` is what a run's kind is inferred from."""

    def __init__(self, target_step: int | None = None, keys: frozenset[str] = frozenset()) -> None:
        self.target_step = target_step
        self.tracked = tuple(dict.fromkeys([*LATEST, *sorted(keys)]))
        self.seen: set[str] = set()
        self._unseen = set(keys)
        self.recent: deque[tuple[float, int]] = deque(maxlen=RATE_WINDOW)  # (t, step) of new steps
        self.latest: dict[str, float | None] = {}
        self.first_seen: float | None = None
        self.last_step: int | None = None
        self.goodput = Goodput()

    def observe(
        self, t: float, step: int | None, metrics: dict[str, float], state: str | None = None
    ) -> None:
        self.goodput.observe(t, step, state)
        if self.first_seen is None:
            self.first_seen = t
        if step is not None:
            if self.last_step is not None and step < self.last_step:
                self.recent.clear()  # a rewind: the rate restarts with the run
            if self.last_step is None or step != self.last_step:
                self.recent.append((t, step))
            self.last_step = step
        for key in self.tracked:
            if key in metrics:
                v = metrics[key]
                self.latest[key] = v if math.isfinite(v) else None
                if key in self._unseen:
                    self._unseen.discard(key)
                    self.seen.add(key)

    def steps_per_second(self) -> float | None:
        if len(self.recent) < 2:
            return None
        (t0, s0), (t1, s1) = self.recent[0], self.recent[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 and s1 > s0 else None

    def snapshot(self, now: float, known_until: float | None = None) -> dict[str, Any]:
        """``known_until``: when the run's own source last answered (``now`` unless it failed since);
        goodput is reported up to then: a source outage is not time the run spent paused."""
        known = now if known_until is None else min(now, known_until)
        rate = self.steps_per_second()
        eta = None
        if rate and self.target_step and self.last_step is not None and self.target_step > self.last_step:
            eta = (self.target_step - self.last_step) / rate
        return {
            "steps_per_second": rate,
            "target_step": self.target_step,
            "eta_seconds": eta,
            "latest": dict(self.latest),
            "first_seen": self.first_seen,
            "recent": [list(x) for x in self.recent],
            "goodput": self.goodput.to_dict(),
            "goodput_ratio": self.goodput.report(known)["ratio"],
            "known_until": known,
            "seen": sorted(self.seen),
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
        rs.latest = dict(data.get("latest") or {})
        rs.first_seen = data.get("first_seen")
        rs.last_step = rs.recent[-1][1] if rs.recent else None
        rs.goodput = Goodput.from_dict(data.get("goodput"))
        return rs
