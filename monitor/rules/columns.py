"""A replay batch's columns: each metric's values, the times and the steps, taken once for every rule.

Replay's batched path (``engine.segment``) hands every detector the same batch of samples. Each
detector's loop used to walk the samples itself (``samples[k].metrics.get(metric)``): a dict lookup
per sample and rule, over ~500 samples whose dicts no longer sit in the CPU's cache, about 85 ns a
sample more than reading a list. A ``Batch`` is that list of samples, known to carry the same metric
names (``Evaluator.vouch_names``); ``columns`` takes a metric's values out of it once, in one C loop,
for every rule that reads that metric, and the times and the steps once for all.

A plain sequence (a test, the sample-by-sample fallback) gets columns of just the slice asked for,
taken with ``dict.get`` (a sample may lack the metric): the same values, so the same decisions.

Reading a column instead of the samples is no faster by itself (the extraction costs about what the
lookups it saves did); what pays is a rule taking a stretch of its common case in a few C calls over
a column's slice (``list.extend``, ``sum``, ``max``, ``bisect``) instead of a Python loop a sample.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from operator import attrgetter, itemgetter

from monitor.samples import Sample

_T, _STEP, _METRICS = attrgetter("t"), attrgetter("step"), attrgetter("metrics")


class Columns:
    """Columns of ``samples[base:]``: index ``k`` of a column is ``samples[base + k]``."""

    __slots__ = ("base", "_samples", "_names", "_values", "_t", "_step", "_metrics", "_rising")

    def __init__(self, samples: Sequence[Sample], base: int, names: frozenset[str] | None) -> None:
        self.base = base
        self._samples = samples  # (for a Batch: the whole batch; else the slice the columns cover)
        self._names = names  # every sample carries these metric names (None: not known)
        self._values: dict[str, list] = {}
        self._t: list[float] | None = None
        self._step: list[int | None] | None = None
        self._metrics: list | None = None
        self._rising: bool | None = None

    @property
    def t(self) -> list[float]:
        t = self._t
        if t is None:
            t = self._t = list(map(_T, self._samples))
        return t

    @property
    def step(self) -> list[int | None]:
        step = self._step
        if step is None:
            step = self._step = list(map(_STEP, self._samples))
        return step

    @property
    def rising(self) -> bool:
        """Every sample has a step, none lower than the one before (no rewind within the columns)."""
        rising = self._rising
        if rising is None:
            step = self.step
            try:  # (None among ints, or two Nones, cannot be sorted)
                rising = step == sorted(step) and (len(step) > 1 or step[0] is not None)
            except TypeError:
                rising = False
            self._rising = rising
        return rising

    def lacks(self, metric: str | None) -> bool:
        """Is it known that no sample carries ``metric`` (the batch's names: a replay batch's samples
        carry no state either)? None: no metric, so True for a batch."""
        names = self._names
        return names is not None and (metric is None or metric not in names)

    def values(self, metric: str) -> list:
        """The values of ``metric``, None where a sample lacks it (as ``metrics.get``)."""
        col = self._values.get(metric)
        if col is None:
            metrics = self._metrics
            if metrics is None:
                metrics = self._metrics = list(map(_METRICS, self._samples))
            if self._names is not None and metric in self._names:
                col = list(map(itemgetter(metric), metrics))
            elif self._names is not None:
                col = [None] * len(metrics)
            else:
                col = [m.get(metric) for m in metrics]
            self._values[metric] = col
        return col


class Batch:
    """The columns of a replay batch: samples of one run that all carry the metric names ``names``
    (``Evaluator.vouch_names``), taken the first time a rule asks and kept while the batch is fed.
    The batch stays a plain list (the interpreter's fast path for ``list[int]`` is for exact lists:
    a subclass made every rule's ``samples[k]`` slower); ``columns`` finds the batch's own columns by
    the list's identity, while it is the one being fed (``feeding``)."""

    __slots__ = ("samples", "columns")

    def __init__(self, samples: list[Sample], names: Sequence[str]) -> None:
        self.samples = samples
        self.columns = Columns(samples, 0, frozenset(names))


class _Feeding(threading.local):
    batch: Batch | None = None  # the batch this thread's evaluator is feeding (one at a time)


_feeding = _Feeding()  # per thread: the service's poll threads each feed their own evaluator's batch


def feeding(batch: Batch | None) -> None:
    """``batch`` is being fed to the detectors from now on, in this thread (None: no batch)."""
    _feeding.batch = batch


def batch_columns(samples: Sequence[Sample]) -> Columns | None:
    """The columns of ``samples`` if it is the batch being fed (indexed as the batch), else None."""
    batch = _feeding.batch
    return batch.columns if batch is not None and batch.samples is samples else None


def columns(samples: Sequence[Sample], i: int, end: int) -> Columns:
    """Columns covering ``samples[i:end]``: the batch's own if ``samples`` is the batch being fed, else
    taken from that slice alone."""
    batch = _feeding.batch
    if batch is not None and batch.samples is samples:
        return batch.columns
    return Columns(samples[i:end], i, None)


def all_finite(values: list) -> bool:
    """No None, NaN or Inf among ``values``: their sum is finite (an overflow of finite values: False,
    which only sends the caller to its loop a sample)."""
    try:
        total = sum(values)
    except TypeError:  # a None
        return False
    return not total - total
