"""The report's display words, shared by the Markdown, the HTML and the Slack summary."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from alerts.durations import format_duration

if TYPE_CHECKING:
    from monitor.reports.model import Incident, RunReport

BUCKET_WORDS = {  # Google's ml-goodput-measurement badput names where they fit (docs/reports.md)
    "productive": "goodput",
    "data_loading": "data loading",
    "checkpoint": "checkpoint saves",
    "evaluation": "evaluation",
    "paused": "other pauses",
    "startup": "start-up & restore",
    "stalled": "hung",
    "restarting": "restarting",
    "down": "down",
    "rework": "redone steps",
    "source_blind": "source blind",
}
BLIND_NOTE = (
    "How long herowatch's own source_unavailable (the run's source could not be read) and watching_blind "
    "(an input a rule needs never came) alerts were firing. Of the time a run's own source could not be "
    "read, what no step accounts for is the goodput table's source blind."
)
COLORS = {
    "productive": "#2ca02c",
    "data_loading": "#bcbd22",
    "checkpoint": "#17becf",
    "evaluation": "#1f77b4",
    "paused": "#c7c7c7",
    "startup": "#ffbb78",
    "stalled": "#d62728",
    "restarting": "#ff7f0e",
    "down": "#7f7f7f",
    "rework": "#9467bd",
    "source_blind": "#393b79",
    "restart": "#ff7f0e",
    "stall": "#d62728",
}


def hours(h: float | None) -> str:
    if h is None or not math.isfinite(h):
        return "—"
    if abs(h) >= 100:
        return f"{h:,.0f} h"
    return f"{h:.1f} h" if abs(h) >= 1 else f"{h * 60:.0f} min"


def gpu_hours(h: float | None) -> str:
    return "—" if h is None else f"{h:,.0f} GPU·h"


def pct(r: float | None) -> str:
    return "—" if r is None else f"{r * 100:.1f}%"


def before(run: RunReport) -> str:
    """The run's goodput in the period before, then in this one, and the change: "94.2% → 92.7%
    (-1.5 pts)". When the period before watched it for fewer hours than this one, says how few ("8.5%
    of only 55 min watched → 64.2%": a run that began late in it, not a collapse)."""
    if run.previous_goodput is None or run.previous is None:
        return "— (not watched)"
    watched = run.previous.total()
    then = pct(run.previous_goodput)
    if watched < 0.9 * run.watched_hours:
        then += f" of only {hours(watched)} watched"
    return f"{then} → {pct(run.goodput)}{delta(run.goodput, run.previous_goodput)}"


BEFORE_HEADER = "goodput: period before → this one"


def before_note(start: float, end: float, tz: str) -> str:
    return (
        f"{BEFORE_HEADER}: each run's goodput (productive ÷ watched, source blind left out) in the period "
        "before, "
        f"{when(start, tz)} to {when(end, tz)}, then in this period, and the change in percentage points."
    )


def in_all(inc: Incident) -> str:
    """For an incident across the period's edge, what it lost in all (its cost counts only the part
    inside the period): " of 4.5 h in all"."""
    return "" if inc.whole_lost_hours is None else f" of {hours(inc.whole_lost_hours)} in all"


def culprit(text: str | None) -> str:
    """What a hang's stacks named, after the incident's other words: "; hung in read_chunk (...)"."""
    return f"; {text}" if text else ""


def dur(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return format_duration(round(seconds / 60) * 60 if seconds >= 60 else round(seconds), 2)


def when(t: float | None, tz: str) -> str:
    if t is None:
        return "—"
    return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%a %d %b %H:%M")


def delta(now: float | None, before: float | None) -> str:
    """The change of a ratio against the period before, in percentage points."""
    if now is None or before is None:
        return ""
    d = (now - before) * 100
    return f" ({'+' if d >= 0 else ''}{d:.1f} pts)"
