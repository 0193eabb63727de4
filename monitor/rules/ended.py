"""``ended``: the run ended before it should have: crashed, failed or killed, or finished before its
``target_step`` (a clean exit can hide a failure: a data loader that ran dry, a caught exception).

- ``failed`` and ``killed`` are final: the rule fires at once.
- ``crashed`` may flicker: W&B reports it when the heartbeats stop, and a run whose network hiccups
  comes back to running. It must last ``grace`` unless a cause is known (below).
- ``finished`` counts only below ``target_step`` (the watch's ``target_step`` setting fills it in),
  judged after ``grace`` too (the last rows may come after the state); a run with no target that
  finishes is healthy, however short.
- A state the rule does not know (``unknown``, ``pending``) never fires by itself, and a resume
  clears everything.
- The alert says the cause when a source has it: an increase of ``oom_counter`` within
  ``cause_window`` of the end (an OOM kill), the exit code (``exit_code``: a metric some launchers
  and exporters report; above 128 it is a signal, 137 = SIGKILL, the OOM killer's), and what the
  tracker's state means. With a target it says how far the run got.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, last_step, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import keep_last
from monitor.samples import RunState, Sample

OOMS_KEPT = 8  # recent OOM kills remembered
FINAL = frozenset({RunState.FAILED, RunState.KILLED})  # no grace: these do not flicker
MEANING = {
    RunState.CRASHED: "the tracker lost its heartbeats",
    RunState.FAILED: "it exited with an error",
    RunState.KILLED: "it was stopped before it could finish",
    RunState.FINISHED: "it exited cleanly",
}
SIGNALS = {6: "SIGABRT", 9: "SIGKILL, often the OOM killer", 11: "SIGSEGV", 15: "SIGTERM"}


class EndedSpec(RuleSpec):
    kind: Literal["ended"] = "ended"
    states: list[Literal["crashed", "failed", "killed", "finished"]] = Field(
        default_factory=lambda: ["crashed", "failed", "killed"],
        min_length=1,
        description="end states that fire (finished: only before target_step)",
    )
    target_step: int | None = Field(default=None, ge=1, description="the run's last step (the watch's)")
    grace: Duration = Field(default=300.0, description="crashed/finished must last this long (no cause)")
    cause_window: Duration = Field(default=600.0, description="an OOM kill this close to the end caused it")
    oom_counter: str | None = Field(default="oom_kills_total", description="a counter of OOM kills")
    exit_code: str | None = Field(default="exit_code", description="a metric with the process's exit code")


class EndSignals:
    """A run's state, step and the causes sources report. Shared by the run's ``ended`` rules that
    read the same metrics (share_key)."""

    __slots__ = ("state", "since", "step", "oom", "ooms", "code", "news", "oom_counter", "exit_code")

    def __init__(self, oom_counter: str | None, exit_code: str | None) -> None:
        self.oom_counter, self.exit_code = oom_counter, exit_code
        self.state: RunState | None = None
        self.since: float | None = None  # when the current state was first reported
        self.step: int | None = None
        self.oom: float | None = None  # the counter's latest value
        self.ooms: list[list[float]] = []  # [t, increase] of recent OOM kills, the last OOMS_KEPT
        self.code: list[float] | None = None  # [t, exit code] of the latest exit code
        self.news = False  # the latest sample changed the state or a cause

    def observe(self, sample: Sample) -> None:
        self.news = False
        if sample.step is not None:
            self.step = sample.step
        metrics = sample.metrics
        if metrics:
            name = self.oom_counter
            if name is not None and name in metrics and not metrics[name] - metrics[name]:
                v = metrics[name]
                if self.oom is not None and v > self.oom:
                    self.ooms.append([sample.t, v - self.oom])
                    keep_last(self.ooms, OOMS_KEPT)
                    self.news = True
                self.oom = v
            name = self.exit_code
            if name is not None and name in metrics and not metrics[name] - metrics[name]:
                self.code = [sample.t, metrics[name]]
                self.news = True
        st = sample.state
        if st is not None and st != self.state:
            self.state, self.since, self.news = st, sample.t, True
            if st == RunState.RUNNING:
                self.code = None  # a resume: an earlier exit is history


@register
class EndedDetector(Detector[EndedSpec]):
    kind = "ended"
    about_the_end = True
    spec_model = EndedSpec
    clocked = True

    __slots__ = ("_watch", "signals", "_follower")

    def __init__(self, rule: EndedSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.wake_at = math.inf
        self._watch = frozenset(rule.states)
        self.signals = EndSignals(rule.oom_counter, rule.exit_code)
        self._follower = False

    @property
    def off(self) -> bool:
        """Watching only ``finished`` with no target step: it can never fire (and needs no sample)."""
        return self._watch == {RunState.FINISHED} and self.rule.target_step is None

    def inputs(self) -> frozenset[str] | None:
        return frozenset() if self.off else None  # states, steps, and the cause metrics

    def share_key(self) -> Hashable | None:
        return None if self.off else ("ended", self.rule.oom_counter, self.rule.exit_code)

    def share_with(self, leader: Detector) -> None:
        assert isinstance(leader, EndedDetector)
        self.signals = leader.signals
        self._follower = True

    @property
    def state(self) -> RunState | None:
        return self.signals.state

    @property
    def since(self) -> float | None:
        return self.signals.since

    @property
    def step(self) -> int | None:
        return self.signals.step

    def observe(self, sample: Sample) -> None:
        sig = self.signals
        if not self._follower:
            sig.observe(sample)
        if sig.news or (self.hot and sample.step is not None):
            self._arm()  # (a finished run's last rows may still bring it to its target)

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        # a segment's samples carry no state: without the cause metrics they bring nothing but steps
        sig = self.signals
        names = samples[i].metrics if i < end else ()
        if (
            self.hot
            or self._follower
            or i >= end
            or self.wake_at <= samples[end - 1].t
            or (sig.oom_counter is not None and sig.oom_counter in names)
            or (sig.exit_code is not None and sig.exit_code in names)
        ):
            return super().observe_many(samples, i, end)
        sig.news = False
        step = last_step(samples, i, end)
        if step is not None:
            sig.step = step
        return end, RAN_OUT

    def _arm(self) -> None:
        """``hot`` when it holds now; ``wake_at`` when the grace of a crash runs out."""
        st = self.state
        self.hot, self.wake_at = False, math.inf
        if st not in self._watch or (st == RunState.FINISHED and not self._short()):
            return
        if st in FINAL or self._cause():
            self.hot = True
        else:
            self.wake_at = self.since + self.rule.grace

    def _short(self) -> bool:
        target = self.rule.target_step
        return target is not None and (self.step is None or self.step < target)

    def _cause(self) -> str:
        """What a source says about why the run ended, in words ("" if nothing)."""
        parts, sig = [], self.signals
        lo = self.since - self.rule.cause_window
        kills = sum(inc for t, inc in sig.ooms if t >= lo)
        if kills:
            t = max(t for t, _ in sig.ooms if t >= lo)
            when = f"{format_duration(self.since - t)} before" if t <= self.since else "just after"
            parts.append(f"an OOM kill {when} ({self.rule.oom_counter} +{fmt_value(kills)})")
        if sig.code is not None and sig.code[0] >= lo and sig.code[1] != 0:
            code = int(sig.code[1])
            signal = SIGNALS.get(code - 128, f"signal {code - 128}") if code > 128 else ""
            parts.append(f"exit code {code}" + (f" ({signal})" if signal else ""))
        return "; ".join(parts)

    def evaluate(self, now: float) -> Finding:
        st, step, r = self.state, self.step, self.rule
        if self.off:
            return Finding(False, reason="no target step for this run")
        if st is None:
            return Finding(False, unknown=True, reason="state not reported yet")
        at = f" at step {step}" if step is not None else ""
        if r.target_step is not None:
            done = f"{100 * step / r.target_step:.0f}%" if step is not None else "no step"
            at += f" of {r.target_step} ({done})"
        if st not in self._watch or (st == RunState.FINISHED and not self._short()):
            return Finding(False, step=step, reason=f"run is {st}{at}")
        cause = self._cause()
        waited = now - self.since
        active = st in FINAL or bool(cause) or waited >= r.grace
        if not active:
            self.wake_at = self.since + r.grace
            grace = f"(grace {format_duration(r.grace)})"
            return Finding(False, step=step, reason=f"run is {st}{at} for {format_duration(waited)} {grace}")
        early = " before its target step" if r.target_step is not None and self._short() else ""
        reason = f"run {st}{early}{at}: {MEANING.get(st, st)}"
        if cause:
            reason += f"; cause: {cause}"
        value = float(step) if step is not None else None
        return Finding(
            True,
            value=value,
            threshold=r.target_step,
            step=step,
            reason=reason,
            onset=self.since,
            onset_step=step,
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample (a resume) can end it
