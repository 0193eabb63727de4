"""What a run's key looks like by its values: a counter, a loss-like series or another gauge. For the
suggestions of ``suggest`` (never a counter for a gauge; a loss-like series for a loss). Pure.

A key's shape is learned from its first ``LEARN`` finite values (``Shapes`` keeps them per key of one
run) and its name: Prometheus' naming convention says counter (``_total``, ``_count``, ``_sum``,
``_bucket``); whole numbers that never go down across several values are a counter too (a step, a token
count, a restart count). A loss is a positive, fractional series that does not only rise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import isfinite
from typing import Literal

Kind = Literal["counter", "loss", "gauge"]
LEARN = 32  # values looked at per key
COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


@dataclass(slots=True)  # one per run and key: no __dict__ each
class Shape:
    """A summary of a key's first values."""

    count: int = 0
    whole: bool = True  # every value a whole number
    rising: bool = True  # never went down
    positive: bool = True
    low: float = math.inf
    high: float = -math.inf
    last: float = math.nan

    def add(self, v: float) -> None:
        if not math.isfinite(v):
            return
        if self.count:
            self.rising = self.rising and v >= self.last
        self.whole = self.whole and float(v).is_integer()
        self.positive = self.positive and v > 0
        self.low, self.high, self.last = min(self.low, v), max(self.high, v), v
        self.count += 1

    @property
    def learning(self) -> bool:
        return self.count < LEARN


def kind_of(key: str, shape: Shape | None) -> Kind | None:
    """The key's kind, or None when neither its name nor enough values say."""
    if key.endswith(COUNTER_SUFFIXES):
        return "counter"
    if shape is None or shape.count < 3:
        return None
    if shape.whole and shape.rising and shape.high > shape.low:
        return "counter"
    if shape.positive and not shape.whole and not (shape.rising and shape.high > shape.low):
        return "loss"
    return "gauge"


def fits(canonical: str, key: str, shape: Shape | None) -> bool:
    """May ``key`` be suggested for the canonical input? Left out rather than wrong: a counter never
    stands for a gauge (every canonical input but a ``_total`` counter is one), a loss needs a loss-like
    series, and a counter input needs a counter."""
    kind = kind_of(key, shape)
    if canonical.endswith(COUNTER_SUFFIXES):
        return kind in (None, "counter")
    if kind == "counter":
        return False
    if canonical.endswith("loss") and kind is not None:
        return kind == "loss"
    return True


class Shapes:
    """The shapes of one run's keys, learned from the samples as they come (a few values each)."""

    __slots__ = ("_shapes", "_learning")

    def __init__(self) -> None:
        self._shapes: dict[str, Shape] = {}
        self._learning: set[str] = set()

    @property
    def busy(self) -> bool:
        """Some key still being learned."""
        return bool(self._learning)

    def add(self, metrics: Mapping[str, float]) -> None:
        """``Shape.add`` of each key still being learned, inlined (every sample of a young run)."""
        shapes, learning = self._shapes, self._learning
        for key in learning & metrics.keys():
            v = metrics[key]
            if not isfinite(v):
                continue
            shape = shapes[key]
            count = shape.count
            if count:
                shape.rising = shape.rising and v >= shape.last
            shape.whole = shape.whole and float(v).is_integer()
            shape.positive = shape.positive and v > 0
            shape.low, shape.high, shape.last = min(shape.low, v), max(shape.high, v), v
            shape.count = count = count + 1
            if count >= LEARN:
                learning.discard(key)
                if not learning:
                    self._learning = set()  # (an emptied set keeps its table: ~2 KB for 20 keys)

    def learn(self, keys: Iterable[str]) -> None:
        """New keys: start learning their shapes."""
        for key in keys:
            if key not in self._shapes:
                self._shapes[key] = Shape()
                self._learning.add(key)

    def view(self) -> Mapping[str, Shape]:
        return self._shapes
