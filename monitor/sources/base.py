"""The one interface every source implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from monitor.fleet.frame import FleetFrame, clean_frame
from monitor.samples import RunInfo, Sample, clean, clean_info

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

    def validated(self) -> PollResult:
        """The result with every sample, run and fleet frame checked and cleaned (``samples.clean``,
        ``samples.clean_info``, ``fleet.frame.clean_frame``): the boundary where a source's data enters
        herowatch, its words for run states made ``RunState``s. Unusable ones are dropped."""
        samples = [c for s in self.samples if (c := clean(s)) is not None]
        runs = [c for r in self.runs if (c := clean_info(r)) is not None]
        gaps = {
            str(run): {str(k): str(v)[:1000] for k, v in dict(by_alias).items()}
            for run, by_alias in dict(self.gaps).items()
        }
        logged = {
            str(run): [str(k)[:200] for k in list(keys)[:500]] for run, keys in dict(self.logged).items()
        }
        fleet = [c for f in self.fleet if (c := clean_frame(f)) is not None]
        return PollResult(samples, runs, dict(self.cursors), self.error, self.requests, gaps, logged, fleet)


class Source(Protocol):
    kind: ClassVar[str]

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        """Read what is new for ``target`` since ``cursors``. Must not raise for a source outage:
        return a PollResult with ``error`` set instead."""
        ...

    def close(self) -> None: ...
