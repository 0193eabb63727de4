"""Bounded window statistics for detectors: a sorted multiset (median, quantiles) and the MAD.

Windows hold at most ``MAX_WINDOW`` values. ``SortedValues`` keeps them in one sorted Python list:
bisect finds the place in O(log W) comparisons and the insert or delete moves at most W pointers in
one memmove (a few hundred nanoseconds at the cap), which is how sortedcontainers' SortedList stores
each of its sublists too; below a few thousand values a single list is the fastest sorted structure
in Python.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable
from typing import Any

MAD_TO_SIGMA = 1.4826  # MAD x this estimates the standard deviation of a normal distribution
MAX_WINDOW = 4096  # cap on the values of any window: at extreme sample rates it then spans less time


class SortedValues:
    """A multiset of floats kept sorted: add, remove and median in O(log W) (W <= MAX_WINDOW)."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: list[float] = []

    def __len__(self) -> int:
        return len(self.values)

    def add(self, v: float) -> None:
        insort(self.values, v)

    def remove(self, v: float) -> None:
        values = self.values
        i = bisect_left(values, v)
        if i == len(values) or values[i] != v:
            raise ValueError(f"{v!r} is not in the window")
        del values[i]

    def clear(self) -> None:
        self.values.clear()

    def median(self) -> float:
        v, n = self.values, len(self.values)
        if n == 0:
            raise ValueError("median of no values")
        h = n // 2
        return v[h] if n % 2 else (v[h - 1] + v[h]) / 2.0

    def quantile(self, q: float) -> float:
        """The lower q-quantile (nearest rank)."""
        n = len(self.values)
        if n == 0:
            raise ValueError("quantile of no values")
        return self.values[min(n - 1, max(0, int(q * n)))]


def median_of_sorted(values: list[float]) -> float:
    n = len(values)
    h = n // 2
    return values[h] if n % 2 else (values[h - 1] + values[h]) / 2.0


def mad(values: Iterable[float]) -> float:
    """Median absolute deviation from the median (0.0 for no values). O(n log n)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = median_of_sorted(ordered)
    return median_of_sorted(sorted(abs(x - mid) for x in ordered))


def take_first(q: list[Any]) -> Any:
    """Remove and return a window's oldest item. The windows are lists (an empty ``deque`` costs 624
    bytes, a list 56); snapshots written before hold them as deques, which this serves just the same."""
    v = q[0]
    del q[0]
    return v


def keep_last(q: list[Any], n: int) -> None:
    """Drop a bounded window's oldest items beyond ``n`` (a list in place of a ``deque(maxlen=n)``;
    a deque restored from an older snapshot already holds at most ``n``)."""
    while len(q) > n:
        del q[0]
