"""The one interface every source implements."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from alerts.text import bounded
from monitor.fleet.frame import FleetFrame, clean_frame
from monitor.run_ids import MAX_ID
from monitor.samples import MAX_NAME, RunInfo, Sample, clean, clean_info

log = logging.getLogger(__name__)
MAX_DISPLAY = 300  # a run's display name, as stored
MAX_LABELS = 100  # labels of a run a source describes, as stored
MAX_LABEL = 1000  # a label's value, as stored

Cursor = dict[str, Any]  # JSON-serialisable, per run; stored between polls and across restarts


@dataclass(frozen=True)
class Target:
    """One watch entry as a source sees it: the watch name, its source-specific settings, its labels."""

    watch: str
    config: Any
    labels: Mapping[str, str] = field(default_factory=dict)
    # Runs this watch already knows (found by another source of the same watch, or earlier polls),
    # with their labels: a Prometheus target substitutes them into its queries.
    known_runs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Run id -> the run's own id at the source that found it (its W&B id): what a Prometheus target
    # substitutes for ``{run}``, never the source-qualified id (monitor.run_ids).
    names: Mapping[str, str] = field(default_factory=dict)

    def name_of(self, run: str) -> str:
        return self.names.get(run, run)


@dataclass(frozen=True)
class Throttle:
    """A poll that could not read every run that moved within its server's quota: how many runs' new
    steps wait for a later poll (none lost: their cursors stay), how many of them were priority runs,
    the longest any has waited since its last read (seconds), and the quota."""

    deferred: int
    priority_deferred: int
    waiting: float
    quota: str

    def line(self) -> str:
        first = f", {self.priority_deferred} of them priority runs" if self.priority_deferred else ""
        return (
            f"{self.deferred} runs' history put off by the quota ({self.quota}){first}; "
            f"the longest wait since a read {self.waiting:.0f}s"
        )


@dataclass
class PollResult:
    samples: list[Sample] = field(default_factory=list)
    runs: list[RunInfo] = field(default_factory=list)
    cursors: dict[str, Cursor] = field(default_factory=dict)
    error: str | None = None  # the source could not be read: its runs' data is unknown, not stalled
    requests: int = 0
    # run -> input -> why the source found nothing for it (a query with no series): for coverage.
    # A run with an entry (even empty) replaces what the source said of it before; without, unchanged.
    gaps: dict[str, dict[str, str]] = field(default_factory=dict)
    # run -> keys the run logs that the source saw, read or not (what a blind rule's warning suggests)
    logged: dict[str, list[str]] = field(default_factory=dict)
    fleet: list[FleetFrame] = field(default_factory=list)  # per-member series (``monitor.fleet``)
    throttle: Throttle | None = None  # reads the server's quota put off (W&B)
    # run -> why this one run could not be read (a damaged file at a byte, an answer over a limit) while
    # the rest of the watch was: the run gets its own source_unavailable, the other runs are unharmed
    unreadable: dict[str, str] = field(default_factory=dict)

    def validated(self) -> PollResult:
        """The result with every sample, run and fleet frame checked and cleaned (``samples.clean``,
        ``samples.clean_info``, ``fleet.frame.clean_frame``): the boundary where a source's data enters
        herowatch, its words for run states made ``RunState``s. Unusable ones are dropped; a run id over
        :data:`MAX_ID` characters (which ``run_ids.qualify`` never makes) is logged once, never dropped in
        silence."""
        _warn_long_ids({s.run for s in self.samples} | {r.run for r in self.runs})
        samples = [c for s in self.samples if (c := clean(s)) is not None]
        runs = [_bounded(c) for r in self.runs if (c := clean_info(r)) is not None]
        gaps = {
            str(run): {str(k): bounded(v, 1000) for k, v in dict(by_alias).items()}
            for run, by_alias in dict(self.gaps).items()
        }
        logged = {
            str(run): [str(k)[:200] for k in list(keys)[:500]] for run, keys in dict(self.logged).items()
        }
        fleet = [c for f in self.fleet if (c := clean_frame(f)) is not None]
        error = None if self.error is None else bounded(self.error)  # a 50 MB error is stored as 2,000
        unreadable = {str(run)[:MAX_ID]: bounded(str(why)) for run, why in dict(self.unreadable).items()}
        return PollResult(
            samples,
            runs,
            dict(self.cursors),
            error,
            self.requests,
            gaps,
            logged,
            fleet,
            self.throttle,
            unreadable,
        )


_warned: set[str] = set()  # long run ids already logged (bounded: a source cannot flood the log)
_warned_lock = threading.Lock()


def _warn_long_ids(ids: set[Any]) -> None:
    long = sorted(r for r in ids if isinstance(r, str) and len(r) > MAX_ID)
    with _warned_lock:
        new = [r for r in long if r not in _warned and len(_warned) < 10_000]
        _warned.update(new)
    for r in new:
        log.warning(
            "run %s... has an id of %d characters (at most %d): its samples are not read; its source "
            "must make ids with monitor.run_ids.qualify, which shortens them",
            r[:80],
            len(r),
            MAX_ID,
        )


def _bounded(run: RunInfo) -> RunInfo:
    """The run with its name and project cut to what storage holds (its id is the run's key; these are
    what people read)."""
    name, project, shown, labels = run.name, run.project, run.display_name, run.labels
    long_labels = len(labels) > MAX_LABELS or any(
        len(str(k)) > MAX_NAME or len(str(v)) > MAX_LABEL for k, v in labels.items()
    )
    if (
        len(name or "") <= MAX_ID
        and len(project or "") <= MAX_ID
        and len(shown or "") <= MAX_DISPLAY
        and not long_labels
    ):
        return run
    if long_labels:
        items = list(labels.items())[:MAX_LABELS]
        labels = {bounded(k, MAX_NAME): bounded(v, MAX_LABEL) for k, v in items}
    return dataclasses.replace(
        run,
        name=bounded(name, MAX_ID) if name else name,
        project=bounded(project, MAX_ID) if project else project,
        display_name=bounded(shown, MAX_DISPLAY) if shown else shown,
        labels=labels,
    )


class Source(Protocol):
    kind: ClassVar[str]

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        """Read what is new for ``target`` since ``cursors``. Must not raise for a source outage:
        return a PollResult with ``error`` set instead."""
        ...

    def close(self) -> None: ...
