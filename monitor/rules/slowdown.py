"""``slowdown``: a small sustained slowdown, found by a CUSUM on the run's step time (or a throughput
metric) against the run's own baseline.

The step time of each logged step (seconds between two rows over the steps between them) or the value of
``metric`` is taken on a log scale, so a change is relative. Pauses are left out (a step time over 5x
the usual: saves and evals), and values are summarised per ``bucket`` by their median (one slow step
moves nothing; a bucket holds at least ``min_points`` values, so a slow run's are longer; a fast run's
are narrower, about 30 steps, at least a minute: slowdown_width.py). The baseline is the interquartile
mean of the buckets of the trailing ``baseline`` period, except the newest ``lag`` (a drop must not
become normal before it is caught); its noise is their MAD, scaled up for a run whose speed wanders
slowly (lag-1 autocorrelation). The baseline is ready after ``warmup`` and ``warmup_steps`` step times
(an hour is 36 steps at 100 s a step: too few to have seen the run's own slow wander, which follows its
data and schedule, in steps) once it has settled (its first and last thirds within shift/4): a baseline
still on the move is part of a slow swing, not a level. Each bucket then adds its excess
over baseline + ``shift``/2 to the CUSUM, weighted by its evidence w (its values over a usual
bucket's, at most 1: a bucket shortened by a pause counts for the steps it holds)

    S = max(0, S + w (x - baseline - shift / 2))

and the rule fires when S exceeds max(``h`` x (``shift`` x sqrt(n0/n) + drift), ``z`` x sigma, swing)
for a baseline of n buckets, ready at n0, whose first and last thirds are drift apart, swing being the
largest excursion the run came back from by itself (slowdown_level.py): the highest the same CUSUM
climbed over the baseline's own buckets before falling back to 0, or an alert that resolved without a
restart (its buckets then join the baseline); it is kept as the baseline slides on and across a restart.
A run with a cycle of its own (slowdown_season.py: found in the baseline's buckets over steps) is judged
against the value expected at this point of its cycle, with the statistics of the residuals, and an
excursion needs 1.5 buckets of evidence; the level CUSUM runs beside it (fires with the cycle's above 0).
The open bucket is judged too, for its evidence so far (about 16 times as it fills). While it fires
the baseline is frozen (its buckets are held out); it resolves once S has come down to half the
threshold. The alert says how large the slowdown is and when it began (the bucket where S left 0). A
restart (a step rewind, a resume, a restart counter increase) keeps the baseline, checked against the
new steps (slowdown_restart.py: the same speed, judged at once; another, learned afresh). Before the
baseline is ready the rule cannot tell (the alert keeps its state).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from monitor.durations import Duration
from monitor.rules.base import Detector, register
from monitor.rules.slowdown_batch import SlowdownBatch
from monitor.rules.slowdown_level import CAP, LevelWatch, SlowdownThresholds
from monitor.rules.slowdown_restart import SlowdownRestart
from monitor.rules.slowdown_season import Season
from monitor.rules.slowdown_stats import came_back, level_top
from monitor.rules.slowdown_verdict import SlowdownVerdict
from monitor.rules.slowdown_width import SlowdownWidth
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAX_WINDOW, keep_last, median_of_sorted, take_first
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample

PAUSE_X = 5.0  # a step time 5x the usual is a pause (save, eval), not a slow step
PEEKS = 16  # the open bucket is judged about this many times before it closes


class SlowdownSpec(RuleSpec):
    kind: Literal["slowdown"] = "slowdown"
    metric: str | None = Field(
        default=None, description="a throughput metric; none: the step time, from the rows' timestamps"
    )
    worse: Literal["higher", "lower"] = Field(
        default="higher", description="which way is slower: higher (a step time) or lower (tokens/s)"
    )
    shift: float = Field(default=0.04, gt=0, lt=1, description="the smallest sustained slowdown to catch")
    h: float = Field(default=2.0, gt=0, description="fires when the CUSUM reaches h x shift (or z sigma)")
    z: float = Field(default=4.0, gt=0, description="... or this many sigmas of the baseline's buckets")
    bucket: Duration = Field(default=300.0, gt=0, description="values are summarised per bucket")
    min_points: int = Field(default=8, ge=1, description="values a bucket needs (else it grows)")
    baseline: Duration = Field(default=6 * 3600.0, gt=0, description="the trailing baseline period")
    lag: Duration = Field(default=1800.0, ge=0, description="the newest buckets stay out of the baseline")
    warmup: Duration = Field(default=3600.0, gt=0, description="baseline needed before judging")
    warmup_steps: int = Field(default=500, ge=0, description="... and the step times it must hold")
    restart_counter: str | None = Field(default="restarts_total", description="a restart counter, if any")


@register
class SlowdownDetector(
    SlowdownBatch, SlowdownThresholds, SlowdownRestart, SlowdownVerdict, SlowdownWidth, Detector[SlowdownSpec]
):
    kind = "slowdown"
    spec_model = SlowdownSpec

    # fmt: off
    __slots__ = (
        "_width", "_scale", "_need", "_lagged", "recent", "cap", "base", "base_n", "held", "sized", "rewarm",
        "prev_t", "prev_step", "last_step", "pos", "pos_last", "_sign", "_k", "state", "counter",
        "bucket_start", "values", "ref_n", "peek", "peek_at", "mu", "sigma", "swing", "climb", "peak",
        "drift", "s", "firing", "began", "excess", "_pause", "resets", "pos_open", "season", "level",
        "base_since", "base_to", "_metric", "_counter", "_min_points",
    )
    # fmt: on

    def __init__(self, rule: SlowdownSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self._sign = 1.0 if rule.worse == "higher" else -1.0
        self._k = rule.shift / 2
        self._need = max(3, math.ceil(rule.warmup / rule.bucket))
        self._lagged = math.ceil(rule.lag / rule.bucket)
        self.prev_t: float | None = None  # the previous row (step time mode)
        self.prev_step: int | None = None
        self.state: RunState | None = None
        self.counter: float | None = None
        self.bucket_start: list | None = None  # [t, step] of the open bucket's first value
        self.values: list[float] = []  # the open bucket's raw values (at most MAX_WINDOW)
        # the windows are lists (an empty deque costs 624 bytes) of at most ``cap`` buckets (recent: lag + 2)
        self.cap = max(self._need, math.ceil(rule.baseline / rule.bucket))
        self.recent: list[list[float]] = []  # buckets not in the baseline yet
        self.base: list[float] = []
        self.base_n: list[int] = []  # the values of the baseline's buckets
        self.ref_n: float | None = None  # their median: the evidence of one usual bucket
        self.peek: list[float] | None = None  # the open bucket judged: [S with it, weight x excess, weight]
        self.peek_at = rule.min_points  # the open bucket is judged again when it holds this many values
        self.mu: float | None = None  # the baseline and its sigma, refreshed as buckets join it
        self.sigma = 0.0
        self.swing = 0.0  # the largest excursion the run came back from by itself (``came_back``)
        self.climb = self.peak = 0.0  # the CUSUM uncapped since it left 0, and its peak
        self.held: list[list[float]] = []  # buckets held out while firing
        self.drift = 0.0  # how far the baseline's last third is from its first (a level on the move)
        self.s = 0.0  # the CUSUM
        self.firing = False
        self.began: list[float] | None = None  # [t, step] of the bucket where the excursion began
        self.excess = [0.0, 0]  # sum of (x - baseline) and buckets since it began
        self.last_step: int | None = None  # the newest value's step
        self._pause = math.inf  # a step time above this is a pause
        self._metric, self._counter = rule.metric, rule.restart_counter
        self._width, self._min_points = rule.bucket, rule.min_points
        self.resets = 0
        self.pos = 0.0  # steps progressed (across restarts): where a value is in the run's cycle
        self.pos_open: float | None = None  # ... at the open bucket's start, and at its newest value
        self.pos_last = 0.0
        self.season = Season(3 * self.cap, self._k)  # the run's own cycle, if it has one
        self.rewarm: list[list[float]] | None = None  # after a restart: the buckets waiting to be checked
        self.level = LevelWatch()  # the level CUSUM, while the rule judges against the run's cycle
        self.sized = False  # the bucket width decided for this baseline (slowdown_width.py)
        self._scale = 1.0  # ... a bucket's evidence, its share of ``bucket``
        self.base_since = self.base_to = 0.0  # the first and newest baseline buckets' starts

    def inputs(self) -> frozenset[str] | None:
        return None  # steps, states and the restart counter

    # ---- samples ---------------------------------------------------------------------------
    def observe(self, sample: Sample) -> None:
        st = sample.state
        if st is not None:
            if st == RunState.RUNNING and self.state not in RUNNING_OR_UNKNOWN:
                self.reset()  # resumed after a crash or preemption
            self.state = st
        metrics = sample.metrics
        name = self._counter
        if name is not None and name in metrics:
            v = metrics[name]
            if not v - v:
                if self.counter is not None and v > self.counter:
                    self.reset()
                self.counter = v
        t, step = sample.t, sample.step
        if self._metric is None:  # the step time, from the rows' timestamps
            if step is None:
                return
            prev_t, prev_step = self.prev_t, self.prev_step
            self.prev_t, self.prev_step = t, step
            if prev_step is None or step == prev_step:
                return
            if step < prev_step:
                self.reset()  # a rewind: the run restarted from a checkpoint
                return
            if t <= prev_t:
                return
            value = (t - prev_t) / (step - prev_step)
            delta: float = step - prev_step
        else:
            value = metrics.get(self._metric)
            if value is None or value - value or value <= 0:
                return
            if step is not None and self.last_step is not None and step < self.last_step:
                self.reset()
            last = self.last_step
            delta = step - last if step is not None and last is not None and step > last else 1.0
        self.pos += delta
        # values stay raw until their bucket closes: the log of the median is the median of the logs
        if value > self._pause:
            return  # a pause (checkpoint save, eval): not the step time
        self.last_step = step
        start = self.bucket_start
        if start is None:
            self.bucket_start, self.pos_open = [t, step], self.pos - delta
        elif (
            t - start[0] >= self._width
            and len(self.values) >= self._min_points
            or len(self.values) >= MAX_WINDOW
        ):
            if not self.sized:
                self._decide_width(t)
            self._close()
            self.bucket_start, self.pos_open = [t, step], self.pos - delta
        self.values.append(value)
        self.pos_last = self.pos
        if len(self.values) >= self.peek_at:
            self._peek()

    def reset(self, carry_over: bool = True) -> None:
        """A restart (or another speed after one, ``carry_over`` False): the open and recent buckets and
        the CUSUM go; the baseline is carried over to be checked (slowdown_restart.py) or learned afresh."""
        self.values, self.bucket_start, self.prev_t, self.prev_step = [], None, None, None
        self.recent.clear()
        self.s, self.climb, self.peak = 0.0, 0.0, 0.0
        self.held.clear()
        self.peek, self.peek_at = None, self._min_points
        self.firing = self.hot = False
        self.began, self.excess = None, [0.0, 0]
        self.pos_open = None
        self.level.clear()
        self.resets += 1
        if carry_over and self._carry():
            return
        self.rewarm = None
        self.base.clear()
        self.mu, self.sigma, self._pause, self.drift = None, 0.0, math.inf, 0.0
        self.base_n.clear()
        self.ref_n = None
        self.sized = False  # the width is decided again, for the new baseline
        resolved = self.season.resolved  # the swings learned are kept: the run's data wander as before
        self.season.clear()
        self.season.resolved = resolved

    def _close(self) -> None:
        """The open bucket is complete: its median joins the recent buckets and the CUSUM."""
        self.values.sort()  # (in place: the peeks kept it nearly sorted; only its median counts)
        median = median_of_sorted(self.values)
        b = [*self.bucket_start, self._sign * math.log(median), len(self.values)]
        if self.pos_open is not None:
            b.append((self.pos_open + self.pos_last) / 2)  # where the bucket is in the run's cycle
        self.values, self.bucket_start, self.pos_open = [], None, None
        self.peek, self.peek_at = None, self._min_points
        if self.rewarm is not None:  # after a restart: checked against the carried baseline first
            self._rewarm(b)
        else:
            self._take(b)

    def _take(self, b: list[float]) -> None:
        """A closed bucket joins the recent buckets (the oldest of them the baseline) and the CUSUM."""
        recent = self.recent
        recent.append(b)
        if len(recent) > self._lagged + 2:
            del recent[0]
        if self._sign > 0:  # a step time 5x the usual is a pause
            self._pause = PAUSE_X * math.exp(self.mu if self.mu is not None else b[2])
        admitted = False
        while self.recent and not self._lagging(b):
            old = take_first(self.recent)
            if self.firing:  # a slowdown that fired must not become the new normal (yet)
                self.held.append(old)
                keep_last(self.held, self.cap)
            else:
                self._admit(old)
                admitted = True
        if admitted and self.base_n:
            self.ref_n = median_of_sorted(sorted(self.base_n))
        if admitted and self._warm():
            mu, self.sigma, self.drift, top = level_top(sorted(self.base), self.base)
            if not top - mu - self._k <= 0:  # (else no bucket can climb: came_back's 0)
                n = len(self.base)
                weights = self._weights() if len(self.base_n) == n else [self._scale] * n
                self.swing = max(self.swing, came_back(self.base, weights, mu, self._k))  # kept as it slides
            # the run's cycle found (or lost): judge afresh against it (narrow buckets: from half the
            # residuals, their cycle shows in the level's noise until it is found)
            if self.season.refresh(self._need if self._scale >= 1 else self._need // 2):
                self.s, self.began, self.excess, self.climb, self.peak = 0.0, None, [0.0, 0], 0.0, 0.0
                self.level.clear()
            if self.mu is None:
                if not self._settled():
                    return  # the baseline still moves (a slow swing seen in part): keep learning
                self.mu = mu  # ready: judge the buckets that waited on it
                for waiting in list(self.recent)[:-1]:
                    self._cusum(waiting)
            self.mu = mu
        if self.mu is not None:
            self._cusum(b)

    def _admit(self, b: list[float]) -> None:
        if not self.base:
            self.base_since = b[0]
        self.base_to = b[0]
        base, cap = self.base, self.cap
        base.append(b[2])
        if len(base) > cap:
            del base[0]
        if len(b) > 3:
            base_n = self.base_n
            base_n.append(int(b[3]))
            if len(base_n) > cap:
                del base_n[0]
        if len(b) > 4:
            self.season.add(b[4], b[2], self._weight(b[3]))

    def _expect(self, pos: float | None) -> float:
        """The value expected at this position: the run's cycle's there if it has one, else the level."""
        if pos is not None and self.season.period is not None:
            e = self.season.expected(pos)
            if e is not None:
                return e
        return self.mu

    def _weight(self, n: float | None) -> float:
        """A bucket's evidence, in usual buckets: its values over the baseline buckets' median count, at
        most 1. A short bucket (a pause in it, the open one) moves the CUSUM as much per step as a full
        one, as a log-likelihood ratio does; a long one counts as one: a bucket's noise is mostly the
        run's slow wander, which more steps in it do not average out (the real jitter: 5-minute medians
        wander as much as 1-minute ones)."""
        ref, scale = self.ref_n, self._scale  # (a bucket narrower than ``bucket`` counts for its share)
        return scale if n is None or not ref else scale * min(1.0, n / ref)

    def _weights(self) -> list[float]:
        """``[self._weight(n) for n in self.base_n]``, in C loops (once a bucket, over the baseline)."""
        ref, scale, counts = self.ref_n, self._scale, self.base_n
        if not ref:
            return [scale] * len(counts)
        weight = {n: scale * min(1.0, n / ref) for n in set(counts)}  # (a few distinct counts)
        return list(map(weight.__getitem__, counts))

    def _peek(self) -> None:
        """Judge the open bucket as it stands, for its evidence so far, so that a slowdown is not held
        back until its bucket closes. Crossing the threshold fires (the closing bucket then confirms
        it: firing resolves only below half the threshold)."""
        n = len(self.values)
        self.peek_at = n + max(self._min_points, math.ceil((self.ref_n or 0) / PEEKS))
        if self.mu is None or self.firing or self.rewarm is not None:
            return
        w = self._weight(n)
        at = None if self.pos_open is None else (self.pos_open + self.pos_last) / 2
        self.values.sort()  # in place: the next peek sorts the values since (only the median counts)
        dev = self._sign * math.log(median_of_sorted(self.values)) - self._expect(at)
        s = self.s + w * (dev - self._k)
        self.peek = [s, w * dev, w] if s > 0 else None
        fires = s > 0 and s > self.threshold() and self._sustained(self.excess[1] + w)  # (threshold > 0)
        if self.season.period is not None and not fires and s > 0:  # the level CUSUM beside it
            devl = dev + self._expect(at) - self.mu
            fires = self.level.s + w * (devl - self._k) > self.level_threshold()
        if fires:
            if self.began is None:
                self.began = list(self.bucket_start)
            self.firing = self.hot = True

    def _cusum(self, b: list[float]) -> None:
        t, step, x = b[:3]
        w = self._weight(b[3] if len(b) > 3 else None)
        dev = x - self._expect(b[4] if len(b) > 4 else None)
        s = self.s + w * (dev - self._k)
        self.peek = None
        seasonal = self.season.period is not None
        if seasonal:
            self.level.add(x - self.mu, w, self._k, self.level_threshold())
        level = seasonal and self.level.s > self.level_threshold() and self.s > 0  # both see it
        if s <= 0:
            self.s, self.began, self.excess, self.climb, self.peak = 0.0, None, [0.0, 0], 0.0, 0.0
        else:
            if self.began is None:
                self.began = [t, step]
            self.s = min(s, CAP * self.threshold())
            self.excess[0] += w * dev
            self.excess[1] += w
            self.climb += w * (dev - self._k)
            self.peak = max(self.peak, self.climb)
        if self.firing:
            self.firing = (
                self.s > self.threshold() / 2 or seasonal and self.level.s > self.level_threshold() / 2
            )
            if not self.firing:  # it came back by itself: a swing of the run's own, not a slowdown
                if seasonal:
                    self.season.resolved = max(self.season.resolved, self.peak)
                    self.swing = max(self.swing, self.level.peak)
                else:
                    self.swing = max(self.swing, self.peak)
                for held in self.held:
                    self._admit(held)
                self.held.clear()
        else:
            self.firing = self.s > self.threshold() and self._sustained(self.excess[1]) or level
        if self.firing and self.began is None:
            self.began = [t, step]  # (the level CUSUM fired, or holds it up, the cycle's at 0)
        self.hot = self.firing

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, float | int | None]:
        return {
            "baseline": None if self.mu is None else math.exp(self._sign * self.mu),
            "cusum": self.s,
            "threshold": self.threshold(),
        }
