"""``stall``'s settings (``StallSpec``): what a config may set on a stall rule, with its defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from monitor.durations import Duration
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAX_WINDOW


class StallSpec(RuleSpec):
    kind: Literal["stall"] = "stall"
    floor: Duration = Field(
        default=900.0, description="until the schedule is known: never fire before this long without a step"
    )
    k: float = Field(default=10.0, gt=0, description="limit at least k x recent p99 step interval")
    hang_after: Duration = Field(
        default=300.0,
        gt=0,
        description="once the schedule is known: a pause at an ordinary step fires after this long",
    )
    steady_after: Duration = Field(
        default=7200.0,
        gt=0,
        description="a run that steps this long with no long pause has a known schedule: no pauses",
    )
    steady_steps: int = Field(
        default=2500,
        ge=1,
        description="... and this many steps (saves every N steps, N up to this, would have shown)",
    )
    habit_factor: float = Field(
        default=2.0, gt=0, description="once known: a pause at a habitual step may last this x its usual"
    )
    window: int = Field(
        default=256, ge=8, le=MAX_WINDOW, description="recent step intervals kept for the p99"
    )
    startup: Duration = Field(default=2700.0, description="allowance from a (re)start to the first step")
    restore_factor: float = Field(
        default=2.0, gt=0, description="after one restore: allowance = this x it (the extra shrinks as 1/n)"
    )
    pause_factor: float = Field(
        default=1.5, gt=0, description="until known: allowance = this x the longest recurring pause"
    )
    max_pause: Duration = Field(default=3600.0, description="cap on the learned pause allowance")
    restart_counter: str | None = Field(
        default="restarts_total", description="a counter whose increase means the process restarted"
    )
