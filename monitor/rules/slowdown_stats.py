"""The statistics of the ``slowdown`` rule's baseline (monitor/rules/slowdown.py): how far it drifts, how
slowly it wanders, and the largest excursion it came back from by itself."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from itertools import islice
from operator import mul

from monitor.rules.windows import MAD_TO_SIGMA, median_of_sorted


def drift(values: deque[float]) -> float:
    """How far the medians of the first and last thirds of the baseline's buckets are apart."""
    base = list(values)
    third = len(base) // 3
    if not third:
        return 0.0
    first, last = sorted(base[:third]), sorted(base[-third:])
    return abs(median_of_sorted(last) - median_of_sorted(first))


def persistence(values: deque[float], mu: float) -> float:
    """How much more a sum of n buckets wanders than n independent ones would: sqrt((1+r)/(1-r)) for
    the lag-1 autocorrelation r of the buckets (-0.8 <= r <= 0.8), as for an AR(1) series. A run whose
    speed wanders slowly needs more evidence than one whose buckets scatter independently; one whose
    buckets alternate (a fast one after a slow one) less."""
    d = [v - mu for v in values]  # (products and sums in C loops: the same floats, in the same order)
    den = sum(map(mul, d, d))
    if den <= 0:
        return 1.0
    r = sum(map(mul, d, islice(d, 1, None))) / den
    r = min(0.8, max(-0.8, r))
    return math.sqrt((1 + r) / (1 - r))


def came_back(values: Sequence[float], weights: Sequence[float], mu: float, k: float) -> float:
    """The largest excursion the baseline's own buckets came back from by themselves: the peak of the
    rule's CUSUM, S = max(0, S + w (x - mu - k)), run over them in order, among its climbs that fell back
    to 0 (one still climbing at the baseline's end may be a slowdown's first buckets: it does not count).
    A run whose speed swings for hours (its data, its schedule) shows here how much evidence a swing of
    its own gathers; the rule then needs more than that."""
    s = peak = largest = 0.0
    for x, w in zip(values, weights, strict=True):  # (max() spelled as compares: called once a bucket)
        s += w * (x - mu - k)
        if s > 0.0:
            if s > peak:
                peak = s
        else:  # (a NaN too, as max(0.0, nan) is 0.0)
            s = 0.0
            if peak > largest:
                largest = peak
            peak = 0.0
    return largest


def deviations_median(ordered: Sequence[float], mu: float) -> float:
    """``median_of_sorted(sorted(abs(v - mu) for v in ordered))`` for sorted ``ordered`` (its MAD about mu),
    without a pass over it: the deviations below mu (mu - v, growing as v falls) and above it (v - mu)
    are two sorted runs, and the median is picked from them by bisection (once a bucket, over the
    baseline's hundreds of buckets)."""
    n = len(ordered)
    split = bisect_left(ordered, mu)
    above = n - split

    def kth(k: int) -> float:  # the k-th smallest deviation (0-based)
        lo, hi = max(0, k + 1 - above), min(k + 1, split)  # how many of the k + 1 come from below mu
        while lo < hi:
            a = (lo + hi) // 2  # a from below and k + 1 - a from above: too few from below?
            if mu - ordered[split - 1 - a] < ordered[split + k - a] - mu:
                lo = a + 1
            else:
                hi = a
        b = k + 1 - lo
        low = abs(mu - ordered[split - lo]) if lo else -math.inf
        high = abs(ordered[split + b - 1] - mu) if b else -math.inf  # (abs: -0.0 - 0.0 is -0.0)
        return low if low > high else high

    h = n // 2
    return kth(h) if n % 2 else (kth(h - 1) + kth(h)) / 2.0


def level(values: deque[float]) -> tuple[float, float, float]:
    """The level baseline of the buckets: (their interquartile mean, robust and exact for a run whose
    buckets alternate between two speeds; their MAD scaled by ``persistence``; their ``drift``)."""
    return level_top(sorted(values), values)[:3]


def level_top(ordered: list[float], values: deque[float]) -> tuple[float, float, float, float]:
    """``level(values)`` and the highest of them, given them sorted (``ordered``): one sort a bucket."""
    top = ordered[-1]
    n = len(ordered)
    core = ordered[n // 4 : n - n // 4]
    mu = sum(core) / len(core)
    spread = MAD_TO_SIGMA * deviations_median(ordered, mu)
    if ordered[0] == top:  # every bucket the same (a fixed cadence timed in whole seconds): no drift
        return mu, spread * (1.0 if mu == ordered[0] else persistence(values, mu)), 0.0, top  # (nor variance)
    return mu, spread * persistence(values, mu), drift(values), top
