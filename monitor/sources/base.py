"""The one interface every source implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from monitor.samples import RunInfo, Sample, clean

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

    def validated(self) -> PollResult:
        """The result with every sample checked and cleaned (``samples.clean``): the boundary where a
        source's data enters herowatch. Unusable samples are dropped."""
        samples = [c for s in self.samples if (c := clean(s)) is not None]
        runs = [r for r in self.runs if isinstance(r.run, str) and 0 < len(r.run) <= 200]
        return PollResult(samples, runs, dict(self.cursors), self.error, self.requests)


class Source(Protocol):
    kind: ClassVar[str]

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        """Read what is new for ``target`` since ``cursors``. Must not raise for a source outage:
        return a PollResult with ``error`` set instead."""
        ...

    def close(self) -> None: ...
