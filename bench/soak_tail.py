"""The soak's production-interval tail (bench/soak.py): after the compressed month, the same service
is polled at the interval production uses (15 s by default) for a number of cycles, and the growth of
RSS and of the database per poll is fitted by least squares and extrapolated to a month of such polls.

Why: the month itself polls every few hours (compressed time is also compressed polls), so a leak
that grows per poll, not per sample, is weighted hundreds of times less there than in production. The
tail measures that per-poll growth directly; its extrapolation is stated with its uncertainty (two
standard errors of the slope), so a reader can tell "no measurable growth" from "too noisy to say"."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from common import rss_mb
from soak_support import sizes, vacuum

MONTH = 30 * 86_400.0


@dataclass(frozen=True)
class Slope:
    per_poll: float  # units per poll
    se: float  # its standard error

    def month(self, polls: float) -> tuple[float, float]:
        """The growth over ``polls`` polls, and its uncertainty (two standard errors)."""
        return self.per_poll * polls, 2 * self.se * polls


def fit(ys: list[float]) -> Slope:
    """Least-squares slope of ys against 0..n-1, with its standard error."""
    n = len(ys)
    if n < 3:
        return Slope(0.0, math.inf)
    mx, my = (n - 1) / 2, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in range(n))
    b = sum((x - mx) * (y - my) for x, y in enumerate(ys)) / sxx
    resid = sum((y - (my + b * (x - mx))) ** 2 for x, y in enumerate(ys))
    return Slope(b, math.sqrt(resid / (n - 2) / sxx))


def production_tail(
    cycle: Callable[[float], None], db: object, poll: float, cycles: int, runs: int
) -> tuple[Slope, Slope, float]:
    """Run ``cycles`` cycles of ``cycle(poll)``; returns the RSS slope (MB a poll), the database slope
    (MB a poll, VACUUMed before each reading as autovacuum would) and the real seconds taken."""
    rss, db_mb = [], []
    started = time.monotonic()
    for _ in range(cycles):
        cycle(poll)
        gc.collect()
        vacuum(db)
        rss.append(rss_mb())
        db_mb.append(sizes(db)[0])
    took = time.monotonic() - started
    print(
        f"production-interval tail: {cycles} more cycles of {runs} polls every {poll:g} s "
        f"({took:.0f} s real); RSS {rss[0]:.1f} -> {rss[-1]:.1f} MB, "
        f"database {db_mb[0]:.1f} -> {db_mb[-1]:.1f} MB"
    )
    return fit(rss), fit(db_mb), took


def print_extrapolation(rss: Slope, db: Slope, poll: float, rss_base: float) -> None:
    polls = MONTH / poll
    grow, err = rss.month(polls)
    dgrow, derr = db.month(polls)
    print(
        f"  per cycle (one poll of every run): RSS {rss.per_poll * 1024:+.2f} ± {2 * rss.se * 1024:.2f} KB, "
        "database "
        f"{db.per_poll * 1024:+.2f} ± {2 * db.se * 1024:.2f} KB (least squares, ±2 SE)"
    )
    ratio = abs(grow) / (0.10 * rss_base)
    print(
        f"  a month of polls every {poll:g} s ({polls:,.0f} a run), extrapolated: "
        f"RSS {grow:+.1f} ± {err:.1f} MB "
        f"({grow / rss_base:+.1%} of {rss_base:.0f} MB; limit +10%: {ratio:.2f}x the bar), database "
        f"{dgrow:+.1f} ± {derr:.1f} MB"
    )
    if err > 0.10 * rss_base:
        print("  (the uncertainty is larger than the bar itself: run more --tail-cycles to say more)")
