"""When a step happened, by herowatch's clock, and ``clock_skew``, the alert for a trainer whose clock
(or log pipeline) cannot be trusted.

A history row carries the trainer host's own timestamp. Measured against herowatch's clock, a host
whose clock runs an hour behind would look stalled for an hour (a false page), one that runs ahead
would hide a hang for as long. So a step's time is when herowatch first saw it, bounded by the row's
own timestamp: a row first seen in this poll was logged after the previous poll at the earliest
(unless its own timestamp says later) and before now at the latest::

    t = min(seen_at, max(row_t, previous_poll))

A backlog read after a gap (herowatch restarted, a source outage) keeps its rows' own times, which
fall between the two polls. Separately, the newest row's lag (seen_at - row_t) is watched: a source
whose timestamps run ahead of herowatch's clock, or lag it by more than ``bound``, is a warning.
"""

from __future__ import annotations

import functools
import statistics
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from alerts.model import Finding, Severity
from monitor.durations import format_duration
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample

AHEAD_TOLERANCE = 60.0  # clocks synced by NTP agree to far better than this
LAGS_KEPT = 5  # polls whose newest-row lag is remembered; the median decides


class ClockSkewSpec(RuleSpec):
    kind: Literal["clock_skew"] = "clock_skew"
    own: ClassVar[bool] = True


@functools.cache
def skew_rule(bound: float) -> ClockSkewSpec:
    return ClockSkewSpec(
        name="clock_skew",
        kind="clock_skew",
        severity=Severity.WARNING,
        for_=0.0,
        labels={"category": "herowatch"},
        annotations={
            "summary": "{run}: {reason}",
            "description": "Step ages are measured from when herowatch first saw each step, so stall "
            "alerts stay right; fix the trainer host's clock (NTP) or the logging delay.",
        },
    )


@dataclass(slots=True)
class _Source:
    previous_poll: float | None = None
    lags: array = field(default_factory=lambda: array("d"))  # the last LAGS_KEPT (8 bytes each)


@dataclass
class StepTimes:
    bound: float = 600.0
    _seen: dict[str, dict[str, _Source]] = field(default_factory=dict)  # run -> source -> what was seen

    def correct(self, samples: Iterable[Sample], seen_at: float) -> list[Sample]:
        """The samples of one poll with the times of their steps made trustworthy (see the module)."""
        out: list[Sample] = []
        newest: dict[tuple[str, str], float] = {}
        for s in samples:
            if s.step is None or s.source is None:
                out.append(s)
                continue
            key = (s.run, s.source)
            if s.t > newest.get(key, -1e300):
                newest[key] = s.t
            src = self._seen.get(s.run, {}).get(s.source)
            lo = src.previous_poll if src is not None and src.previous_poll is not None else -1e300
            t = min(seen_at, max(s.t, lo))
            out.append(s if t == s.t else replace(s, t=t))
        for (run, source), t in newest.items():
            src = self._seen.get(run, {}).get(source)
            if src is not None and src.previous_poll is not None:  # a first read may be old history
                src.lags.append(seen_at - t)
                if len(src.lags) > LAGS_KEPT:
                    del src.lags[0]
        for run, source in {(s.run, s.source) for s in out if s.source is not None}:
            self._seen.setdefault(run, {}).setdefault(source, _Source()).previous_poll = seen_at
        return out

    def finding(self, run: str) -> Finding:
        lags = [lag for src in self._seen.get(run, {}).values() for lag in src.lags]
        if len(lags) < 3:
            return Finding(False, reason="not enough polls to judge the clock")
        lag = statistics.median(lags)
        if lag < -AHEAD_TOLERANCE:
            return Finding(
                True,
                value=lag,
                threshold=-AHEAD_TOLERANCE,
                reason=f"the run's timestamps are {format_duration(-lag)} ahead of herowatch's clock",
            )
        if lag > self.bound:
            return Finding(
                True,
                value=lag,
                threshold=self.bound,
                reason=f"new rows arrive {format_duration(lag)} after their own timestamps "
                f"(bound {format_duration(self.bound)}): a slow clock or a logging delay",
            )
        return Finding(False, value=lag, reason="timestamps agree with herowatch's clock")

    def forget(self, run: str) -> None:
        self._seen.pop(run, None)
