"""``StallDetector.observe_many``: replay's batched path (engine/segment.py) for the stall rule.

The common case of ``StallDetector.observe`` in a loop of its own: the next step of a running run
with no restart counter in the sample, after an ordinary interval (no pause to learn from, no
outlier), ending in the state ``observe`` one by one would leave; anything else goes through
``observe``, one sample at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from monitor.rules.base import RAN_OUT, RUNNING_OR_UNKNOWN, Stop
from monitor.samples import Sample

if TYPE_CHECKING:
    from monitor.rules.stall import StallDetector


def observe_many(
    det: StallDetector, samples: Sequence[Sample], i: int, end: int, refresh: int, young: int
) -> tuple[int, Stop]:
    """``Detector.observe_many`` for a stall detector; ``refresh``: the intervals between two
    refreshes of the median and p99, ``young``: below this many intervals they refresh at each one."""
    counter, floor, soonest = det._counter_name, det.rule.floor, det._soonest
    intervals, strides = det.intervals, det.strides
    first, first_at = det.first_step, det.first_step_at
    while i < end:
        last, at, top = det.last_step, det.last_step_at, det.top_step
        if not (
            det.hot
            or det.blind
            or det.awaiting_since is not None
            or last is None
            or top is None
            or det.state not in RUNNING_OR_UNKNOWN
        ):
            wake = None
            ordinary = min(det._mark_after, det._pause_after)  # a longer gap is a pause or an outlier
            while i < end:
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
                    strides.append(step - last)
                    det.outliers = 0
                    intervals.append(gap)
                    det._fresh += 1
                    if det._fresh >= refresh or len(intervals) < young:
                        det._refresh()
                        ordinary = min(det._mark_after, det._pause_after)
                last, at = step, t
                i += 1
                trust = det._trust  # (known(), with the step just taken)
                steady = det.steady_since
                if (
                    trust is not None
                    and first is not None
                    and top - first > trust[0]
                    and t - first_at > trust[1]
                ) or (
                    steady is not None
                    and det.p99 is not None
                    and t - steady >= det.steady_need
                    and top - det.steady_from >= det.rule.steady_steps
                ):
                    wake = t + soonest
                else:
                    wake = t + floor
                if wake <= t:  # due at once (a limit of 0)
                    det.last_step, det.last_step_at, det.top_step, det.wake_at = last, at, top, wake
                    return det._stop(samples, i, end)
            det.last_step, det.last_step_at, det.top_step = last, at, top
            if wake is not None:
                det.wake_at = wake
        if i < end:  # not the common case: one sample through observe
            s = samples[i]
            det.observe(s)
            i += 1
            if det.hot or det.wake_at <= s.t:
                return det._stop(samples, i, end)
            first, first_at = det.first_step, det.first_step_at
    return i, RAN_OUT
