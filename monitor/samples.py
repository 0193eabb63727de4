"""What sources produce and the engine consumes: one observation of one run at one time.

The fields are those of the trace format (docs/trace-format.md): a recorded trace is a list of samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# Feeds that are not metric names: the step counter, the run's state, any sample at all. Rules say which
# feeds they need (Detector.feeds), sources which they deliver (SourceTarget.promises).
STEP, STATE, ANY = "@step", "@state", "@any"

TERMINAL_STATES = frozenset({"crashed", "failed", "killed", "finished"})

# How non-finite numbers are spelled where JSON cannot hold them (W&B history, trace files).
NON_FINITE_WORDS = {
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-inf": -math.inf,
    "-infinity": -math.inf,
}


@dataclass(frozen=True, slots=True)
class Sample:
    t: float  # epoch seconds
    run: str
    step: int | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    state: str | None = None
    source: str | None = None
    labels: Mapping[str, str] | None = None
    source_error: str | None = None


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What a source knows of a run beyond its samples: for discovery and display. ``run`` is the
    source-qualified id (monitor.run_ids), ``name`` the run's own id at its source (what a Prometheus
    template substitutes for ``{run}``), ``project`` the scope that name is unique in."""

    run: str
    source: str
    display_name: str | None = None
    state: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    heartbeat_at: float | None = None
    name: str | None = None
    project: str | None = None


def is_finite(value: float | None) -> bool:
    return value is not None and not (math.isnan(value) or math.isinf(value))


MAX_NAME = 200  # run ids and metric names, as stored
MAX_STATE = 32
MAX_METRICS = 2000  # metrics per sample


def as_number(value: object) -> float | None:
    """A metric value as a float: numbers (bools as 0/1), NaN and infinities (also spelled as text);
    anything else (text, media, nested data) is None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return NON_FINITE_WORDS.get(value.strip().lower())
    return None


def clean(sample: Sample) -> Sample | None:
    """The sample as the engine may trust it: a finite time, a whole step or none, float
    metric values under bounded names, a short lower-case state. None: nothing usable in it.

    Applied once, where samples enter herowatch (``PollResult.validated``); everything inside trusts it."""
    t = as_number(sample.t)
    if t is None or not math.isfinite(t) or not isinstance(sample.run, str) or not sample.run:
        return None
    if len(sample.run) > MAX_NAME:
        return None
    step = sample.step
    if step is not None:
        s = as_number(step)
        step = int(s) if s is not None and math.isfinite(s) and s == int(s) else None
    metrics: dict[str, float] = {}
    raw = sample.metrics if isinstance(sample.metrics, Mapping) else {}
    same = type(raw) is dict
    for name, value in raw.items():
        if len(metrics) >= MAX_METRICS:
            same = False
            break
        if type(value) is float and type(name) is str and 0 < len(name) <= MAX_NAME:
            metrics[name] = value
            continue
        same = False
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            continue
        number = as_number(value)
        if number is not None:
            metrics[name] = number
    state = sample.state
    if state is not None:
        state = str(state).strip().lower()[:MAX_STATE] or None
    if same and t == sample.t and step == sample.step and state == sample.state:
        return sample  # already clean: no copy on the hot path
    return Sample(t, sample.run, step, metrics, state, sample.source, sample.labels, sample.source_error)
