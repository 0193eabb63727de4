"""The ``slowdown`` rule's verdict (monitor/rules/slowdown.py): what the detector's CUSUM says now, with
the slowdown's size (the mean excess since the CUSUM left 0) and when it began, against the step time
expected (the run's cycle's value at this point of it, or its level)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from alerts.model import Finding
from monitor.durations import format_duration
from monitor.rules.base import fmt_value

if TYPE_CHECKING:
    from monitor.rules.slowdown import SlowdownDetector


def verdict(d: SlowdownDetector, now: float) -> Finding:
    what = d.rule.metric or "step time"
    if d.mu is None:
        reason = f"{what}: learning the run's baseline ({len(d.base)}/{d._need} buckets)"
        return Finding(False, unknown=True, reason=reason, step=d.last_step)
    if d.rewarm is not None:
        reason = f"{what}: restarted, checking the new steps against the baseline before it"
        return Finding(False, unknown=True, reason=reason, step=d.last_step)
    excess, weight, cusum = *d.excess, d.s
    if d.peek is not None:  # the open bucket, judged for its evidence so far
        cusum, excess, weight = d.peek[0], excess + d.peek[1], weight + d.peek[2]
    size = math.exp(excess / weight) - 1 if weight else 0.0
    step = d.last_step
    base = math.exp(d._sign * d._expect(d.pos_last))
    now_level = base * (1 + size) ** d._sign
    if not d.firing:
        return Finding(
            False,
            value=size,
            threshold=d.rule.shift,
            step=step,
            reason=f"{what} near its baseline {fmt_value(base)} (CUSUM {cusum:.3f} of {d.threshold():.3f})",
        )
    slower = f"+{size * 100:.1f}%" if d._sign > 0 else f"-{(1 - 1 / (1 + size)) * 100:.1f}%"
    began_t, began_step = d.began
    since = f"step {int(began_step)}, " if began_step is not None else ""
    reason = (
        f"{what} {slower} ({fmt_value(now_level)} against {fmt_value(base)}) since {since}"
        f"{format_duration(max(0.0, now - began_t))} ago"
    )
    return Finding(
        True,
        value=size,
        threshold=d.rule.shift,
        step=step,
        reason=reason,
        onset=began_t,  # where the CUSUM began to climb
        onset_step=int(began_step) if began_step is not None else None,
    )
