"""`herowatch backfill`: load a run's whole history (typically a finished run) into the database.

The chart series, the run record and the source cursors are written as the engine would write them,
but no rule is evaluated and nothing is notified: old events must not page anyone today. A later
`herowatch serve` continues from the stored cursors. Optionally the same samples go to a trace file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from monitor.config.schema import Watch
from monitor.profiles import Vocabulary
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult, Source, Target
from monitor.sources.registry import SourceTarget
from monitor.storage import runs_repo
from monitor.traces.trace import TraceWriter


@dataclass
class BackfillReport:
    runs: dict[str, int] = field(default_factory=dict)  # run -> samples loaded
    errors: dict[str, str] = field(default_factory=dict)


def name_at_source(kind: str, run: str) -> str:
    """``abc123`` for ``abc123`` or ``wandb:entity/project/abc123``."""
    return run.rsplit("/", 1)[-1] if run.startswith(f"{kind}:") else run


def discover(source: Source, kind: str, watch: Watch, cfg: SourceTarget, now: float) -> list[RunInfo]:
    """The runs a watch selects, read cheaply."""
    res = source.poll(Target(watch.name, cfg.for_discovery(), watch.labels), {}, now)
    if res.error:
        raise RuntimeError(f"{kind}: {res.error}")
    return res.runs


def backfill(
    watch: Watch,
    sources: dict[str, Source],
    sessions: sessionmaker[Session] | None,
    clock: Clock,
    runs: Sequence[str] = (),
    writer: TraceWriter | None = None,
    on_run: Callable[[str, int, int], None] = lambda run, done, total: None,
) -> BackfillReport:
    report = BackfillReport()
    for kind, cfg in watch.targets().items():
        source = sources[kind]
        # runs by their name at the source (a W&B id); herowatch's own id (wandb:entity/project/id) is
        # accepted too: sources select by name, the samples come back under the id (monitor.run_ids)
        wanted = [name_at_source(kind, r) for r in runs] or [
            r.name or r.run for r in discover(source, kind, watch, cfg, clock.time())
        ]
        for i, name in enumerate(wanted):
            res = source.poll(Target(watch.name, cfg.for_backfill(name), watch.labels), {}, clock.time())
            info = next((r for r in res.runs if name in (r.name, r.run)), None)
            run = info.run if info is not None else name
            if res.error:
                report.errors[run] = res.error
                on_run(run, i + 1, len(wanted))
                continue
            samples = sorted((s for s in res.samples if s.run == run), key=lambda s: s.t)
            if sessions is not None:
                _store(sessions, watch, kind, run, res, samples, clock.time())
            if writer is not None:
                writer.write_all(samples)
            report.runs[run] = report.runs.get(run, 0) + len(samples)
            on_run(run, i + 1, len(wanted))
    return report


def _store(
    sessions: sessionmaker[Session],
    watch: Watch,
    kind: str,
    run: str,
    res: PollResult,
    samples: list[Sample],
    now: float,
) -> None:
    info = next((r for r in res.runs if r.run == run), RunInfo(run=run, source=kind))
    vocabulary = Vocabulary()  # the charts get the rules' names, as the engine stores them
    samples = vocabulary.translate(run, samples, watch.metrics_profile)
    with sessions.begin() as s:
        row = runs_repo.upsert_run(s, info, watch.name, now)
        s.flush()
        row.stats = {**(row.stats or {}), "metrics_profile": vocabulary.describe(run)}
        runs_repo.record_samples(s, row, samples)
        runs_repo.save_cursors(s, kind, {k: v for k, v in res.cursors.items() if k == run}, now)
