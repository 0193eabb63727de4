"""Which members of a fleet stand out: a robust score against the fleet itself.

A member's score is its distance from the fleet median in units of the fleet's spread, the median
absolute deviation scaled to a standard deviation (1.4826 x MAD). The fleet is its own baseline: no
threshold depends on the hardware or the size of the run.

Two guards keep the score honest:

- a floor under the spread: differences smaller than ``RESOLUTION`` of the metric's own magnitude in
  this run (the largest fleet median or fleet spread seen so far), or than the unit's resolution
  (``units.RESOLUTION``: 1 °C, 1 MB/s), are never named. When every GPU reads exactly 0.0 the MAD is
  0 and any noise would otherwise be "infinitely odd";
- a cap on how many may stand out: when more than ``MOST`` of the fleet is beyond ``Z``, the fleet is
  split (pipeline stages, two kinds of hosts), and naming some of them would be a guess.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MAD_SIGMA = 1.4826
RESOLUTION = 0.01
Z = 6.0  # as far out as the spike rules' 6 robust sigmas
MOST = 0.05
MIN_MEMBERS = 5  # a fleet smaller than this has no median worth comparing with


@dataclass(frozen=True)
class Spread:
    median: float
    scale: float  # the unit of a score: max(1.4826 x MAD, RESOLUTION x magnitude), never 0
    n: int  # members with a value


def finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if v == v and not math.isinf(v)]


def magnitude(values: Sequence[float]) -> float:
    """How large this metric is in this fleet now: max(|median|, p95 - p5) of the members' values."""
    vals = sorted(finite(values))
    if not vals:
        return 0.0
    n = len(vals)
    p05, p95 = vals[int(0.05 * (n - 1))], vals[int(math.ceil(0.95 * (n - 1)))]
    return max(abs(statistics.median(vals)), p95 - p05)


def spread(values: Sequence[float], level: float, least: float = 0.0) -> Spread | None:
    """The fleet's median and score unit; ``level``: the metric's magnitude in this run so far,
    ``least``: the unit's resolution."""
    vals = finite(values)
    if len(vals) < MIN_MEMBERS:
        return None
    med = statistics.median(vals)
    mad = statistics.median([abs(v - med) for v in vals])
    floor = max(RESOLUTION * max(level, magnitude(vals)), least)
    scale = max(MAD_SIGMA * mad, floor)
    if scale <= 0:
        scale = max(abs(med), 1.0) * 1e-9  # every member reads exactly the same value (often 0)
    return Spread(med, scale, len(vals))


def scores(values: Sequence[float], sp: Spread) -> list[float]:
    """Each member's score (NaN for a member without a value)."""
    return [(v - sp.median) / sp.scale if v == v and not math.isinf(v) else math.nan for v in values]


def odd_ones(
    values: Sequence[float], level: float, least: float = 0.0, z: float = Z, most: float = MOST
) -> tuple[Spread | None, list[tuple[int, float]]]:
    """The members beyond ``z`` (index, score), farthest first; none when the fleet is split."""
    sp = spread(values, level, least)
    if sp is None:
        return None, []
    out = [(i, s) for i, s in enumerate(scores(values, sp)) if s == s and abs(s) >= z]
    if len(out) > max(1, math.floor(most * sp.n)):
        return sp, []
    out.sort(key=lambda p: -abs(p[1]))
    return sp, out
