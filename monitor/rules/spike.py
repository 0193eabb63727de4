"""``spike``: robust, training-aware spike detection on one metric (statistics: spike_baseline.py).

The newest value, or the floor of the recent window, is compared with a lagged robust baseline
(median; sigma from the MAD of step-to-step differences) on the log scale. A deviation counts when
it reaches max(``min_rise``, ``z`` x sigma): on the log scale ``min_rise: 0.05`` is about +5%.
The detector warms up until its baseline holds ``min_points`` values; a step rewind resets it.
``baseline_level: max`` compares with the worst value the baseline held instead of its median: a
metric that trends by nature (KL grows from zero like a power of the step, entropy falls) is then
judged against how far it had already gone, so only a jump beyond anything recent counts.
``of_progress`` adds a third bar, in the run's own units: a share of how far the run has come from its
worst baseline level (a reward that climbed from 0.2 to 0.9 must give back 0.35 at 0.5), so a
saturated metric with no noise left does not page on a dip.

Two patterns, one per rule (``mode``):

- ``point``: the newest value is a spike: the one-step blip a healthy run recovers from at the next
  step. Recorded (a spike count and the latest spike score, see ``stats()``), at most ``info``; the
  condition clears at the next normal value.
- ``floor``: the minimum over the recent window (``floor_window``, at least ``floor_points`` values
  spanning half the window) sits that far above the baseline: the loss did not come back down.
  This is what pages. While the floor is raised the baseline is frozen. With ``floor_steps`` the
  floor is also raised by that many values in a row beyond the bar (evidence counted in steps, and
  never fewer than twice the longest such run the run recovered from): the window of wall time then
  only bounds the wait, whatever the cadence.

Rules on the same metric with the same statistics parameters share one baseline. A point rule whose
rules (those of its ``floor_steps``) are all point rules shares one with rules of another ``floor_steps``
(``ride_key``) until their floor is first raised: only then would the baselines differ (a raised floor
freezes its own), and it goes on with a copy of its own (``SpikeBaseline.fork``), live and restored.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

from pydantic import Field, model_validator

from alerts.model import Finding, Severity
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.rules.spike_baseline import SpikeBaseline
from monitor.rules.windows import MAX_WINDOW
from monitor.samples import Sample

_SHARED = (
    "metric",
    "direction",
    "scale",
    "z",
    "min_rise",
    "baseline",
    "window",
    "min_points",
    "floor_window",
    "floor_points",
    "reset_on_rewind",
    "of_progress",
    "baseline_level",
)


class SpikeSpec(RuleSpec):
    kind: Literal["spike"] = "spike"
    metric: str
    mode: Literal["point", "floor"] = Field(
        default="floor", description="point: a one-step blip (info at most); floor: a raised floor"
    )
    direction: Literal["up", "down"] = "up"
    scale: Literal["log", "linear"] = Field(
        default="log", description="log (values must be > 0) or linear (for values that can be <= 0)"
    )
    z: float = Field(default=6.0, gt=0, description="robust sigmas a deviation must reach")
    min_rise: float = Field(
        default=0.05, ge=0, description="and at least this much on the scale (log: 0.05 is about 5%)"
    )
    baseline: Duration = Field(default=1800.0, gt=0, description="the period the baseline spans")
    window: int = Field(default=128, ge=4, le=MAX_WINDOW, description="at most this many baseline values")
    min_points: int = Field(
        default=8, ge=3, le=MAX_WINDOW, description="warm-up: baseline values needed before judging"
    )
    floor_window: Duration = Field(default=300.0, gt=0, description="the recent window of the floor test")
    floor_points: int = Field(
        default=3, ge=2, le=MAX_WINDOW, description="the recent window holds at least this many"
    )
    floor_steps: int | None = Field(
        default=None,
        ge=2,
        le=MAX_WINDOW,
        description="evidence in steps: the floor is also raised by this many values in a row beyond the "
        "bar (and twice the longest such run the run recovered from), before floor_window has passed",
    )
    reset_on_rewind: bool = True
    baseline_level: Literal["median", "max"] = Field(
        default="median",
        description="what a value is compared with: the baseline's median, or its worst value (max, "
        "worst meaning up for direction up): for a metric that trends, e.g. KL growing from zero",
    )
    of_progress: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="and at least this share of the run's progress: how far the baseline's median has "
        "moved from its worst since the start (0.5: half of what the run gained is given back)",
    )

    @property
    def momentary(self) -> bool:
        return self.mode == "point"

    @model_validator(mode="after")
    def _blip_is_info(self) -> SpikeSpec:
        if self.mode == "point" and self.severity is not Severity.INFO:
            raise ValueError(
                "a 'point' spike is a one-step blip a healthy run recovers from: its severity must be "
                "info (use mode: floor for what should page)"
            )
        return self


@register
class SpikeDetector(Detector[SpikeSpec]):
    kind = "spike"
    spec_model = SpikeSpec

    # fmt: off
    __slots__ = (
        "metric", "baseline", "_follower", "_rider", "_alone", "_floor_mode", "caught", "judged", "raised",
    )
    # fmt: on

    def __init__(self, rule: SpikeSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self.baseline = SpikeBaseline(rule)
        self._follower = False
        self._rider = False  # shares the baseline of rules of another floor_steps (ride_key)
        self._alone = False  # a rider whose leader's floor froze the baseline: has a copy of its own
        self._floor_mode = rule.mode == "floor"
        # a one-step spike held until an evaluation has seen it (a poll that reads the spike and the
        # steps after it must not lose it): [value, step, score, baseline, threshold]
        self.caught: list | None = None
        self.judged = False
        # while the floor is raised: [threshold, baseline (metric units), baseline resets then, raised
        # since (time), its lowest floor since (on the signed scale), raised since (step, if known)]: the
        # text says how long it has been raised as of the newest value, and a verdict after a rewind lost
        # the baseline still speaks of the level the rule fired on
        self.raised: list | None = None

    def share_key(self) -> Hashable:
        return (*self.ride_key(), self.rule.floor_steps)

    def ride_key(self) -> Hashable:
        return ("spike", *(getattr(self.rule, name) for name in _SHARED))

    def may_ride(self) -> bool:
        return not self._floor_mode

    def share_with(self, leader: Detector) -> None:
        assert isinstance(leader, SpikeDetector)
        if self._alone:  # (restored) split off its leader's baseline once its floor froze it
            return
        self.baseline = leader.baseline
        self._follower = True
        self._rider = leader.share_key() != self.share_key()
        if self._rider:  # a point rule: never tracks the floor of a leader of another floor_steps
            if self.baseline.floor_raised:
                self._split()
            return
        self.baseline.track_floor |= self._floor_mode

    def _split(self) -> None:
        """The leader's floor is raised: from now on it freezes the baseline, which this rule's own
        would not. Go on with a copy (what this rule's own baseline holds)."""
        self.baseline = self.baseline.fork(self.rule)
        self._follower = self._rider = False
        self._alone = True

    def observe(self, sample: Sample) -> None:
        b = self.baseline
        if not self._follower:
            b.observe(sample)
        elif self._rider and b.floor_raised:  # (fed after its leader: this sample raised it)
            self._split()
            b = self.baseline
        if self._floor_mode:
            self.hot = b.floor_raised
            return
        if b.is_spike:
            self._catch()
        elif self.caught is not None and self.judged:
            self.caught = None
        self.hot = self.caught is not None

    def _catch(self) -> None:
        """Hold the newest value, a spike, until an evaluation has seen it."""
        b = self.baseline
        _, step, v, y = b.latest
        med = b.median()
        self.caught = [v, step, (y - med) / b.sigma_eff(), b.raw(med), b.raw(med + b.needed())]
        self.judged = False

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        if self.hot or self._follower:
            return super().observe_many(samples, i, end)
        b = self.baseline
        floor = self._floor_mode
        k = b.observe_until(samples, i, end, not floor, floor)
        if k > i and (b.floor_raised if floor else b.is_spike):
            self.hot = True
            if not floor:
                self._catch()
            return self._stop(samples, k, end)
        return k, RAN_OUT

    def observe_shared(
        self, followers: Sequence[Detector], samples: Sequence[Sample], i: int, end: int
    ) -> int:
        members = [self, *followers]
        b = self.baseline
        if any(m.hot or m.baseline is not b for m in members):  # type: ignore[attr-defined]
            return i  # (one split off: one by one)
        floor = any(m._floor_mode for m in members)  # type: ignore[attr-defined]
        point = not all(m._floor_mode for m in members)  # type: ignore[attr-defined]
        k = b.observe_until(samples, i, end, point, floor)
        if k > i and (point and b.is_spike or floor and b.floor_raised):
            for m in members:
                if m._rider and b.floor_raised:  # type: ignore[attr-defined]
                    m._split()  # type: ignore[attr-defined]
                m.hot = b.floor_raised if m._floor_mode else b.is_spike  # type: ignore[attr-defined]
                if m.hot and not m._floor_mode:  # type: ignore[attr-defined]
                    m._catch()  # type: ignore[attr-defined]
        return k

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    # ---- figures for the dashboard ---------------------------------------------------------
    @property
    def score(self) -> float | None:
        """The newest value's spike score in robust sigmas; a score >= z is a spike."""
        return self.baseline.score

    @property
    def spikes(self) -> int:
        return self.baseline.spikes

    def ready(self, now: float) -> bool:
        return bool(self.baseline.ready)

    def stats(self) -> dict[str, float | int | None]:
        b = self.baseline
        last = b.last_spike or {}
        med = b.median() if b.ready else None
        return {
            "score": b.score,
            "floor_score": b.floor_score,
            "spikes": b.spikes,
            "last_spike_step": last.get("step"),
            "last_spike_score": last.get("score"),
            # in the metric's units, for the run page: the level it is judged against, and where it fires
            "baseline": b.raw(med) if med is not None else None,
            "threshold": b.raw(med + b.needed()) if med is not None else None,
        }

    # ---- the verdict -----------------------------------------------------------------------
    def evaluate(self, now: float) -> Finding:
        b, m = self.baseline, self.metric
        if b.latest is None:
            return Finding(False, reason=f"no {m} yet")
        _, step, v, y = b.latest
        if self._floor_mode and self.raised is not None and b.resets > self.raised[2]:
            lost = self._after_lost_baseline(v, step)
            if lost is not None:
                return lost
        if not b.ready:
            return Finding(
                False, value=v, step=step, reason=f"warming up ({len(b.base)}/{b.min_points} baseline values)"
            )
        med = b.median()
        threshold = b.raw(med + b.needed())
        base_raw = b.raw(med)
        up, down = ("above", "below") if b.sign > 0 else ("below", "above")
        if not self._floor_mode:
            score = (y - med) / b.sigma_eff()
            at = f" at step {step}" if step is not None else ""
            now_at = f"{m} {fmt_value(v)}{at}"
            base = fmt_value(base_raw)
            if self.caught is not None:
                self.judged = True
            if b.is_spike:
                reason = f"{now_at} is {score:.1f} sigma {up} its baseline {base} (one-step spike)"
            elif self.caught is not None:  # a spike earlier in the rows this evaluation is the first to see
                v0, step0, score0, base0, threshold0 = self.caught
                at0 = f" at step {step0}" if step0 is not None else ""
                reason = (
                    f"{m} {fmt_value(v0)}{at0} was {score0:.1f} sigma {up} its baseline {fmt_value(base0)} "
                    f"(one-step spike; now {fmt_value(v)})"
                )
                return Finding(
                    True, value=v0, threshold=threshold0, step=step0, reason=reason, onset_step=step0
                )
            elif score <= 0:  # on the side a spike never is: no figure that reads like an alarm
                reason = f"{now_at} is not {up} its baseline {base}: no spike"
            else:
                reason = f"{now_at} is {score:.1f} sigma {up} its baseline {base}: no spike"
            return Finding(b.is_spike, value=v, threshold=threshold, step=step, reason=reason)
        floor = b.floor if b.floor is not None else y
        if b.floor_raised and b.streak:  # the values in a row beyond the bar: the evidence, and its onset
            floor = b.streak_min
        floor_raw = b.raw(floor)
        t = b.latest[0]
        at = f" at step {step}" if step is not None else ""
        if b.floor_raised:
            was = self.raised if self.raised is not None and self.raised[2] == b.resets else None
            # the onset, kept while the floor stays raised: the first of the values in a row beyond
            # the bar, or the oldest of the recent window
            since, since_step = (b.streak_t, b.streak_step) if b.streak else (b.floor_since, None)
            if was:
                since, since_step = was[3], was[5]
            # held through values back under the bar (a dip): not evidence of the level it stays at
            dip = bool(b.calm) or floor - med < b.needed()
            least = (was[4] if was else floor) if dip else min(was[4], floor) if was else floor
            dipped = was[6] if was else None  # the lowest such dip since it fired
            if dip:
                dipped = floor if dipped is None else min(dipped, floor)
            self.raised = [threshold, base_raw, b.resets, since, least, since_step, dipped]
            age = f"; newest value {format_duration(now - t)} old" if now - t >= 60 else ""
            if b.calm:
                n = b.steps_needed()
                ends = format_duration(b.floor_window) + (f" or {int(n)} values" if n < math.inf else "")
                reason = (
                    f"{m} {fmt_value(v)}{at} is back {down} {fmt_value(threshold)} for {b.calm} values, "
                    f"{format_duration(t - b.calm_t)}, after {format_duration(b.calm_t - since)} {up} it "
                    f"(baseline {fmt_value(base_raw)}{age}): still the same incident until it stays back "
                    f"for {ends}"
                )
                return Finding(True, v, threshold, step, reason, onset=since, onset_step=since_step)
            score = (least - med) / b.sigma_eff()
            steps = f"{b.streak} steps, " if b.streak else ""
            stayed = f"stayed {up} {fmt_value(b.raw(least))}"
            if dipped is not None:
                stayed = f"been {up} {fmt_value(b.raw(least))} but for a dip to {fmt_value(b.raw(dipped))}"
            reason = (
                f"{m} has {stayed} for {steps}{format_duration(t - since)} "
                f"(baseline {fmt_value(base_raw)}, {score:.1f} sigma{age})"
            )
            value = b.raw(least) if dip else floor_raw
            return Finding(True, value, threshold, step, reason, onset=since, onset_step=since_step)
        if self.raised is not None and b.calm:  # it ends: a window, or n values in a row, back
            reason = (
                f"{m} {fmt_value(v)}{at} has been back {down} {fmt_value(threshold)} for "
                f"{format_duration(t - b.calm_t)} (baseline {fmt_value(base_raw)})"
            )
        else:
            reason = f"{m} floor {fmt_value(floor_raw)} is back near its baseline {fmt_value(base_raw)}"
        self.raised = None
        return Finding(False, value=floor_raw, threshold=threshold, step=step, reason=reason)

    def _after_lost_baseline(self, v: float, step: int | None) -> Finding | None:
        """A raised floor's verdict once a step rewind (a restart from a checkpoint) reset the baseline it
        was judged against: the newest value against the level the rule fired on, until the baseline is
        rebuilt. Back on the healthy side: it ends, saying so; still beyond it: no verdict (the alert
        holds: the loss has not come back, and a rebuilt baseline would take the raised level for normal).
        None once the new baseline judges on its own."""
        b, m = self.baseline, self.metric
        threshold, base_raw = self.raised[:2] if self.raised else (math.nan, math.nan)
        up, down = ("above", "below") if b.sign > 0 else ("below", "above")
        at = f" at step {step}" if step is not None else ""
        rebuilding = f"the run rewound and its baseline is rebuilding ({len(b.base)}/{b.min_points} values)"
        back = v < threshold if b.sign > 0 else v > threshold
        if back:
            self.raised = None
            reason = (
                f"{m} {fmt_value(v)}{at} is back {down} {fmt_value(threshold)}, the threshold it fired "
                f"{up} (baseline then {fmt_value(base_raw)}); {rebuilding}"
            )
            return Finding(False, value=v, threshold=threshold, step=step, reason=reason)
        if b.ready:
            self.raised = None
            if b.floor_raised:
                return None
            med = b.median()
            reason = (
                f"the evidence is gone: the run rewound and its baseline was rebuilt at {m} "
                f"{fmt_value(b.raw(med))}, {up} the threshold it fired {up} ({fmt_value(threshold)}); "
                f"now {fmt_value(v)}{at}"
            )
            return Finding(False, value=v, step=step, reason=reason)
        reason = f"{m} {fmt_value(v)}{at} is still {up} {fmt_value(threshold)}; {rebuilding}: no verdict yet"
        return Finding(False, unknown=True, value=v, threshold=threshold, step=step, reason=reason)
