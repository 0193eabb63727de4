"""What sources produce and the engine consumes: one observation of one run at one time.

The fields are those of the trace format (docs/trace-format.md): a recorded trace is a list of samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from alerts.text import MAX_TEXT, bounded

# Feeds that are not metric names: the step counter, the run's state, any sample at all. Rules say which
# feeds they need (Detector.feeds), sources which they deliver (SourceTarget.promises).
STEP, STATE, ANY = "@step", "@state", "@any"

# A custom alert a job sent (``herowatch emit alert``, as W&B's ``wandb.alert``): the sample that carries
# it also carries this metric (its level: ALERT_LEVELS' value, 0 for a resolve), by which it reaches the
# ``job_alert`` rules as any metric reaches its rules.
ALERT_METRIC = "job/alert"
ALERT_LEVELS = {"info": 1.0, "warn": 2.0, "error": 3.0}
MAX_ALERT_TITLE = 64  # as W&B's run.alert: "must be less than 64 characters"
MAX_ALERT_TEXT = 2000
MAX_ALERT_WAIT = 7 * 86400.0
DEFAULT_ALERT_WAIT = 60.0  # W&B's default wait_duration: one minute


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
class JobAlert:
    """A custom alert the job itself sent: ``title`` names it (a repeat of a title is the same alert),
    ``level`` is info, warn or error, a repeat of the title within ``wait`` seconds of the last one taken
    is dropped (W&B's ``wait_duration``), and ``resolved`` says the job declared it over."""

    title: str
    text: str = ""
    level: str = "info"
    wait: float = DEFAULT_ALERT_WAIT
    resolved: bool = False

    @classmethod
    def clean(cls, value: object) -> JobAlert | None:
        """The alert as herowatch may trust it (bounded text, a known level), or None."""
        if not isinstance(value, JobAlert) or not isinstance(value.title, str) or not value.title.strip():
            return None
        level = str(value.level).strip().lower()
        wait = as_number(value.wait)
        if level not in ALERT_LEVELS or wait is None or not math.isfinite(wait):
            return None
        text = value.text if isinstance(value.text, str) else ""
        return cls(
            value.title.strip()[:MAX_ALERT_TITLE],
            text[:MAX_ALERT_TEXT],
            level,
            min(max(wait, 0.0), MAX_ALERT_WAIT),
            value.resolved is True,
        )

    def metric(self) -> float:
        """The value of ``ALERT_METRIC`` on the sample that carries it."""
        return 0.0 if self.resolved else ALERT_LEVELS[self.level]


def alert_to_dict(alert: JobAlert) -> dict[str, object]:
    """An alert as the trace format and the push spool write it (``alert_from_dict`` reads it back)."""
    out: dict[str, object] = {"title": alert.title, "level": alert.level}
    if alert.text:
        out["text"] = alert.text
    if alert.wait != DEFAULT_ALERT_WAIT:
        out["wait"] = alert.wait
    if alert.resolved:
        out["resolved"] = True
    return out


def alert_from_dict(raw: object) -> JobAlert:
    """The ``alert`` object of a trace line; ValueError says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object with title, text, level, got {type(raw).__name__}")
    title, text, level = raw.get("title"), raw.get("text", ""), raw.get("level", "info")
    wait, resolved = raw.get("wait", DEFAULT_ALERT_WAIT), raw.get("resolved", False)
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_ALERT_TITLE:
        raise ValueError(f"title: expected text of 1 to {MAX_ALERT_TITLE} characters")
    if not isinstance(text, str) or len(text) > MAX_ALERT_TEXT:
        raise ValueError(f"text: expected text of at most {MAX_ALERT_TEXT} characters")
    if not isinstance(level, str) or level.lower() not in ALERT_LEVELS:
        raise ValueError(f"level: expected one of {', '.join(ALERT_LEVELS)}, got {level!r}")
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_ALERT_WAIT:
        raise ValueError(f"wait: expected seconds from 0 to {MAX_ALERT_WAIT:.0f}")
    if not isinstance(resolved, bool):
        raise ValueError("resolved: expected true or false")
    return JobAlert(title.strip(), text, level.lower(), float(wait), resolved)


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
    alert: JobAlert | None = None  # a custom alert the job sent (with the metric ALERT_METRIC)


# Labels a source gives that say how a run is now, not which run it is (a Slurm job's state and reason,
# the nodes a requeue moved it to, the sources a joined run has): on its page and in its alerts' text,
# never in an alert's identity (a job requeued onto other nodes is the same incident, one page).
RUN_FACTS = frozenset({"slurm_state", "slurm_reason", "hosts", "sources"})


def scheduler_says(labels: Mapping[str, str]) -> str:
    """The scheduler's own words on a run's state ("Slurm says FAILED: NonZeroExitCode"), or ""."""
    state = str(labels.get("slurm_state") or "").strip()
    if not state:
        return ""
    reason = str(labels.get("slurm_reason") or "").strip()
    return f"Slurm says {state}" + (f": {reason}" if reason and reason != "None" else "")


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
    heartbeat = info.heartbeat_at
    if heartbeat is not None and storable_time(heartbeat) is None:
        info = replace(info, heartbeat_at=None)  # a time storage cannot hold is no heartbeat
    if info.state is None or type(info.state) is RunState:
        return info
    return replace(info, state=RunState.of(info.state))


def is_finite(value: float | None) -> bool:
    return value is not None and not (math.isnan(value) or math.isinf(value))


MAX_NAME = 200  # run ids and metric names, as stored
MAX_METRICS = 2000  # metrics per sample
# What storage holds: steps and counters are signed 64-bit integers (BIGINT on SQLite and PostgreSQL);
# times are epoch seconds, finite, from 1970 to the end of year 9999 (what a datetime can show).
MAX_STEP = 2**63 - 1
MIN_STEP = -(2**63)
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z


def storable_step(value: object) -> int | None:
    """A step as storage holds it: a whole number within signed 64 bits, else None."""
    s = as_number(value)
    if s is None or not math.isfinite(s) or s != int(s):
        return None
    step = value if type(value) is int else int(s)
    return step if MIN_STEP <= step <= MAX_STEP else None


def storable_time(value: object) -> float | None:
    """Epoch seconds as storage holds them (finite, from 0 to :data:`MAX_TIME`), else None."""
    t = as_number(value)
    return t if t is not None and 0.0 <= t <= MAX_TIME else None


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
    t = storable_time(sample.t)
    if t is None or not isinstance(sample.run, str) or not sample.run:
        return None
    if len(sample.run) > MAX_NAME:
        return None
    step = sample.step
    if step is not None:
        step = storable_step(step)  # beyond 64 bits (2**63, 1e30): no step, the rest of the sample kept
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
    alert = sample.alert
    if alert is not None:
        alert = JobAlert.clean(alert)
        if alert is not None:
            metrics[ALERT_METRIC] = alert.metric()  # the rules' dispatch key (see ALERT_METRIC)
        same = False
    source_error = sample.source_error
    if source_error is not None and (type(source_error) is not str or len(source_error) > MAX_TEXT):
        source_error, same = bounded(source_error), False
    if same and t == sample.t and step == sample.step and state is sample.state:
        return sample  # already clean: no copy on the hot path
    return Sample(t, sample.run, step, metrics, state, sample.source, sample.labels, source_error, alert)
