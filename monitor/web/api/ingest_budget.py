"""What one push watch may take: per sample (metric names, their length), per request, and per watch over
time (samples and spool bytes per second, and bytes accepted but not read yet).

Each refusal says what a client can do about it. A request that could never pass is a 413 saying what
fits (``X-Herowatch-Max-Samples``, ``X-Herowatch-Max-Metrics``, ``X-Herowatch-Max-Bytes``): the client
splits it. A request that can pass later is a 429 with ``Retry-After``. A metric name too long is a 422
naming the field: no retry can help. Nothing is written before every check has passed, so what was
answered 202 is whole on disk and what was refused left nothing behind.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import HTTPException
from fastapi.responses import JSONResponse

from monitor.sources.push_config import PushTarget
from monitor.sources.push_spool import backlog

MAX_SAMPLES_HEADER = "X-Herowatch-Max-Samples"  # on a 413 for a batch over push.burst: what fits
MAX_METRICS_HEADER = "X-Herowatch-Max-Metrics"  # on a 413 for a sample over push.max_metrics
MAX_BYTES_HEADER = "X-Herowatch-Max-Bytes"  # on a 413 for a request over push.burst_bytes
BACKLOG_TTL = 1.0  # seconds the door trusts a listing of the spool's unread bytes
MAX_RETRY_AFTER = 60


@dataclass
class Bucket:
    rate: float
    burst: float
    level: float
    at: float

    def wait(self, n: float, now: float) -> float | None:
        """Refill to ``now``; None if ``n`` fits, else seconds until it would (charges nothing)."""
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        return None if n <= self.level else max(1.0, (n - self.level) / self.rate)

    def take(self, n: float, now: float) -> float | None:
        """Charge ``n``; None if allowed, else seconds until it would be."""
        wait = self.wait(n, now)
        if wait is None:
            self.level -= n
        return wait


@dataclass
class Budget:
    """One watch's buckets (samples, bytes) and the last count of its unread spool bytes."""

    samples: Bucket
    bytes: Bucket
    unread: int = 0
    counted: float = -math.inf

    @classmethod
    def of(cls, cfg: PushTarget, now: float) -> Budget:
        return cls(
            Bucket(cfg.rate, cfg.burst, cfg.burst, now),
            Bucket(cfg.rate_bytes, cfg.burst_bytes, cfg.burst_bytes, now),
        )


@dataclass
class Budgets:
    """Every push watch's budget, charged under one lock: a request takes from both buckets or none."""

    root: Path
    budgets: dict[str, Budget] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    clock: Callable[[], float] = time.monotonic

    def charge(self, watch: str, cfg: PushTarget, n: int, size: int) -> JSONResponse | None:
        """None if the watch takes ``n`` samples of ``size`` spool bytes now (charged), else the 429."""
        now = self.clock()
        with self.lock:
            budget = self.budgets.setdefault(watch, Budget.of(cfg, now))
            if now - budget.counted >= BACKLOG_TTL:
                budget.unread, budget.counted = backlog(self.root, watch), now
            if budget.unread + size > cfg.spool_bytes:
                behind = budget.unread + size - cfg.spool_bytes
                return too_fast(
                    f"watch {watch} has {budget.unread} bytes pushed and not read yet (push.spool_bytes: "
                    f"{cfg.spool_bytes}): retry when its poller has caught up",
                    behind / cfg.rate_bytes,
                )
            waits = [budget.samples.wait(n, now), budget.bytes.wait(size, now)]
            if any(w is not None for w in waits):
                return too_fast(
                    f"watch {watch} pushes faster than its rate (push.rate {cfg.rate:g} samples/s, "
                    f"push.rate_bytes {cfg.rate_bytes} bytes/s): retry later",
                    max(w or 0.0 for w in waits),
                )
            budget.samples.take(n, now)
            budget.bytes.take(size, now)
            budget.unread += size
            return None


def too_fast(error: str, wait: float) -> JSONResponse:
    seconds = min(MAX_RETRY_AFTER, max(1, math.ceil(wait)))
    return JSONResponse({"error": error}, status_code=429, headers={"Retry-After": str(seconds)})


def too_large(error: str, header: str, fits: int) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=413, headers={header: str(fits)})


def check_sizes(watch: str, cfg: PushTarget, metrics: Sequence[Sequence[str]], lines: int, size: int):
    """The 413 (or 422) for a request the watch could never take as it is, or None."""
    for i, names in enumerate(metrics):
        if len(names) > cfg.max_metrics:
            return too_large(
                f"samples[{i}] has {len(names)} metric names: watch {watch} takes at most {cfg.max_metrics} "
                "per sample (push.max_metrics): split it into samples of the same t and step",
                MAX_METRICS_HEADER,
                cfg.max_metrics,
            )
        long = next((n for n in names if len(n) > cfg.max_name), None)
        if long is not None:
            raise HTTPException(
                422,
                f"samples[{i}].metrics: a name of {len(long)} characters ({long[:40]!r}...): watch {watch} "
                f"takes names of at most {cfg.max_name} (push.max_name)",
            )
    if lines > cfg.burst:  # it could never fit the bucket: a 429 would be retried forever
        return too_large(
            f"watch {watch} takes at most {cfg.burst} samples and events per request (push.burst); this one "
            f"has {lines}: split it",
            MAX_SAMPLES_HEADER,
            cfg.burst,
        )
    if size > min(cfg.burst_bytes, cfg.spool_bytes):
        fits = min(cfg.burst_bytes, cfg.spool_bytes)
        return too_large(
            f"this request is {size} bytes in the spool: watch {watch} takes at most {fits} at once "
            "(push.burst_bytes, push.spool_bytes): split it",
            MAX_BYTES_HEADER,
            fits,
        )
    return None
