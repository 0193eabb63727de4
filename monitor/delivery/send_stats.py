"""How long sending a notification takes, per receiver and outcome: a histogram for ``/metrics``.

The dispatcher reports every attempt (``observe``); ``/metrics`` reads ``snapshot`` at scrape time (its
registry is built from herowatch's state then, so this keeps the buckets itself). Thread-safe: the
outbox job and a scrape may run at once. Only this process's sends are counted.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

# Seconds. A Slack post takes ~0.1-0.5 s; a retried or rate-limited one several seconds; a timeout 10 s.
BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))  # per bucket, not cumulative
    total: float = 0.0
    n: int = 0

    def cumulative(self) -> list[tuple[str, float]]:
        """(upper bound, count) pairs as Prometheus wants them, +Inf last."""
        out, running = [], 0
        for bound, c in zip(BUCKETS, self.counts, strict=True):
            running += c
            out.append((repr(bound), float(running)))
        out.append(("+Inf", float(self.n)))
        return out


class SendLatency:
    def __init__(self, kinds: Mapping[str, str] | None = None) -> None:
        self.kinds = dict(kinds or {})  # receiver name -> kind (slack, webhook, console)
        self._data: dict[tuple[str, str, str], Histogram] = {}
        self._lock = threading.Lock()

    def observe(self, receiver: str, seconds: float, outcome: str) -> None:
        key = (receiver, self.kinds.get(receiver, "unknown"), outcome)
        i = bisect.bisect_left(BUCKETS, seconds)
        with self._lock:
            h = self._data.get(key)
            if h is None:
                h = self._data[key] = Histogram()
            if i < len(BUCKETS):
                h.counts[i] += 1
            h.total += seconds
            h.n += 1

    def snapshot(self) -> dict[tuple[str, str, str], Histogram]:
        """(receiver, kind, outcome) -> a copy of its histogram."""
        with self._lock:
            return {k: Histogram(list(h.counts), h.total, h.n) for k, h in self._data.items()}
