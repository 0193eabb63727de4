"""The ``slowdown`` rule's verdict (monitor/rules/slowdown.py): what the detector's CUSUM says now, with
the slowdown's size (the mean excess since the CUSUM left 0) and when it began, against the step time
expected (the run's cycle's value at this point of it, or its level)."""

from __future__ import annotations

import math

from alerts.model import Finding
from monitor.durations import format_duration
from monitor.rules.base import fmt_value


class SlowdownVerdict:
    """A part of ``SlowdownDetector`` (which inherits it)."""

    __slots__ = ()

    def evaluate(self, now: float) -> Finding:
        what = self.rule.metric or "step time"
        if self.mu is None:
            reason = f"{what}: learning the run's baseline ({len(self.base)}/{self._need} buckets)"
            return Finding(False, unknown=True, reason=reason, step=self.last_step)
        if self.rewarm is not None:
            reason = f"{what}: restarted, checking the new steps against the baseline before it"
            return Finding(False, unknown=True, reason=reason, step=self.last_step)
        excess, weight, cusum = *self.excess, self.s
        if self.peek is not None:  # the open bucket, judged for its evidence so far
            cusum, excess, weight = self.peek[0], excess + self.peek[1], weight + self.peek[2]
        if not weight and self.level.excess[1]:  # fired by the level CUSUM beside the cycle's
            excess, weight = self.level.excess
        size = math.exp(excess / weight) - 1 if weight else 0.0
        step = self.last_step
        base = math.exp(self._sign * self._expect(self.pos_last))
        now_level = base * (1 + size) ** self._sign
        if not self.firing:
            return Finding(
                False,
                value=size,
                threshold=self.rule.shift,
                step=step,
                reason=f"{what} near its baseline {fmt_value(base)} "
                f"(CUSUM {cusum:.3f} of {self.threshold():.3f})",
            )
        slower = f"+{size * 100:.1f}%" if self._sign > 0 else f"-{(1 - 1 / (1 + size)) * 100:.1f}%"
        began_t, began_step = self.began
        since = f"step {int(began_step)}, " if began_step is not None else ""
        reason = (
            f"{what} {slower} ({fmt_value(now_level)} against {fmt_value(base)}) since {since}"
            f"{format_duration(max(0.0, now - began_t))} ago"
        )
        return Finding(
            True,
            value=size,
            threshold=self.rule.shift,
            step=step,
            reason=reason,
            onset=began_t,  # where the CUSUM began to climb
            onset_step=int(began_step) if began_step is not None else None,
        )
