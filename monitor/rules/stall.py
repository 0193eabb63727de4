"""``stall``: no new step for longer than the run's own schedule allows.

The run's step intervals give its cadence; its long pauses (checkpoint saves, evals) are learned as a
schedule (schedule.py): at which steps, or how often in time, it habitually pauses, and for how long.

- While the schedule is not known (no habit yet, or a long pause no habit explains among the
  remembered ones) the rule is conservative: limit = max(``floor``, ``k`` x the p99 step interval (at
  most ``floor`` past one: a slow run's step is no reason to wait 10 of them),
  ``pause_factor`` x the longest pause that happened twice among the last 8, capped at ``max_pause``).
- Once it is known, a pause at a habitual step gets ``habit_factor`` x its usual length, and a pause
  anywhere else is a hang after max(``hang_after``, ``k`` x the p99 step interval): minutes, not floor.
- A run that does not pause has a known schedule too ("no habitual pause"): once it has stepped at
  a steady cadence for ``steady_after`` and ``steady_steps`` with no long pause (and, if it paused
  before, for ``COVER`` x the longest pause-free stretch it had then: a rarer pause would have shown
  itself), a pause is a hang after the same ordinary limit. A long pause starts the count over; so
  does a restart, whose restore keeps its own allowance below.

Intervals longer than 5x the median are pauses, not cadence: they stay out of the p99 (three in a row
are a new cadence). Pauses longer than half the ordinary limit are remembered for learning. After a
(re)start the run gets a separate allowance to restore and compile before its first step:
``startup``, or, once this run has restored before, its longest recent restore plus an extra learned
with confidence: ``restore_factor`` x it after one restore, the extra shrinking as 1/n with n restores
seen, never below their spread nor ``floor``. While the source cannot be read, progress is unknown.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

from alerts.model import Finding
from monitor.durations import format_duration
from monitor.rules.base import Detector, Stop, register
from monitor.rules.schedule import COVER, PauseSchedule, usual
from monitor.rules.stall_batch import STRIDES, StallBatch
from monitor.rules.stall_spec import StallSpec
from monitor.rules.windows import keep_last, median_of_sorted
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample

MIN_INTERVALS = 8  # step intervals needed before the p99 is trusted
LEARNED = 8  # restores and pauses remembered
RECURS = 1.5  # two pauses within this factor of each other are the same kind of pause
PAUSE_X = 5.0  # an interval this many times the median is a pause, not cadence
NEW_CADENCE = 3  # that many such intervals in a row are a new cadence
WINDOWS = ("intervals", "strides", "restores", "pauses")  # lists, bounded by window, STRIDES, LEARNED
REFRESH = 64  # the median and p99 are recomputed every this many intervals


@register
class StallDetector(StallBatch, Detector[StallSpec]):
    kind = "stall"
    plot = "progress"
    spec_model = StallSpec
    clocked = True
    silence = True

    # fmt: off
    __slots__ = (
        "_fresh", "outliers", "last_step", "last_step_at", "top_step", "state", "blind", "first_step",
        "first_step_at", "awaiting_since", "awaiting_learnable", "intervals", "strides", "restores", "pauses",
        "schedule", "counter", "median", "p99", "_ordinary", "_soonest", "_mark_after", "_pause_after",
        "_trust", "steady_since", "steady_from", "steady_need", "_counter_name",
    )
    # fmt: on

    def __init__(self, rule: StallSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.wake_at = math.inf
        self.state: RunState | None = None
        self.blind = False  # the newest news is a source error: progress unknown
        self.last_step: int | None = None
        self.last_step_at: float | None = None
        self.first_step: int | None = None  # the first step and its time: how long the run was watched
        self.first_step_at: float | None = None
        self.top_step: int | None = None
        self.awaiting_since: float | None = None  # a (re)start with no step since
        self.awaiting_learnable = False  # the start time is known (not merely first sight)
        self.intervals = array("d")  # the newest ``window`` (8 B a value; STRIDES, LEARNED: lists below)
        self.strides: list[int] = []
        self.restores: list[float] = []
        self.pauses: list[float] = []
        self.schedule = PauseSchedule()
        self.counter: float | None = None
        self.median: float | None = None  # of the intervals, refreshed as they come
        self.outliers = 0  # intervals in a row too long to be cadence
        self.p99: float | None = None  # of the intervals, refreshed with the median
        self._fresh = 0  # intervals added since the median and p99 were computed
        self._ordinary = rule.floor  # ordinary_limit(), refreshed with them
        self._soonest = min(rule.hang_after, rule.floor)  # the shortest limit there can be
        self._mark_after = rule.floor / 2  # a longer gap is a pause to learn from
        self._pause_after = math.inf  # a longer gap is no cadence (PAUSE_X x the median)
        self._trust: list[float] | None = None  # watched this many steps and seconds, the schedule is known
        self.steady_since: float | None = None  # the start of the current stretch with no long pause
        self.steady_from = 0  # the step it started at
        self.steady_need = rule.steady_after  # such a stretch this long: the run does not pause
        self._counter_name = rule.restart_counter

    def inputs(self) -> frozenset[str] | None:
        return None

    def import_state(self, data: dict) -> bool:
        if not super().import_state(data):
            return False
        for name in WINDOWS:  # a snapshot written before holds them as deques (as bounded) or lists
            setattr(self, name, list(getattr(self, name)))
        self.intervals = array("d", self.intervals)
        return True

    # ---- samples ---------------------------------------------------------------------------
    def _restart(self, t: float) -> None:
        if self.last_step is not None or self.state == RunState.RUNNING:  # a run known to take steps
            self.awaiting_since, self.awaiting_learnable = t, True
            self.steady_since = None  # steady again from the first step after the restore
            self.schedule.restarted(t)
            self._trust = self.schedule.trusted_after()

    def observe(self, sample: Sample) -> None:
        t = sample.t
        if sample.source_error is not None:
            self.blind = True
            self.wake_at = math.inf
            return
        self.blind = False
        st = sample.state
        if st is not None:
            resumed = st == RunState.RUNNING and self.state not in RUNNING_OR_UNKNOWN
            self.state = st
            if resumed:
                self._restart(t)  # resumed after a crash or preemption
        counter = self._counter_name
        if counter is not None and sample.metrics:
            v = sample.metrics.get(counter)
            if v is not None and _finite(v):
                if self.counter is not None and v > self.counter:
                    self._restart(t)
                self.counter = v
        step = sample.step
        if step is None:
            if self.last_step_at is None and self.awaiting_since is None and st == RunState.RUNNING:
                self.awaiting_since = t  # first sight of a run reported running, no step yet
        else:
            last = self.last_step
            if last is not None and step > last and self.awaiting_since is None:  # the common case
                if step > self.top_step:
                    self.top_step = step
                gap = t - self.last_step_at
                if gap > 0:
                    self._gap(last, step - last, gap)
                self.last_step, self.last_step_at = step, t
            else:
                self._step(step, t)
        # when it may fire at the earliest, with no new sample
        if self.state not in RUNNING_OR_UNKNOWN:
            self.wake_at = math.inf
        elif self.awaiting_since is not None:
            self.wake_at = self.awaiting_since + self.startup_allowance()
        elif self.last_step_at is not None:
            soonest = self._soonest if self.known() else self.rule.floor
            self.wake_at = self.last_step_at + soonest  # a lower bound: evaluate() refines it
        else:
            self.wake_at = math.inf

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        return self._observe_steps(samples, i, end, REFRESH, 2 * MIN_INTERVALS)  # stall_batch.py

    def _step(self, step: int, t: float) -> None:
        """A step other than the next one of a running run (observe handles that, the common case)."""
        last = self.last_step
        if self.first_step is None:
            self.first_step, self.first_step_at, self.top_step = step, t, step
            self.steady_since, self.steady_from = t, step
        elif step > self.top_step:
            self.top_step = step
        if self.awaiting_since is not None:
            if self.awaiting_learnable and t > self.awaiting_since:
                self.restores.append(t - self.awaiting_since)
                keep_last(self.restores, LEARNED)
            self.awaiting_since = None
            self.last_step, self.last_step_at = step, t
            self.steady_since, self.steady_from = t, step
        elif last is None or step < last:
            # first step seen, or a rewind: the run resumed from a checkpoint, its cadence restarts here
            self.last_step, self.last_step_at = step, t
            self.steady_since, self.steady_from = t, step

    def _gap(self, last: int, stride: int, gap: float) -> None:
        """``gap`` seconds from step ``last`` to the next one, ``stride`` steps on."""
        strides = self.strides
        strides.append(stride)
        if len(strides) > STRIDES:
            del strides[0]
        if gap > self._mark_after:  # a long pause the run came back from by itself
            if self.steady_since is not None:  # the stretch without a pause ends here
                stretch = self.last_step_at - self.steady_since
                self.steady_need = max(self.steady_need, COVER * stretch)
            self.steady_since, self.steady_from = self.last_step_at + gap, last + stride
            self.pauses.append(gap)
            keep_last(self.pauses, LEARNED)
            self.schedule.add(last, self.last_step_at, gap, self.stride(), self.slack())
            self._trust = self.schedule.trusted_after()
            return
        if gap > self._pause_after:
            self.outliers += 1
            if self.outliers < NEW_CADENCE:
                return  # a short pause (an eval): not cadence
            del self.intervals[:]  # several in a row: the cadence changed
        self.outliers = 0
        intervals = self.intervals
        intervals.append(gap)
        if len(intervals) > self.rule.window:
            del intervals[0]
        self._fresh += 1
        if self._fresh >= REFRESH or len(self.intervals) < 2 * MIN_INTERVALS:
            self._refresh()

    def _refresh(self) -> None:
        """The median and p99 of the step intervals, and the ordinary limit they give."""
        n, self._fresh = len(self.intervals), 0
        if n < MIN_INTERVALS:
            self.median = self.p99 = None
            self._ordinary, self._pause_after = self.rule.floor, math.inf
        else:
            ordered = sorted(self.intervals)
            self.median = median_of_sorted(ordered)
            self.p99 = ordered[min(n - 1, int(0.99 * n))]
            self._ordinary = max(self.rule.hang_after, self._steps_limit(self.p99))
            self._pause_after = PAUSE_X * self.median
        self._mark_after = self._ordinary / 2

    # ---- the limits ------------------------------------------------------------------------
    def known(self) -> bool:
        """Is the learned schedule trusted (see schedule.py), or does the run not pause at all?"""
        trust = self._trust
        if trust is None or self.first_step is None:
            return self.steady()
        steps, seconds = trust
        if self.top_step - self.first_step > steps and self.last_step_at - self.first_step_at > seconds:
            return True
        return self.steady()

    def steady(self) -> bool:
        """Has the run stepped at a known cadence with no long pause for long enough?"""
        since = self.steady_since
        return (
            since is not None
            and self.p99 is not None
            and self.last_step_at is not None
            and self.last_step_at - since >= self.steady_need
            and self.top_step - self.steady_from >= self.rule.steady_steps
        )

    def _steps_limit(self, p99: float) -> float:
        """``k`` missed steps, but never more than ``floor`` past the slowest usual step: at 100 s a
        step, 10 steps would be 17 minutes of waiting beyond the step that should have come."""
        return min(self.rule.k * p99, p99 + self.rule.floor)

    def ordinary_limit(self) -> float:
        """Once the schedule is known: how long a pause at an ordinary step may last."""
        return self._ordinary

    def stride(self) -> float:
        return median_of_sorted(sorted(self.strides)) if self.strides else 1.0

    def slack(self) -> float:
        """Timing noise of a timed habit: a few step intervals."""
        return 3 * (self.median or 0.0)

    def limit(self) -> float:
        """How long the current pause (after ``last_step``) may last."""
        return self._limit()[0]

    def _limit(self) -> tuple[float, str]:
        r = self.rule
        habit = None
        if self.last_step is not None and self.last_step_at is not None:
            habit = self.schedule.match(self.last_step, self.last_step_at, self.stride(), self.slack())
        allowance, said = 0.0, ""
        if habit is not None:
            norm = usual(habit)
            allowance, said = r.habit_factor * norm, f"{r.habit_factor:g} x {self.schedule.describe(habit)}"
            # a longer pause the run came back from at this habit's steps (an eval with every 4th save)
            # gets the same margin over it, up to max_pause: what the run was seen to do does not page
            seen = self.schedule.longest_at(habit, self.stride(), self.slack())
            extended = min(r.max_pause, seen + (r.habit_factor - 1) * norm)
            if extended > allowance:
                allowance = extended
                where, more = self.schedule.describe(habit), format_duration((r.habit_factor - 1) * norm)
                said = f"a {format_duration(seen)} pause seen where {where} comes, and {more}"
        if self.known():
            ordinary = self.ordinary_limit()
            if habit is None:
                if self.steady():
                    steady = format_duration(self.last_step_at - self.steady_since)
                    return ordinary, f"no habitual pause: steady for {steady} before this"
                return ordinary, "not a habitual pause step of the learned schedule"
            if allowance >= usual(habit) + ordinary:
                return allowance, said
            then = f"{self.schedule.describe(habit)}, then {format_duration(ordinary)}"
            return usual(habit) + ordinary, then
        limit, why = r.floor, ""
        p99 = self.p99
        if p99 is not None:
            limit = max(limit, self._steps_limit(p99))
        if habit is not None and usual(habit) + limit > allowance:
            # never less patient than once known: where a habit pauses, the habit plus what would not
            # fire alone (an eval that comes with every 4th save, before it has been seen)
            allowance = usual(habit) + limit
            said = f"{self.schedule.describe(habit)}, then {format_duration(limit)}"
        recurring = self.recurring_pause()
        if recurring is not None:
            limit = max(limit, min(r.max_pause, r.pause_factor * recurring))
        if allowance > limit:
            return allowance, said
        return limit, why

    def recurring_pause(self) -> float | None:
        """The longest pause that happened at least twice (two of the recent pauses within 1.5x)."""
        ordered = sorted(self.pauses, reverse=True)
        for longer, shorter in zip(ordered, ordered[1:], strict=False):
            if shorter * RECURS >= longer:
                return longer
        return None

    def startup_allowance(self) -> float:
        """After restores: the longest plus the factor's extra over n restores seen, or their spread."""
        if self.restores:
            longest, n = max(self.restores), len(self.restores)
            extra = max((self.rule.restore_factor - 1.0) * longest / n, longest - min(self.restores))
            return max(self.rule.floor, longest + extra)
        return self.rule.startup

    # ---- the verdict -----------------------------------------------------------------------
    def evaluate(self, now: float) -> Finding:
        if self.state not in RUNNING_OR_UNKNOWN:
            return Finding(False, step=self.last_step, reason=f"run is {self.state}")
        if self.blind:
            return Finding(False, step=self.last_step, reason="source unreadable: progress unknown")
        if self.awaiting_since is not None:
            waited = now - self.awaiting_since
            allowance = self.startup_allowance()
            self.wake_at = self.awaiting_since + allowance
            what = "start" if self.last_step is None else "restart"
            learned = " learned from earlier restores" if self.restores else ""
            return Finding(
                waited > allowance,
                value=waited,
                threshold=allowance,
                step=self.last_step,
                onset=self.awaiting_since,
                reason=f"no first step {format_duration(waited)} after {what} "
                f"(allowance {format_duration(allowance)}{learned})",
            )
        if self.last_step_at is None:
            return Finding(False, reason="no data yet")
        idle = now - self.last_step_at
        limit, why = self._limit()
        self.wake_at = self.last_step_at + limit
        if idle > limit:
            return Finding(
                True,
                value=idle,
                threshold=limit,
                step=self.last_step,
                onset=self.last_step_at,  # the evidence: no step since this one
                onset_step=self.last_step,
                reason=f"no new step for {format_duration(idle)} "
                f"(limit {format_duration(limit)}{': ' + why if why else ''})",
            )
        return Finding(
            False,
            value=idle,
            threshold=limit,
            step=self.last_step,
            reason=f"last step {self.last_step}, {format_duration(idle)} ago, within the limit "
            f"{format_duration(limit)}",
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, float | int | None]:
        return {
            "limit": self.limit(),
            "last_step": self.last_step,
            "schedule_known": int(self.known()),
            "steady": int(self.steady()),
            "habits": len(self.schedule.habits),
        }


def _finite(v: object) -> bool:
    """A finite number (a counter value from a buggy source may be anything)."""
    try:
        return not v - v  # type: ignore[operator]
    except TypeError:
        return False
