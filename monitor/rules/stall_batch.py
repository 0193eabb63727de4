"""``StallBatch``: replay's batched path (engine/segment.py) for the stall rule, a part of
``StallDetector`` (which inherits it) kept in a file of its own for length.

The common case of ``StallDetector.observe`` in a loop of its own: the next step of a running run
with no restart counter in the sample, after an ordinary interval (no pause to learn from, no
outlier), ending in the state ``observe`` one by one would leave; anything else goes through
``observe``, one sample at a time.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import sub
from typing import TYPE_CHECKING, Protocol

from monitor.rules.base import RAN_OUT, Stop
from monitor.rules.columns import Columns, columns
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample

STRIDES = 32  # recent step increments kept (the logging stride)
STRETCH = 32  # samples a call is given from which the batch's columns are worth taking


class StallLimits(Protocol):
    """What the loop reads of the rule (``stall.StallSpec``)."""

    floor: float
    steady_steps: int
    window: int


class StallBatch:
    """The batched loop of ``StallDetector``. Its fields are the detector's (``StallDetector.__init__``
    sets them all); the ones the loop reads or writes are declared here."""

    rule: StallLimits
    hot: bool
    wake_at: float
    state: RunState | None
    blind: bool
    last_step: int | None
    last_step_at: float | None
    first_step: int | None
    first_step_at: float | None
    top_step: int | None
    awaiting_since: float | None
    intervals: array
    strides: list[int]
    outliers: int
    p99: float | None
    steady_since: float | None
    steady_from: int
    steady_need: float
    _fresh: int
    _soonest: float
    _mark_after: float
    _pause_after: float
    _trust: list[float] | None
    _counter_name: str | None

    if TYPE_CHECKING:

        def observe(self, sample: Sample) -> None: ...
        def _refresh(self) -> None: ...
        def _stop(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]: ...

    __slots__ = ()

    def _observe_steps(
        self, samples: Sequence[Sample], i: int, end: int, refresh: int, young: int
    ) -> tuple[int, Stop]:
        """``Detector.observe_many`` for a stall detector; ``refresh``: the intervals between two
        refreshes of the median and p99, ``young``: below this many intervals they refresh at each one."""
        counter, floor, soonest = self._counter_name, self.rule.floor, self._soonest
        intervals, strides = self.intervals, self.strides
        add_interval, add_stride = intervals.append, strides.append
        window = self.rule.window  # (the windows are lists: the newest ``window`` and STRIDES kept)
        first, first_at = self.first_step, self.first_step_at
        while i < end:
            last, at, top = self.last_step, self.last_step_at, self.top_step
            if not (
                self.hot
                or self.blind
                or self.awaiting_since is not None
                or last is None
                or top is None
                or self.state not in RUNNING_OR_UNKNOWN
            ):
                wake = None
                ordinary = min(self._mark_after, self._pause_after)  # a longer gap is a pause or an outlier
                # what the wake-up time is judged from; observe alone changes them (and _refresh p99)
                trust, steady, p99 = self._trust, self.steady_since, self.p99
                need, steady_steps = self.steady_need, self.rule.steady_steps
                at_once = soonest <= 0 or floor <= 0  # a limit of 0: due at once, judged at each step
                taken = False
                fresh, outliers = self._fresh, self.outliers  # (locals in the loop, written back after)
                grown = len(intervals) >= young  # (the intervals only grow in this loop)
                cols = columns(samples, i, end) if not at_once and end - i >= STRETCH else None
                can = (  # (a replay batch: no state either; windows restored as deques: one by one)
                    cols is not None
                    and cols.lacks(counter)
                    and type(intervals) is array
                    and type(strides) is list
                )
                want = can
                while i < end:
                    if want and grown and refresh - fresh > STRETCH // 4:  # a stretch at once, if it can
                        want = False  # (tried again after the next refresh)
                        got = _stretch(cols, i, end, refresh - fresh - 1, last, at, ordinary)
                        if got is not None:
                            gaps, strides_new = got
                            n = len(gaps)
                            intervals.extend(gaps)
                            if len(intervals) > window:
                                del intervals[:-window]
                            strides += strides_new
                            if len(strides) > STRIDES:
                                del strides[:-STRIDES]
                            outliers, fresh, taken = 0, fresh + n, True
                            i += n
                            last, at = samples[i - 1].step, samples[i - 1].t
                            if last > top:
                                top = last
                            if i >= end:
                                break
                    s = samples[i]
                    step = s.step
                    if step is None or step <= last or counter in s.metrics or s.state is not None:
                        break
                    t = s.t
                    gap = t - at
                    if gap > ordinary:
                        break  # a pause: through observe
                    if step > top:
                        top = step
                    if gap > 0:  # _gap's common case
                        add_stride(step - last)
                        if len(strides) > STRIDES:
                            del strides[0]
                        outliers = 0
                        add_interval(gap)
                        if len(intervals) > window:
                            del intervals[0]
                        fresh += 1
                        if fresh >= refresh or not grown and len(intervals) < young:
                            self._fresh = fresh
                            self._refresh()
                            want = can
                            fresh = self._fresh
                            grown = len(intervals) >= young
                            ordinary = min(self._mark_after, self._pause_after)
                            p99 = self.p99
                    last, at = step, t
                    i += 1
                    taken = True
                    if at_once:  # (else the wake-up time after the last step taken is all that counts)
                        wake = self._wake_after(
                            t, top, first, first_at, trust, steady, p99, need, steady_steps
                        )
                        if wake <= t:  # due at once
                            self._fresh, self.outliers = fresh, outliers
                            self.last_step, self.last_step_at, self.top_step, self.wake_at = (
                                last,
                                at,
                                top,
                                wake,
                            )
                            return self._stop(samples, i, end)
                self._fresh, self.outliers = fresh, outliers
                self.last_step, self.last_step_at, self.top_step = last, at, top
                if taken and not at_once:
                    wake = self._wake_after(at, top, first, first_at, trust, steady, p99, need, steady_steps)
                if wake is not None:
                    self.wake_at = wake
            if i < end:  # not the common case: one sample through observe
                s = samples[i]
                self.observe(s)
                i += 1
                if self.hot or self.wake_at <= s.t:
                    return self._stop(samples, i, end)
                first, first_at = self.first_step, self.first_step_at
        return i, RAN_OUT

    def _wake_after(  # noqa: PLR0913 - the loop's locals
        self,
        t: float,
        top: int,
        first: int | None,
        first_at: float | None,
        trust: list[float] | None,
        steady: float | None,
        p99: float | None,
        need: float,
        steady_steps: int,
    ) -> float:
        """When the detector is due after a step taken at ``t`` (``StallDetector.observe``'s wake-up
        time): the soonest limit once the schedule is known (``known()``), else the floor."""
        if (
            trust is not None and first is not None and top - first > trust[0] and t - first_at > trust[1]
        ) or (
            steady is not None
            and p99 is not None
            and t - steady >= need
            and top - self.steady_from >= steady_steps
        ):
            return t + self._soonest
        return t + self.rule.floor


def _stretch(
    cols: Columns, i: int, end: int, most: int, last: int, at: float, ordinary: float
) -> tuple[list[float], list[int]] | None:
    """The loop's common case over ``samples[i:i + n]`` at once (n at most ``most``, before ``end``): each
    sample the next step (higher than the one before it) after an interval above 0 and at most
    ``ordinary``. Its intervals and step increments, or None (the loop a sample decides)."""
    b = cols.base
    lo = i - b
    hi = min(end - b, lo + most)
    if hi - lo < 2:
        return None
    ts, steps = cols.t[lo:hi], cols.step[lo:hi]
    try:
        strides = list(map(sub, steps, [last, *steps[:-1]]))
    except TypeError:  # a sample without a step
        return None
    gaps = list(map(sub, ts, [at, *ts[:-1]]))
    if min(strides) <= 0 or min(gaps) <= 0 or max(gaps) > ordinary:
        return None
    return gaps, strides
