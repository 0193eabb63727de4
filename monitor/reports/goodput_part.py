"""Per run: the goodput buckets of the period (ledger slots, plus the stretch not accounted yet), GPU
counts and GPU-hours, progress, ETA, and the period before."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from monitor.reports.model import BUCKETS, GpuBasis, Hours, Period, RunReport
from monitor.runs.goodput import Goodput
from monitor.runs.goodput_ledger import Ledger
from monitor.samples import ENDED_STATES, TERMINAL_STATES
from monitor.storage import goodput_repo, report_repo
from monitor.storage.models import Run

H = 3600.0
STEP_METRIC = "train/loss"  # the step-axis series progress is read from (every pack's runs log it)
TOKENS_METRIC = "throughput/tokens_per_second"


@dataclass(frozen=True)
class GpuSettings:
    """``gpus:`` per watch, and per run (by id or name) from ``run_gpus:``."""

    by_watch: Mapping[str, int]
    by_run: Mapping[str, int]

    def of(self, run: Run, fleet: Mapping[str, int]) -> tuple[int | None, GpuBasis]:
        for key in (run.id, run.name):
            if key and key in self.by_run:
                return self.by_run[key], "setting"
        if run.watch in self.by_watch:
            return self.by_watch[run.watch], "setting"
        stored = (run.stats or {}).get("gpus")  # as configured while it was watched (engine)
        if isinstance(stored, int) and stored > 0:
            return stored, "setting"
        if fleet.get(run.id):
            return fleet[run.id], "fleet"
        return None, "none"


def open_seconds(run: Run, p: Period, now: float) -> dict[str, float]:
    """Seconds per bucket of the stretch the tracker has not classified for good yet, inside ``p``."""
    data = (run.stats or {}).get("goodput")
    if not data:
        return {}
    g = Goodput.from_dict(data)
    upto = min(now, run.last_polled_at or now)
    acct, add, _, holes = g.open_stretch(upto)
    if acct is None or upto <= acct:
        return {}
    led = Ledger()
    led.account(acct, upto, add, holes)
    slots, _ = led.drain()
    out: dict[str, float] = {}
    for (slot, bucket), sec in slots.items():
        if p.start <= slot < p.end:
            out[bucket] = out.get(bucket, 0.0) + sec
    return out


def hours_of(seconds: Mapping[str, float]) -> Hours:
    return Hours(**{b: seconds.get(b, 0.0) / H for b in BUCKETS})


def run_reports(
    s: Session, runs: list[Run], p: Period, prev: Period, now: float, gpus: GpuSettings
) -> tuple[list[RunReport], list[str]]:
    ids = [r.id for r in runs]
    sums = goodput_repo.bucket_sums(s, ids, p.start, p.end)
    before = goodput_repo.bucket_sums(s, ids, prev.start, prev.end)
    fleet = report_repo.fleet_gpus(s, ids)
    at_start = report_repo.step_reached(s, ids, STEP_METRIC, p.start)
    at_end = report_repo.step_reached(s, ids, STEP_METRIC, p.end)
    # a run that started in the period (or whose early buckets were merged since) starts at its first step
    first = report_repo.step_reached(s, ids, STEP_METRIC, p.end, first=True)
    at_start = {r: at_start.get(r, first[r]) for r in first}
    at_prev = report_repo.step_reached(s, ids, STEP_METRIC, prev.start)
    tokens = report_repo.mean_in(s, ids, TOKENS_METRIC, p.start, p.end)
    out, missing = [], []
    for run in runs:
        if run.first_seen_at is not None and run.first_seen_at >= p.end:
            continue  # a run that did not exist yet
        if _over_before(run, p.start):
            continue  # a run that had ended: nothing to account, nothing missing
        seconds = dict(sums.get(run.id, {}))
        for b, sec in open_seconds(run, p, now).items():
            seconds[b] = seconds.get(b, 0.0) + sec
        hours = hours_of(seconds)
        if hours.total() <= 0:
            missing.append(run.id)
            continue
        n, basis = gpus.of(run, fleet)
        prev_hours = hours_of(before[run.id]) if run.id in before else None
        made = at_end[run.id] - at_start.get(run.id, at_end[run.id]) if run.id in at_end else None
        made_before = at_start[run.id] - at_prev.get(run.id, at_start[run.id]) if run.id in at_start else None
        target = (run.stats or {}).get("target_step")
        out.append(
            RunReport(
                run=run.id,
                name=run.name,
                watch=run.watch,
                watched_hours=hours.total(),
                goodput=hours.ratio(),
                hours=hours,
                gpus=n,
                gpus_from=basis,
                gpu_hours=hours.times(n) if n else None,
                steps_made=int(made) if made is not None else None,
                tokens_made=tokens[run.id] * seconds.get("productive", 0.0) if run.id in tokens else None,
                eta_start_hours=_eta(target, at_start.get(run.id), made_before, prev.end - prev.start),
                eta_end_hours=_eta(target, at_end.get(run.id), made, p.end - p.start),
                previous=prev_hours,
                previous_goodput=prev_hours.ratio() if prev_hours else None,
            )
        )
    return out, missing


def _eta(target: int | None, step: float | None, made: float | None, span: float) -> float | None:
    """Hours to ``target`` from ``step`` at the rate of the period that led there (``made`` in ``span``)."""
    if not target or step is None or not made or made <= 0:
        return None
    if step >= target:
        return 0.0
    return (target - step) / (made / span) / H


def _over_before(run: Run, start: float) -> bool:
    """Did the run end (a final state) before ``start``, by its newest sample?"""
    ended = run.state in {str(x) for x in TERMINAL_STATES | ENDED_STATES}
    return ended and run.last_seen_at is not None and run.last_seen_at < start
