"""What sources produce and the engine consumes: one observation of one run at one time.

The fields are those of the trace format (docs/trace-format.md): a recorded trace is a list of samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

# Feeds that are not metric names: the step counter, the run's state, any sample at all. Rules say which
# feeds they need (Detector.feeds), sources which they deliver (SourceTarget.promises).
STEP, STATE, ANY = "@step", "@state", "@any"


class RunState(StrEnum):
    """A run's state as herowatch names it, whatever its source calls it (W&B's states, MLflow's
    statuses, what a pushed run says, the simulator's). The values are the strings stored in the
    database, written in traces and shown by the API. A source's word is turned into one once, where
    its data enters herowatch (``clean``, ``RunState.of``)."""

    RUNNING = "running"
    PENDING = "pending"  # queued, not started yet (W&B pending, MLflow SCHEDULED)
    FINISHED = "finished"  # exited cleanly
    CRASHED = "crashed"  # the tracker lost its heartbeats (W&B); may come back to running
    FAILED = "failed"  # exited with an error
    KILLED = "killed"  # stopped before it could finish
    PREEMPTING = "preempting"  # W&B: being preempted
    PREEMPTED = "preempted"
    DELETED = "deleted"  # no longer at its source (reported once by W&B and MLflow)
    UNKNOWN = "unknown"  # the source said nothing herowatch knows: no news

    @classmethod
    def of(cls, word: object) -> RunState | None:
        """A source's word for a run's state (any case, padded or not) as a RunState; None for no
        word at all, ``UNKNOWN`` for a word herowatch does not know."""
        if type(word) is cls:
            return word
        if word is None:
            return None
        text = str(word).strip().lower()
        if not text:
            return None
        return _BY_WORD.get(text, cls.UNKNOWN)


_BY_WORD: dict[str, RunState] = {s.value: s for s in RunState}

# The states' groups, each defined here only.
# The run is over, one way or another: its inputs are not expected any more (coverage, source health).
TERMINAL_STATES = frozenset({RunState.CRASHED, RunState.FAILED, RunState.KILLED, RunState.FINISHED})
# Down, counted as downtime until it runs again (goodput; the status page's "critical").
DOWN_STATES = frozenset(
    {RunState.CRASHED, RunState.FAILED, RunState.KILLED, RunState.PREEMPTED, RunState.PREEMPTING}
)
# Over for good and healthy: finished, or gone from its source (goodput; the status page's "ended").
ENDED_STATES = frozenset({RunState.FINISHED, RunState.DELETED})
# Running as far as anyone knows: detectors that time a run's progress keep watching. A state
# reported as unknown is no news.
RUNNING_OR_UNKNOWN = frozenset({None, RunState.RUNNING, RunState.UNKNOWN})

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
    state: RunState | None = None  # a source's word until ``clean``: a RunState from there on
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
    state: RunState | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    heartbeat_at: float | None = None
    name: str | None = None
    project: str | None = None


def clean_info(info: RunInfo) -> RunInfo | None:
    """What a source says of a run as the engine may trust it: a bounded id and a ``RunState`` or
    none. None: no usable id. Applied once, with ``clean``, in ``PollResult.validated``."""
    if not isinstance(info.run, str) or not 0 < len(info.run) <= MAX_NAME:
        return None
    if info.state is None or type(info.state) is RunState:
        return info
    return replace(info, state=RunState.of(info.state))


def is_finite(value: float | None) -> bool:
    return value is not None and not (math.isnan(value) or math.isinf(value))


MAX_NAME = 200  # run ids and metric names, as stored
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
    metric values under bounded names, a ``RunState`` or none. None: nothing usable in it.

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
    if state is not None and type(state) is not RunState:
        state = RunState.of(state)
    if same and t == sample.t and step == sample.step and state is sample.state:
        return sample  # already clean: no copy on the hot path
    return Sample(t, sample.run, step, metrics, state, sample.source, sample.labels, sample.source_error)
