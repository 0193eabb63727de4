"""The statistics behind the ``spike`` kind: a lagged robust baseline, the newest value's verdict and
the recent window's floor. Shared by every spike rule of a run with the same parameters.

Values are taken on the log scale (or linear) and signed so that "worse" is up. They pass through
the recent window (``floor_window``, at least ``floor_points`` values) and then enter the baseline,
so the values under test never sit in their own baseline. The baseline spans the ``baseline`` period
before the recent window with at most ``window`` values (and at least ``min_points``, however old:
a slow run's baseline is counted in steps): a run that logs faster than that has its
values admitted at most one per ``baseline / window`` seconds (every value of a 1 step/s run would
otherwise make the baseline two minutes long, and cost a sorted insert per step).

- level: the median of the baseline (a sorted list, O(log W): see windows.py), or its maximum (the
  worst value on the signed scale) with ``baseline_level: max``;
- noise: a robust sigma, 1.4826 x MAD of the baseline's step-to-step differences / sqrt 2. Differences
  rather than values: early in training the loss falls fast and the spread of the values would mostly
  measure that trend. Refreshed by a sort every W/8 new baseline values: amortised O(log W);
- a deviation counts when it reaches max(min_rise, z x sigma);
- floor: the minimum of the recent window. While it is raised, values leaving the recent window are
  not admitted to the baseline: a raised level must not become the new normal while it alerts.
- evidence in steps (``floor_steps``): the floor is also raised once that many values in a row, and
  twice as many as the longest run of such values the run has recovered from (learned from its own
  noise), all sit beyond the bar: the minimum of the last n values, n counted in steps. A slow run
  (an RL step every few minutes) then pages after a few steps instead of a window of wall time, a
  fast run after n steps instead of minutes; the wall-clock window bounds how long either waits.
- once raised, the floor stays raised until a whole recent window (at least ``floor_points`` values)
  or n values in a row are back under the bar: a brief dip is the same incident, whatever the cadence.
  Once down, it is raised again only above that bar until ``min_points`` new values entered the baseline
  (a slow run's noise estimate moves with every few values: a lower bar would page the incident twice).

The recent window is kept in 30 time buckets (count, minimum, first value); a bucket leaving it
hands its first value to the baseline. So a value costs O(1) (a compare against a precomputed gate,
median + min_rise, below which nothing can be a spike), and a bucket O(log W). The window's edge and
the floor's readiness are exact to 1/30 of ``floor_window`` (10s of 5m).

A step rewind (a restart from a checkpoint) resets everything; the baseline then warms up again
until it holds ``min_points`` values.
"""

from __future__ import annotations

import copy
import math
from array import array
from bisect import bisect_left, insort
from typing import Any

from monitor.rules.spike_batch import SpikeBatch
from monitor.rules.windows import MAD_TO_SIGMA, SortedValues, mad
from monitor.samples import Sample

INF = math.inf
_log = math.log
SQRT2 = math.sqrt(2.0)
RECENT_BUCKETS = 30

# a closed bucket of the recent window: (index, first t, last t, count, minimum, first value)
_Bucket = tuple[float, float, float, int, float, float]


class SpikeBaseline(SpikeBatch):
    # slots, in the order __init__ sets them (a snapshot lists them so): ~55 fields in a dict of their own
    # cost ~1 KB a baseline
    # fmt: off
    __slots__ = (
        "metric", "z", "min_rise", "window", "span", "_stride", "min_points", "floor_window", "floor_points",
        "_keep", "_width", "reset_on_rewind", "of_progress", "against_max", "track_floor", "floor_steps",
        "streak", "streak_t", "streak_step", "streak_min", "streak_before", "longest_recovered", "calm",
        "calm_t", "hot_t", "log", "sign", "_last_step", "_sample", "_y", "is_spike", "floor_raised",
        "spikes", "resets", "last_spike", "base", "_fifo", "_diffs", "_sigma", "_fresh", "_admitted_at",
        "ready", "_med", "_worst", "_gate", "_closed", "_cmins", "_count", "_ob", "_ot", "_olast", "_on",
        "_omin", "_ofirst", "_floor_ready", "_rearm", "_rearm_left",
    )
    # fmt: on

    def __init__(self, spec: Any) -> None:
        self.metric: str = spec.metric
        self.z: float = spec.z
        self.min_rise: float = spec.min_rise
        self.window: int = spec.window
        self.span: float = spec.baseline
        self._stride = spec.baseline / spec.window  # at most one baseline value per stride
        self.min_points: int = spec.min_points
        self.floor_window: float = spec.floor_window
        self.floor_points: int = spec.floor_points
        self._keep = spec.floor_points - 1  # the recent window never holds fewer (with the new value)
        self._width = spec.floor_window / RECENT_BUCKETS
        self.reset_on_rewind: bool = spec.reset_on_rewind
        self.of_progress: float = getattr(spec, "of_progress", 0.0)
        self.against_max = getattr(spec, "baseline_level", "median") == "max"
        self.track_floor = spec.mode == "floor"  # a point-only baseline skips the floor (and never freezes)
        self.floor_steps: int | None = getattr(spec, "floor_steps", None)
        # the values in a row beyond the bar (the evidence in steps): how many, the first's time and
        # step, their minimum; the longest such run the run recovered from without it raising the floor
        self.streak = 0
        self.streak_t = 0.0
        self.streak_step: int | None = None
        self.streak_min = INF
        self.streak_before = -INF  # the value just before them
        self.longest_recovered = 0
        self.calm, self.calm_t, self.hot_t = 0, 0.0, -INF  # values in a row under the bar, since; last over
        self.log = spec.scale == "log"
        self.sign = 1.0 if spec.direction == "up" else -1.0
        self._last_step: int | None = None
        self._sample: Sample | None = None  # the newest usable sample
        self._y = 0.0  # its value on the signed scale
        self.is_spike = False
        self.floor_raised = False
        self.spikes = 0
        self.resets = 0
        self.last_spike: dict[str, float | int | None] | None = None
        self.base = SortedValues()
        self._clear()

    def _clear(self) -> None:
        # the bar the floor came down under, held for ``min_points`` new baseline values (docstring)
        self._rearm = -INF
        self._rearm_left = 0
        self.base.clear()
        # the baseline values as t, y, t, y, ... (oldest first) and their differences: arrays of doubles
        # (16 B a value, not a tuple and two floats); the other windows are lists (an empty deque: 624 B)
        self._fifo = array("d")
        self._diffs = array("d")  # differences of consecutive baseline values
        self._sigma: float | None = None
        self._fresh = 0  # baseline values added since the noise was estimated
        self._admitted_at = -INF
        self.ready = False  # the baseline holds min_points values
        self._med = 0.0
        self._worst = -INF  # the worst median since the start (or the last reset): progress is from here
        self._gate = INF  # median + min_rise: nothing below it can be a spike
        self._closed: list[_Bucket] = []
        self._cmins: list[tuple[float, float]] = []  # monotonic minima of the closed buckets
        self._count = 0  # values in the closed buckets
        self._ob = -INF  # the open bucket: index, first t, last t, count, minimum, first value
        self._ot = self._olast = 0.0
        self._on = 0
        self._omin = self._ofirst = 0.0
        self._floor_ready = False  # enough values, spanning enough of the window
        self.streak = 0

    def _after_restore(self) -> None:
        """Snapshots written before hold the baseline values as (t, y) pairs and the differences as a list
        (or deques): as arrays."""
        if type(self._fifo) is not array:
            self._fifo = array("d", [v for pair in self._fifo for v in pair])
        if type(self._diffs) is not array:
            self._diffs = array("d", self._diffs)
        if not hasattr(self, "_rearm"):  # written before there was a re-arm bar
            self._rearm, self._rearm_left = -INF, 0

    def fork(self, spec: Any) -> SpikeBaseline:
        """A copy of these statistics for ``spec``'s rule, a point rule that shared them with rules of
        another ``floor_steps`` until their floor was first raised (and froze them): what its own
        baseline holds at that moment, since the floor's evidence never touched the statistics before.
        Its own floor is not tracked (point only): no values in a row, never raised."""
        twin = copy.copy(self)
        twin.floor_steps = getattr(spec, "floor_steps", None)
        twin.track_floor = False
        twin.streak, twin.streak_t, twin.streak_step, twin.streak_min = 0, 0.0, None, INF
        twin.streak_before, twin.longest_recovered = -INF, 0
        twin.calm, twin.calm_t, twin.hot_t = 0, 0.0, -INF
        twin.floor_raised = False
        twin.last_spike = dict(self.last_spike) if self.last_spike is not None else None
        twin.base = SortedValues()
        twin.base.values = list(self.base.values)
        twin._fifo, twin._diffs = self._fifo[:], self._diffs[:]
        twin._closed, twin._cmins = list(self._closed), list(self._cmins)
        return twin

    def reset(self) -> None:
        self._clear()
        self.is_spike = self.floor_raised = False
        self.resets += 1

    # ---- the scale -------------------------------------------------------------------------
    def raw(self, y: float) -> float:
        """Back from the signed scale to the metric's units."""
        y *= self.sign
        if self.log:
            return math.exp(y) if y < 700 else INF
        return y

    @property
    def latest(self) -> tuple[float, int | None, float, float] | None:
        """The newest value: (t, step, value, value on the signed scale)."""
        s = self._sample
        return None if s is None else (s.t, s.step, s.metrics[self.metric], self._y)

    def median(self) -> float:
        return self._med

    def sigma(self) -> float:
        if self._sigma is None or self._fresh * 16 > len(self._fifo):  # (two doubles a value)
            self._sigma = MAD_TO_SIGMA * mad(self._diffs) / SQRT2
            self._fresh = 0
        return self._sigma

    def needed(self) -> float:
        """The deviation (on the scale) that counts, given the current baseline."""
        if self.of_progress:
            progress = self._worst - self._med if self.ready else 0.0
            return max(self.min_rise, self.z * self.sigma(), self.of_progress * progress)
        return max(self.min_rise, self.z * self.sigma())

    def steps_needed(self) -> float:
        """Values in a row beyond the bar that raise the floor (inf: only the wall-clock window)."""
        if self.floor_steps is None:
            return INF
        return max(self.floor_steps, 2 * self.longest_recovered)

    def _extend_streak(self, t: float, step: int | None, y: float, before: float) -> None:
        """A value beyond the bar extends the values in a row beyond it. Judged against the worst level
        (``baseline_level: max``), it must also be that far beyond the value just before the first of
        them: the baseline lags by the recent window, and a metric that trends by nature (KL early in a
        run) is not a blow-up for having gone on trending."""
        if self.streak:
            before = self.streak_before
        if self.against_max and y - before < self.needed():
            if self.streak:
                self._end_streak()
            return
        if not self.streak:
            self.streak_t, self.streak_step, self.streak_min, self.streak_before = t, step, y, before
        self.streak += 1
        if y < self.streak_min:
            self.streak_min = y

    def _end_streak(self) -> None:
        if not self.floor_raised:  # a run of values beyond the bar that came back by itself: noise
            self.longest_recovered = max(self.longest_recovered, self.streak)
        self.streak = 0

    def sigma_eff(self) -> float:
        """Sigma floored at min_rise / z: a score >= z is then exactly a deviation that counts."""
        return max(self.sigma(), self.min_rise / self.z, 1e-12)

    # ---- samples ---------------------------------------------------------------------------
    def observe(self, sample: Sample) -> bool:
        """Take in a sample; True if it carried a usable value of the metric. The hot path."""
        v = sample.metrics.get(self.metric)
        if v is None or v - v:
            return False  # missing, NaN or Inf: the non_finite rule's business
        step = sample.step
        if step is not None:
            last = self._last_step
            if last is not None and step < last and self.reset_on_rewind:
                self.reset()
            self._last_step = step
        if self.log:
            if v <= 0.0:
                return False
            y = _log(v) * self.sign
        else:
            y = v * self.sign
        t = sample.t
        b = t // self._width
        if b == self._ob:
            self._on += 1
            self._olast = t
            if y < self._omin:
                self._omin = y
        else:
            self._roll(b, t, y)
        self._judge(sample, t, step, v, y)
        return True

    def _judge(self, sample: Sample, t: float, step: int | None, v: float, y: float) -> None:
        """``observe``'s verdict on a value taken into the recent window: a spike? the floor raised?"""
        before = self._y if self._sample is not None else -INF
        self._sample = sample
        self._y = y
        gate = self._gate  # +inf while warming up: below it nothing is a spike (the common case)
        if y >= gate and y - self._med >= self.needed():
            self.is_spike = True
            self.spikes += 1
            self.last_spike = {"t": t, "step": step, "value": v, "score": (y - self._med) / self.sigma_eff()}
        else:
            self.is_spike = False
        if self.track_floor:
            if self.is_spike:
                self._extend_streak(t, step, y, before)
                self.calm, self.hot_t = 0, t
            else:
                if self.floor_raised:  # counted while raised only (what ends it): replay's fast path skips it
                    self.calm_t, self.calm = (self.calm_t if self.calm else t), self.calm + 1
                if self.streak:
                    self._end_streak()
            if self.floor_raised:  # held until a window, or n values in a row, are back under the bar
                n, window = self.calm, t - self.hot_t >= self.floor_window
                self.floor_raised = n < self.steps_needed() and (n < self.floor_points or not window)
                if not self.floor_raised:  # back under this bar: raised again only above it, a while
                    self._rearm, self._rearm_left = self._med + self.needed(), self.min_points
            elif self.streak >= self.steps_needed():
                self.floor_raised = True
            elif self._floor_ready:
                floor = self._omin
                cmins = self._cmins
                if cmins and cmins[0][1] < floor:
                    floor = cmins[0][1]
                rearmed = floor >= self._rearm or not self._rearm_left
                self.floor_raised = rearmed and floor >= gate and floor - self._med >= self.needed()
            else:
                self.floor_raised = False

    def _roll(self, b: float, t: float, y: float) -> None:
        """A value opens a new bucket: close the open one, move old buckets on to the baseline."""
        closed, cmins = self._closed, self._cmins
        count, on = self._count, self._on
        if on:
            ob, omin = self._ob, self._omin
            closed.append((ob, self._ot, self._olast, on, omin, self._ofirst))
            count += on
            while cmins and cmins[-1][1] >= omin:
                cmins.pop()
            cmins.append((ob, omin))
        horizon = t - self.floor_window
        admitted = False
        if closed and closed[0][2] < horizon:
            frozen, keep = self.floor_raised, self._keep
            while closed and closed[0][2] < horizon and count - closed[0][3] >= keep:
                idx, first_t, _, n, _, first = closed[0]
                del closed[0]  # (inline take_first: a list, or an old snapshot's deque)
                count -= n
                if cmins and cmins[0][0] == idx:
                    del cmins[0]
                if frozen or first_t - self._admitted_at < self._stride:
                    continue  # frozen while the floor is raised; or thinned
                self._admit(first_t, first)
                admitted = True
        self._count = count
        if admitted:
            fifo, values = self._fifo, self.base.values
            oldest = (closed[0][1] if closed else t) - self.span
            # at least min_points values, however old: a run stepping every 10 minutes has 6 in an hour
            while fifo and fifo[0] < oldest and len(fifo) > 2 * self.min_points:
                del values[bisect_left(values, fifo[1])]
                del fifo[:2]
                if self._diffs:
                    del self._diffs[0]
            n = len(values)
            self.ready = n >= self.min_points
            if n:
                h = n >> 1
                if self.against_max:
                    self._med = values[-1]  # the level compared with: the worst the baseline held
                else:
                    self._med = values[h] if n & 1 else (values[h - 1] + values[h]) * 0.5
            if self.ready and self._med > self._worst:
                self._worst = self._med
            # nothing at or below the median is a spike, even with min_rise 0 and no noise left
            gate = self._med + self.min_rise if self.min_rise > 0 else math.nextafter(self._med, INF)
            self._gate = gate if self.ready else INF
        self._ob, self._ot, self._olast, self._on, self._omin, self._ofirst = b, t, t, 1, y, y
        first_t = closed[0][1] if closed else t
        self._floor_ready = (
            self.ready and count + 1 >= self.floor_points and t - first_t >= self.floor_window * 0.5
        )

    def _admit(self, t: float, y: float) -> None:
        fifo, values = self._fifo, self.base.values
        self._admitted_at = t
        if fifo:
            self._diffs.append(y - fifo[-1])
        insort(values, y)
        fifo.append(t)
        fifo.append(y)
        self._fresh += 1
        if self._rearm_left:
            self._rearm_left -= 1
        if len(fifo) > 2 * self.window:
            del values[bisect_left(values, fifo[1])]
            del fifo[:2]
            del self._diffs[0]

    # ---- figures ---------------------------------------------------------------------------
    @property
    def score(self) -> float | None:
        """The newest value's deviation in robust sigmas (None while warming up)."""
        if self._sample is None or not self.ready:
            return None
        return (self._y - self._med) / self.sigma_eff()

    @property
    def floor(self) -> float | None:
        if not self._on:
            return None
        return min(self._omin, self._cmins[0][1]) if self._cmins else self._omin

    @property
    def floor_score(self) -> float | None:
        floor = self.floor
        if floor is None or not self.ready:
            return None
        return (floor - self._med) / self.sigma_eff()

    @property
    def floor_since(self) -> float:
        """When the oldest value of the recent window was logged (the onset of a window's evidence)."""
        return self._closed[0][1] if self._closed else self._ot
