"""``trend``: a metric rising (or falling) steadily, with no single spike: a slow divergence.

Values are summarised in time buckets by their median (a spike moves one bucket at most), on a log
scale by default so that a rise is relative. The rule looks at the last ``window`` and at windows 4
and 16 times as long (``scales``: a run that takes 10 s a step diverges over hours, not minutes),
each kept as ``buckets`` buckets (a longer window's buckets are medians of the shorter one's). It
fires when, over one of them:

- the rise is large: the Theil-Sen slope of the buckets times the window's span is at least
  max(``min_rise``, ``z`` x the bucket noise), the noise being estimated from bucket-to-bucket
  differences (a trend does not inflate it);
- the rise is steady: Kendall's tau of the buckets against time is at least ``tau`` (1: each bucket
  higher than every earlier one; a loss that bumps and comes back, or noise, is near 0).

A healthy loss falls or stays flat; one that climbs steadily for half an hour is diverging. A window
needs 30% of its buckets (saves and evals leave some empty), spanning most of it and at least
``min_steps`` steps, before it can tell: at 100 s a step half an hour holds 18 steps, and a noisy loss
rises steadily over a dozen or two by chance (a real spike takes ~30 to recover; the longer windows
judge a slow run). A step rewind (a restart from a checkpoint) starts afresh.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from operator import sub
from typing import Any, Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.columns import Columns, all_finite, columns
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAD_TO_SIGMA, median_of_sorted
from monitor.samples import Sample

SPAN = 0.8  # a window's buckets must span this share of it
FILLED = 0.3  # ... and be this share of its buckets (pauses leave some empty)
MAX_VALUES = 4096  # values an open bucket holds at most
NAN = math.nan


class TrendSpec(RuleSpec):
    kind: Literal["trend"] = "trend"
    metric: str
    direction: Literal["up", "down"] = Field(default="up", description="which way is bad")
    scale: Literal["log", "linear"] = Field(default="log", description="log: a relative rise (values > 0)")
    window: Duration = Field(default=1800.0, gt=0, description="the shortest period a trend is judged over")
    scales: int = Field(default=3, ge=1, le=4, description="also windows 4x, 16x, ... as long")
    buckets: int = Field(default=30, ge=9, le=256, description="buckets per window")
    min_points: int = Field(default=2, ge=1, description="values a bucket needs (else it grows)")
    min_rise: float = Field(default=0.02, gt=0, description="the rise that counts (log: 0.02 is ~2%)")
    z: float = Field(default=4.0, gt=0, description="... and at least this many sigmas of bucket noise")
    tau: float = Field(default=0.5, gt=0, le=1, description="how steady: Kendall's tau of the buckets")
    min_steps: int = Field(default=64, ge=0, description="steps a window must span before it can tell")


def _window(length: float, buckets: int) -> dict[str, Any]:
    """One time scale, as plain data: its open bucket and its closed buckets as columns of doubles: their
    first value's time and step (NaN: none), their median (8 bytes a figure; a list a bucket took ~130)."""
    return {
        "length": length,
        "width": length / buckets,
        "open": None,  # [t, step] of the open bucket's first value
        "values": [],  # the open bucket's values (the shortest window's are the detector's ``values``)
        "bt": array("d"),  # at most ``buckets`` + 2
        "bs": array("d"),
        "by": array("d"),
        "rise": 0.0,
        "tau": 0.0,
        "hit": False,  # its latest judgement
    }


@register
class TrendDetector(Detector[TrendSpec]):
    kind = "trend"
    spec_model = TrendSpec

    # fmt: off
    __slots__ = (
        "metric", "_sign", "_log", "_keep", "windows", "values", "close_at", "last_step", "last_value",
        "cond", "hit", "resets",
    )
    # fmt: on

    def __init__(self, rule: TrendSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self._sign = 1.0 if rule.direction == "up" else -1.0
        self._log = rule.scale == "log"
        self._keep = rule.buckets + 2
        self.windows = [_window(rule.window * 4**k, rule.buckets) for k in range(rule.scales)]
        self.values: list[float] = []  # the shortest window's open bucket (raw values)
        self.close_at = -math.inf  # ... closes at the first value from then on (-inf: none open)
        self.last_step: int | None = None  # the newest value's step
        self.last_value: float | None = None  # the newest value, once its bucket closed (else values[-1])
        self.cond = False
        self.hit: int | None = None  # the window whose trend fired
        self.resets = 0

    def import_state(self, data: dict) -> bool:
        if not super().import_state(data):
            return False
        for w in self.windows:  # written before the buckets were columns: [t, step, median] lists
            old = w.pop("buckets", None)
            if old is not None:
                w["bt"] = array("d", [b[0] for b in old])
                w["bs"] = array("d", [NAN if b[1] is None else b[1] for b in old])
                w["by"] = array("d", [b[2] for b in old])
        return True

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v or (self._log and v <= 0):
            return
        t, step = sample.t, sample.step
        last_step = self.last_step
        if step is not None and last_step is not None and step < last_step:
            self.windows = [_window(w["length"], self.rule.buckets) for w in self.windows]  # a rewind
            self.values, self.close_at = [], -math.inf
            self.cond, self.hot, self.hit = False, False, None
            self.resets += 1
        self.last_step = step
        if t < self.close_at and len(self.values) < MAX_VALUES:
            self.values.append(v)  # the common case: raw values, the log of the median comes later
            return
        self.last_value = v
        b = self._add(0, t, step, v, self.rule.min_points)
        w0 = self.windows[0]
        self.close_at = w0["open"][0] + w0["width"]
        if b is not None:
            # the shortest window's buckets are the values of the longer ones (medians of medians)
            for k in range(1, len(self.windows)):
                self._add(k, b[0], b[1], b[2], 1)
            self.hit = next((k for k, w in enumerate(self.windows) if w["hit"]), None)
            self.cond = self.hot = self.hit is not None

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """Replay's batched path: a value into the open bucket (``observe``'s common case) in a loop; a
        value that closes a bucket (or rewinds) through ``observe``."""
        m, log = self.metric, self._log
        cols = columns(samples, i, end)
        while i < end:
            if not self.hot:
                values, close_at, last_step = self.values, self.close_at, self.last_step
                room = MAX_VALUES - len(values)
                k = _stretch(cols, m, log, i, end, close_at, room, last_step)
                if k > i:  # the values of samples[i:k], all into the open bucket: at once
                    b = cols.base
                    values.extend(cols.values(m)[i - b : k - b])
                    self.last_step = cols.step[k - 1 - b]
                    i = k
                    continue
                append = values.append
                for k in range(i, end):
                    s = samples[k]
                    v = s.metrics.get(m)
                    if v is not None and not v - v and not (log and v <= 0):
                        step = s.step
                        if step is not None and last_step is not None and step < last_step:
                            break  # a rewind
                        if s.t >= close_at or room <= 0:
                            break  # the bucket closes
                        last_step = step
                        append(v)
                        room -= 1
                else:
                    k = end
                i = k
                self.last_step = last_step
            if i < end:  # not the common case: one sample through observe
                i, stop = self._uncommon(samples, i, end)
                if stop is not None:
                    return stop
        return i, RAN_OUT

    def _add(self, k: int, t: float, step: int | None, x: float, min_points: int) -> list | None:
        """One value into window ``k``; the bucket it closed, if any (the window is then judged)."""
        w = self.windows[k]
        closed, values = None, self.values if k == 0 else w["values"]
        if w["open"] is not None and (
            t >= w["open"][0] + w["width"] and len(values) >= min_points or len(values) >= MAX_VALUES
        ):
            mid = median_of_sorted(sorted(values))
            if k == 0:  # raw values: to the judged scale
                mid = self._sign * (math.log(mid) if self._log else mid)
            t0, step0 = w["open"]
            closed = [t0, step0, mid]
            bt, bs, by = w["bt"], w["bs"], w["by"]
            bt.append(t0)
            bs.append(NAN if step0 is None else step0)
            by.append(mid)
            horizon, gone, n = t - w["length"], 0, len(bt)
            while gone < n and (bt[gone] < horizon or n - gone > self._keep):
                gone += 1
            if gone:
                del bt[:gone], bs[:gone], by[:gone]
            values, w["open"] = [], None
            if k == 0:
                self.values = values
            else:
                w["values"] = values
            w["hit"] = self._judge(w)
        if w["open"] is None:
            w["open"] = [t, step]
        values.append(x)
        return closed

    def _ready(self, w: dict[str, Any]) -> bool:
        bt = w["bt"]
        if len(bt) < FILLED * self.rule.buckets or bt[-1] - bt[0] < SPAN * w["length"]:
            return False
        first, last = w["bs"][0], w["bs"][-1]  # steps: NaN for a metric logged without one
        return first != first or last != last or last - first >= self.rule.min_steps

    def _judge(self, w: dict[str, Any]) -> bool:
        if not self._ready(w):
            return False
        ys = w["by"].tolist()
        n, third = len(ys), len(ys) // 3
        # the thirds' medians sit 2/3 of the span apart: far below a third of the rise needed, the
        # O(n^2) statistics cannot find enough (a healthy loss falls or stays flat); the rise needed is
        # at least min_rise, so a rise of the thirds below a third of that needs no noise estimate
        thirds = median_of_sorted(sorted(ys[-third:])) - median_of_sorted(sorted(ys[:third]))
        needed = self.rule.min_rise
        if not thirds < needed / 3:  # (a NaN too, as before)
            diffs = sorted(map(abs, map(sub, ys[1:], ys)))  # |b - a| of neighbours, in C loops
            needed = max(needed, self.rule.z * MAD_TO_SIGMA * median_of_sorted(diffs) / math.sqrt(2))
        if thirds < needed / 3:
            w["rise"] = w["tau"] = 0.0
            return False
        pts = list(zip(w["bt"].tolist(), ys, strict=True))
        slopes = sorted(
            (y2 - y1) / (t2 - t1) for i, (t1, y1) in enumerate(pts) for t2, y2 in pts[i + 1 :] if t2 > t1
        )
        w["rise"] = rise = median_of_sorted(slopes) * (pts[-1][0] - pts[0][0]) if slopes else 0.0
        if rise < needed:
            return False
        concordant = sum((ys[j] > ys[i]) - (ys[j] < ys[i]) for i in range(n) for j in range(i + 1, n))
        w["tau"] = concordant / (n * (n - 1) / 2)
        return w["tau"] >= self.rule.tau

    def evaluate(self, now: float) -> Finding:
        m = self.metric
        if not self.values and self.last_value is None:
            return Finding(False, reason=f"no {m} yet")
        step, v = self.last_step, self.values[-1] if self.values else self.last_value
        if not any(self._ready(w) for w in self.windows):  # at a slow cadence the shortest never is
            return Finding(False, unknown=True, value=v, step=step, reason=f"{m}: filling the trend window")
        rose, rising = ("rose", "rising") if self._sign > 0 else ("fell", "falling")
        if not self.cond or self.hit is None:
            return Finding(False, value=v, step=step, reason=f"{m} is not {rising} steadily")
        w = self.windows[self.hit]
        size = f"{(math.exp(w['rise']) - 1) * 100:.1f}%" if self._log else fmt_value(w["rise"])
        first_t, first_step = w["bt"][0], w["bs"][0]
        first_step = None if first_step != first_step else int(first_step)
        steps = f" (steps {first_step} to {step})" if first_step is not None and step is not None else ""
        reason = (
            f"{m} {rose} steadily by {size} over the last {format_duration(w['bt'][-1] - first_t)}"
            f"{steps}, now {fmt_value(v)} (tau {w['tau']:.2f}): diverging"
        )
        return Finding(  # the onset: the start of the window it rose steadily over
            True,
            value=v,
            threshold=self.rule.min_rise,
            step=step,
            reason=reason,
            onset=first_t,
            onset_step=first_step,
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, float | int | None]:
        w = self.windows[0]
        return {"rise": w["rise"], "tau": w["tau"]}


def _stretch(
    cols: Columns, m: str, log: bool, i: int, end: int, close_at: float, room: int, last_step: int | None
) -> int:
    """Where ``observe_many``'s common case from ``samples[i]`` ends when every sample of the stretch
    is in it: each has a finite value (positive on a log scale), no step before the one before it and
    a time before ``close_at``, and there is room for them; then the loop would take them all. ``i``
    when it cannot tell (the loop a sample decides)."""
    if not cols.rising:
        return i
    b = cols.base
    steps = cols.step
    if last_step is not None and steps[i - b] < last_step:
        return i
    k = min(bisect_left(cols.t, close_at, i - b, end - b), i - b + room)
    if k <= i - b:
        return i
    vs = cols.values(m)[i - b : k]
    if not all_finite(vs) or log and min(vs) <= 0:
        return i
    return k + b
