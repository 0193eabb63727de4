"""The poll-evaluate-persist cycle: sources -> samples -> rules -> lifecycle -> outbox, one watch at a time.

Everything a cycle changes (runs, cursors, chart series, alert transitions and the notifications they
cause) is written in one transaction. Time comes from the injected clock.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from alerts.model import AlertState
from monitor.config.schema import Watch
from monitor.delivery.planner import Planner
from monitor.engine import source_health
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.rules.loader import RuleSet
from monitor.runs.run_stats import RunStats
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult, Source, Target
from monitor.storage import alerts_repo, runs_repo
from monitor.storage.leases import Leases
from monitor.storage.models import Run

log = logging.getLogger(__name__)


@dataclass
class CycleReport:
    watch: str
    samples: int = 0
    runs: int = 0
    events: list[AlertEvent] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: bool = False  # another replica holds this watch


class LeaseLost(Exception):
    pass


class Engine:
    def __init__(
        self,
        watches: list[Watch],
        sources: Mapping[str, Source],
        rules: RuleSet,
        planner: Planner,
        sessions: sessionmaker[Session],
        clock: Clock,
        leases: Leases | None = None,
    ) -> None:
        self.watches = {w.name: w for w in watches}
        self.leases = leases  # None: a single process does all the work (SQLite)
        self._adopted: set[str] = set()
        self.sources = sources
        self.rules = rules
        self.planner = planner
        self.sessions = sessions
        self.clock = clock
        self._run_watch: dict[str, str] = {}
        self._run_labels: dict[str, dict[str, str]] = {}
        self.evaluator = Evaluator(self._rules_for_run, lambda run: self._run_labels.get(run, {}))
        self._alert_ids: dict[str, int] = {}  # fingerprint -> id of its active instance
        self._fp_run: dict[str, str] = {}  # fingerprint -> run, for handing a watch over
        self._stats: dict[str, RunStats] = {}
        self._lock = threading.Lock()
        self.last_poll_ok: dict[str, float] = {}  # source kind -> time of the last successful poll
        self.last_poll_at: dict[str, float] = {}  # source kind -> time of the last poll, failed or not
        self.last_error: dict[str, str | None] = {}

    # ---- wiring ---------------------------------------------------------------------------------
    def _rules_for_run(self, run: str):  # noqa: ANN202
        watch = self.watches.get(self._run_watch.get(run, ""))
        if watch is None:
            return self.rules.for_run()
        return self.rules.for_run(watch.rules.overrides, watch.rules.disabled, watch.rule_settings())

    @property
    def adopted(self) -> frozenset[str]:
        """The watches this process polls now."""
        return frozenset(self._adopted)

    def resume(self) -> None:
        """After a restart: active alerts keep their state (no second notification), detectors are primed
        with what the database knows of each run. With leases, each watch is adopted when its lease is
        first taken instead."""
        if self.leases is None:
            for name in self.watches:
                self._adopt(name)

    def _adopt(self, watch: str) -> None:
        with self.sessions() as s:
            runs = [r for r in runs_repo.list_runs(s) if r.watch == watch]
            ids = {r.id for r in runs}
            restored = 0
            for row in alerts_repo.load_active(s):
                if row.run_id in ids:
                    self.evaluator.active[row.fingerprint] = alerts_repo.status_of(row)
                    self._alert_ids[row.fingerprint] = row.id
                    self._fp_run[row.fingerprint] = row.run_id
                    restored += 1
            for run in runs:
                self._remember(run)
                self._stats[run.id] = RunStats.restore(run.stats, self.watches[run.watch].target_step)
                if run.last_step is not None and run.last_step_at is not None:
                    self.evaluator.observe(
                        Sample(t=run.last_step_at, run=run.id, step=run.last_step, state=run.state)
                    )
        self._adopted.add(watch)
        log.info("watch %s: taken up with %d runs and %d active alerts", watch, len(runs), restored)

    def _let_go(self, watch: str) -> None:
        """Another replica polls this watch now: forget what this one knew, to re-read it on return."""
        runs = {r for r, w in self._run_watch.items() if w == watch} | {watch}  # and its watch-level alerts
        for run in runs:
            self.evaluator.forget(run)
            self._stats.pop(run, None)
        for fp in [fp for fp, r in self._fp_run.items() if r in runs]:
            self.evaluator.active.pop(fp, None)
            self._alert_ids.pop(fp, None)
            self._fp_run.pop(fp, None)
        self._adopted.discard(watch)
        log.info("watch %s: handed over to another replica", watch)

    def _remember(self, run: Run) -> None:
        self._run_watch[run.id] = run.watch
        self._run_labels[run.id] = {
            **self.watches[run.watch].labels,
            **{k: str(v) for k, v in (run.labels or {}).items()},
        }

    def lease_ttl(self, watch: str) -> float:
        return max(3 * self.watches[watch].poll_interval, 30.0)

    def _take_lease(self, watch: str) -> bool:
        if self.leases is not None and not self.leases.acquire(
            f"poll:{watch}", self.clock.time(), self.lease_ttl(watch)
        ):
            if watch in self._adopted:
                self._let_go(watch)
            return False
        if watch not in self._adopted:
            self._adopt(watch)
        return True

    # ---- one cycle ------------------------------------------------------------------------------
    def poll(self, watch_name: str) -> CycleReport:
        watch = self.watches[watch_name]
        report = CycleReport(watch_name)
        if not self._take_lease(watch_name):
            report.skipped = True
            return report
        results: dict[str, PollResult] = {}
        with self.sessions() as s:
            known = {
                r.id: dict(r.labels or {}) for r in s.scalars(select(Run).where(Run.watch == watch_name))
            }
            cursors = {kind: runs_repo.cursors_for(s, kind, known) for kind in watch.targets()}
        for kind, cfg in watch.targets().items():
            target = Target(watch_name, cfg, watch.labels, known)
            try:
                results[kind] = self.sources[kind].poll(target, cursors[kind], self.clock.time())
            except Exception as exc:  # a source bug is an outage of that source, not of herowatch
                log.exception("source %s raised while polling %s", kind, watch_name)
                results[kind] = PollResult(error=f"{type(exc).__name__}: {exc}")
            for info in results[kind].runs:
                known.setdefault(info.run, dict(info.labels))
        now = self.clock.time()
        try:
            with self._lock, self.sessions.begin() as s:
                if self.leases is not None and not self.leases.holds(s, f"poll:{watch_name}", now):
                    raise LeaseLost(watch_name)  # fenced: another replica took over mid-cycle
                self._persist(s, watch, results, known, now, report)
        except LeaseLost:
            self._let_go(watch_name)
            report.skipped = True
        except Exception:
            # The transaction rolled back: what this cycle put in memory must not outlive it.
            self._let_go(watch_name)
            raise
        return report

    def _persist(
        self,
        s: Session,
        watch: Watch,
        results: Mapping[str, PollResult],
        known: Mapping[str, dict],
        now: float,
        report: CycleReport,
    ) -> None:
        samples_by_run: dict[str, list[Sample]] = defaultdict(list)
        for kind, res in results.items():
            self.last_poll_at[kind] = now
            for info in res.runs:
                runs_repo.upsert_run(s, info, watch.name, now)
            for sample in res.samples:
                samples_by_run[sample.run].append(sample)
            if res.error:
                report.errors[kind] = res.error
                self.last_error[kind] = res.error
            else:
                self.last_poll_ok[kind] = now
                self.last_error[kind] = None
        s.flush()
        run_ids = set(known) | set(samples_by_run) | {r for res in results.values() for r in res.cursors}
        for run_id in sorted(run_ids):
            run = s.get(Run, run_id)
            if run is None:  # samples for a run no source described: record it minimally
                info = RunInfo(run=run_id, source=next(iter(results), "unknown"))
                run = runs_repo.upsert_run(s, info, watch.name, now)
                s.flush()
            self._remember(run)
            run.last_polled_at = now
            samples = sorted(samples_by_run.get(run_id, ()), key=lambda x: x.t)
            runs_repo.record_samples(s, run, samples)
            report.samples += len(samples)
            stats = self._stats.get(run_id)
            if stats is None:
                stats = self._stats[run_id] = RunStats.restore(run.stats, watch.target_step)
            for sample in samples:
                self.evaluator.observe(sample)
                stats.observe(sample.t, sample.step, sample.metrics, state=sample.state)
            run.stats = stats.snapshot(now)
            run.source_error = "; ".join(f"{k}: {e}" for k, e in report.errors.items()) or None
            events = self._source_health(run_id, report.errors, results, now)
            if not report.errors:  # an unreadable source freezes the data rules: no false stall
                events += self.evaluator.evaluate(run_id, now)
            for event in events:
                self._record(s, event, now)
            report.events.extend(events)
        # A watch whose source has never answered has no runs to hang the outage on: the watch itself
        # carries it (as run=<watch name>) until its runs are known, so a wrong project or key pages too.
        watch_level_active = any(fp in self.evaluator.active for fp in self._watch_level(watch.name, results))
        if not run_ids or watch_level_active:
            errors = report.errors if not run_ids else {}
            events = self._source_health(watch.name, errors, results, now, scope="watch")
            for event in events:
                self._record(s, event, now)
            report.events.extend(events)
        for kind, res in results.items():
            if not res.error:
                runs_repo.save_cursors(s, kind, res.cursors, now)
        report.runs = len(run_ids)

    def _watch_level(self, watch: str, results: Mapping[str, PollResult]) -> list[str]:
        """Fingerprints of the watch-level source alerts (kept apart from any run of the same name)."""
        return [
            self.evaluator.key(
                source_health.source_rule(k), watch, source_health.finding(None, "watch")
            ).fingerprint
            for k in results
        ]

    def _source_health(
        self,
        run: str,
        errors: Mapping[str, str],
        results: Mapping[str, PollResult],
        now: float,
        scope: str | None = None,
    ) -> list[AlertEvent]:
        events = []
        for kind in results:
            finding = source_health.finding(errors.get(kind), scope)
            event = self.evaluator.apply(source_health.source_rule(kind), run, finding, now)
            if event is not None:
                events.append(event)
        return events

    def _record(self, s: Session, event: AlertEvent, now: float) -> None:
        fp = event.key.fingerprint
        row = alerts_repo.record_event(s, event, self._alert_ids.get(fp), now)
        if event.transition.to_state.active:
            self._alert_ids[fp] = row.id
            self._fp_run[fp] = event.key.run
        else:
            self._alert_ids.pop(fp, None)
            self._fp_run.pop(fp, None)
        to = event.transition.to_state
        if to in (AlertState.FIRING, AlertState.RESOLVED):
            self.planner.on_transition(s, row, to.value, now)
        log.info(
            "alert %s %s -> %s for %s: %s",
            event.key.rule.name,
            event.transition.from_state.value,
            to.value,
            event.key.run,
            event.transition.reason,
        )
