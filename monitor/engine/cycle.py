"""The poll-evaluate-persist cycle: sources -> samples -> rules -> lifecycle -> outbox, one watch at a time.

Everything a cycle changes (runs, cursors, chart series, alert transitions and the notifications they
cause) is written in one transaction, together with the other polls that finished meanwhile
(``batching``: a few multi-row statements per table; the rows come from memory, ``run_memory``). A watch
whose lease is gone is left out of its batch and let go; a batch that fails lets all its watches go
(re-read from the database at their next poll). Time comes from the injected clock. The sources of a watch are
polled concurrently (``polling``); a source that cannot be read freezes exactly the rules it feeds
and, after a while, raises ``source_unavailable`` for the watch (``source_health``), checked on its
own schedule (``check_health``) so that a stuck poll cannot delay it. Detector state is saved every
few polls and at shutdown (``checkpoint``), and read back when a watch is taken up (``adoption``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from alerts.text import one_line
from monitor.config.schema import Watch
from monitor.engine.adoption import Adoption
from monitor.engine.batching import GroupCommit, WriteJob, Writes
from monitor.engine.blind_watch import BlindWatch
from monitor.engine.checkpoints import CheckpointCounter
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.engine.fleet import FleetStep
from monitor.engine.health_job import HealthJob
from monitor.engine.isolation import Careful, Plain, WriteHealth, write_carefully
from monitor.engine.joins import Joins
from monitor.engine.lease_keeping import LeaseKeeper
from monitor.engine.phases import Phases
from monitor.engine.polling import WatchPoller, read_sources, stuck_after
from monitor.engine.recording import Asks, Delivery, Recorder
from monitor.engine.run_memory import RunMemory, page_facts
from monitor.engine.source_polls import SourcePolls
from monitor.engine.step_times import StepTimes, skew_rule
from monitor.engine.unreadable_runs import UnreadableRuns
from monitor.fleet.frame import FleetFrame
from monitor.profiles import Vocabulary
from monitor.rules.loader import RuleSet
from monitor.rules.panels import Layouts
from monitor.runs.run_stats import RunStats
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult, Source
from monitor.storage import runs_repo
from monitor.storage.leases import Leases
from monitor.storage.models import Run
from monitor.storage.series_tails import SeriesTails

log = logging.getLogger(__name__)
CHECKPOINT_SECONDS = 120.0  # a run's detector state is saved this often, at a poll that brought it something


@dataclass
class CycleReport:
    watch: str
    samples: int = 0
    runs: int = 0
    events: list[AlertEvent] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: bool = False  # another replica holds this watch
    set_aside: dict[str, str] = field(default_factory=dict)  # runs whose write failed -> why (isolation)


class LeaseLost(Exception):
    pass


class Engine:
    def __init__(
        self,
        watches: list[Watch],
        sources: Mapping[str, Source],
        rules: RuleSet,
        delivery: Delivery,
        sessions: sessionmaker[Session],
        clock: Clock,
        leases: Leases | None = None,
        speed: float = 1.0,
        layouts: Layouts | None = None,
        asks: Asks | None = None,
    ) -> None:
        self.watches = {w.name: w for w in watches}
        self.layouts = layouts or Layouts()  # run kinds and panels the packs declare (rules.panels)
        self.drawn = self.layouts.rules_drawn()  # rules whose figures the panels draw
        self.leases = leases  # None: a single process does all the work (SQLite)
        self.sources = sources
        self.rules = rules
        self.sessions = sessions
        self.clock = clock
        self.speed = speed
        # held while a batch writes, a watch is taken up or let go, or source health is recorded
        self.lock = threading.RLock()
        self.memory = RunMemory(self.watches, sessions, self.lock)  # runs, cursors, warm watches
        self.checkpoints = CheckpointCounter()  # when each run's detector state was last saved
        self.source_polls = SourcePolls()  # what each watch's last poll of each source said (the API)
        self.evaluator = Evaluator(self._rules_for_run, self.memory.labels, self.memory.title)
        self.fleet = FleetStep(self._rules_for_run)
        self.recorder = Recorder(self.evaluator, delivery, self.fleet.hints, asks)
        self._stats: dict[str, RunStats] = {}
        self.vocabulary = Vocabulary()  # each run's trainer key names -> the rules' names (monitor/profiles)
        self.blind = BlindWatch(self.evaluator, self.vocabulary)  # coverage and watching_blind
        self._pool = ThreadPoolExecutor(max_workers=max(4, 2 * len(watches)), thread_name_prefix="poll")
        self.pollers = {w.name: WatchPoller(w.name) for w in watches}
        for w in watches:
            self.pollers[w.name].health.after = w.unavailable_after
            self.pollers[w.name].health.stuck_after.update(
                {kind: stuck_after(cfg, w.poll_interval) for kind, cfg in w.targets().items()}
            )
        self.joins = {w.name: Joins(w.name, w.join, self.memory.stats_of) for w in watches}  # join:
        self.step_times = {w.name: StepTimes(bound=w.clock_skew_bound) for w in watches}
        self.phases = Phases()  # where the polls' time goes (bench/scale.py prints it)
        self.batches = GroupCommit(self._write_batch, self._written)  # polls finishing together: one batch
        self._pending: dict[str, WriteJob] = {}  # watch -> its poll handed to the writer last
        self.series = SeriesTails()  # the newest chart buckets of each run, as written
        self.adoption = Adoption(self, self.memory, self.checkpoints, self.lock)
        self.leases_kept = LeaseKeeper(self)
        self.health = HealthJob(self, self.memory, self.lock)
        self.write_health = WriteHealth()  # whose polls' writes fail now (``isolation``)
        self.unreadable = UnreadableRuns()  # runs a source could not read while it read their watch

    # ---- wiring ---------------------------------------------------------------------------------
    def _rules_for_run(self, run: str):  # noqa: ANN202
        watch = self.memory.watch_of(run)
        if watch is None:
            return self.rules.for_run()
        return self.rules.for_run(watch.rules.overrides, watch.rules.disabled, watch.rule_settings())

    def title(self, run: str) -> str:
        return self.memory.title(run)

    def runs_of(self, watch: str) -> list[str]:
        return self.memory.runs_of(watch)

    def stats_of(self, run: Run, watch: Watch) -> RunStats:
        stats = self._stats.get(run.id)
        if stats is None:
            keys = self.layouts.evidence()
            stats = self._stats[run.id] = RunStats.restore(run.stats, watch.target_step, keys)
        return stats

    def forget(self, run: str) -> None:
        self.memory.forget(run)
        self.series.forget(run)
        self.evaluator.drop(run)
        self._stats.pop(run, None)
        self.checkpoints.forget(run)
        self.blind.forget(run)
        self.fleet.forget(run)
        for st in self.step_times.values():
            st.forget(run)

    @property
    def adopted(self) -> frozenset[str]:
        """The watches this process polls now."""
        return self.adoption.adopted

    def resume(self) -> None:
        """After a restart: every watch is taken up again (without leases: all of them, now)."""
        if self.leases is None:
            for name in self.watches:
                self.adoption.adopt(name)

    def lease_ttl(self, watch: str) -> float:
        return self.leases_kept.ttl(watch)

    def _take_lease(self, watch: str) -> bool:
        return self.leases_kept.take(watch)

    # ---- one cycle ------------------------------------------------------------------------------
    def poll(self, watch_name: str, wait: bool = True) -> CycleReport:
        """Poll the watch's sources (without the engine lock), then have the results written with those
        of the other polls that finish meanwhile (``batching.GroupCommit``): returns once they are, or
        (``wait=False``, the scheduler's polls) at once, the report filled in once they are."""
        watch = self.watches[watch_name]
        report = CycleReport(watch_name)
        previous = self._pending.get(watch_name)
        if previous is not None:  # its cursors and runs are read from what the previous poll wrote
            previous.done.wait()
            self._pending.pop(watch_name, None)
        with self.phases.timed("lease"):
            leased = self._take_lease(watch_name)
        if not leased:
            report.skipped = True
            return report
        with self.batches.reading():
            with self.phases.timed("read"):
                known, names, cursors = self.memory.known(watch, self.clock.time())
            budget = max(1.0, watch.poll_interval / self.speed)
            poller = self.pollers[watch_name]
            with self.phases.timed("sources"):
                results = read_sources(
                    poller,
                    self._pool,
                    self.sources,
                    watch,
                    known,
                    names,
                    cursors,
                    self.clock.time,
                    budget,
                    self.joins[watch_name],
                )
        job = WriteJob(watch_name, results, known, self.clock.time(), report)
        self._pending[watch_name] = job
        if not wait:
            self.batches.submit(job, wait=False)
            return report
        with self.phases.timed("batch"):
            self.batches.submit(job)
        self._written(job)
        if job.error is not None:
            raise job.error
        return report

    def _written(self, job: WriteJob) -> None:
        """What became of a poll's results: a watch whose lease was gone, or whose batch failed, is let go."""
        watch_name, report = job.watch, job.report
        if job.lost:
            self.adoption.let_go(watch_name)
            report.skipped = True
        elif job.error is not None:
            # The transaction rolled back: what this cycle put in memory must not outlive it.
            self.adoption.let_go(watch_name)
            if not job.waited:
                log.error("writing the poll of %s failed: %s", watch_name, job.error, exc_info=job.error)

    def _write_batch(self, jobs: list[WriteJob]) -> None:
        """Write the polls of a batch in one transaction; a watch whose lease is gone is left out."""
        t0 = time.perf_counter()
        with self.lock:
            self.phases.add("lock wait", time.perf_counter() - t0, 0.0)
            try:
                with self.phases.timed("write"), self.sessions.begin() as s:
                    held = self.leases_kept.fence(s, [j.watch for j in jobs], self.clock.time())
                    writes = Writes()
                    with self.phases.timed("persist"):
                        for job in jobs:
                            if job.watch not in held:
                                job.lost = True
                                continue
                            self.persist(s, job, writes, Plain())
                    with self.phases.timed("flush"):
                        writes.flush(s, max(j.now for j in jobs))
                        s.flush()
            except Exception as exc:
                log.warning(
                    "writing a batch of %d polls failed (%s): each is written again on its own, run by run",
                    len(jobs),
                    one_line(exc, 500),
                )
                for job in jobs:
                    if not job.lost:
                        write_carefully(self, job)
            else:
                for job in jobs:
                    if not job.lost:
                        self.write_health.written(job.watch, job.now)
        self.phases.add("batch size", 0.0, 0.0, len(jobs))
        self.phases.add("batches", 0.0, 0.0, 1)

    def persist(self, s: Session, job: WriteJob, writes: Writes, guard: Plain | Careful) -> None:
        """Persist one poll (``job``) in ``s``; ``guard``: how each run's part is written (``isolation``)."""
        watch, results, known, now, report = (
            self.watches[job.watch],
            job.results,
            job.known,
            job.now,
            job.report,
        )
        samples_by_run: dict[str, list[Sample]] = defaultdict(list)
        frames_by_run: dict[str, list[FleetFrame]] = defaultdict(list)
        if isinstance(guard, Plain):  # a watch's first poll here: its runs in a few queries, not a few a run
            self.series.preload(s, self.memory.preload(s, results, known, watch.name, now))
        for kind, res in results.items():
            self.source_polls.polled(watch.name, kind, now, res.error, res.throttle)
            for frame in res.fleet:
                frames_by_run[frame.run].append(frame)
            for info in res.runs:
                if guard.skip(info.run):
                    continue
                with guard.run(info.run):
                    runs_repo.apply_info(self.memory.run(s, info, watch.name, now, writes), info, watch.name)
            self.blind.note_gaps(kind, res.gaps)
            self.blind.note_logged(res.logged)
            for sample in self.step_times[watch.name].correct(res.samples, now):
                samples_by_run[sample.run].append(sample)
            if res.error:
                report.errors[kind] = res.error
        unreadable = self.unreadable.note(self.evaluator, watch, results, now)  # one bad run, not the watch
        run_ids = set(known) | set(samples_by_run) | set(frames_by_run)
        run_ids |= {r for res in results.values() for r in res.cursors}
        for run_id in sorted(run_ids | set(unreadable)):
            if guard.skip(run_id):
                continue
            with guard.run(run_id):
                if run_id in run_ids:
                    self._persist_run(
                        s, watch, run_id, results, samples_by_run, frames_by_run, now, report, writes
                    )
                self.recorder.record(s, unreadable.get(run_id, []), now)
                report.events.extend(unreadable.get(run_id, []))
        report.events.extend(self.health.record(s, watch, now))
        blind = self.blind.check_watch(watch, self.runs_of(watch.name), self.memory.states(), now)
        self.recorder.record(s, blind, now)
        self.blind.refresh(s, watch.name)
        report.events.extend(blind)
        for kind, res in results.items():
            if not res.error:
                self.memory.cursors_read(
                    kind, {r: c for r, c in res.cursors.items() if r not in guard.bad}, writes
                )
        report.runs = len(run_ids)

    def _persist_run(
        self,
        s: Session,
        watch: Watch,
        run_id: str,
        results: Mapping[str, PollResult],
        samples_by_run: Mapping[str, list[Sample]],
        frames_by_run: Mapping[str, list[FleetFrame]],
        now: float,
        report: CycleReport,
        writes: Writes,
    ) -> None:
        unavailable = self.pollers[watch.name].health.unavailable(now)
        settling = self.pollers[watch.name].health.settling(now)  # back from an outage: the backlog may come
        errors = "; ".join(f"{k}: {e}" for k, e in sorted(report.errors.items())) or None
        # samples for a run no source described: recorded minimally
        info = RunInfo(run=run_id, source=next(iter(results), "unknown"))
        run = self.memory.run(s, info, watch.name, now, writes)
        self.memory.remember(run)
        run.last_polled_at = now
        samples = list(samples_by_run.get(run_id, ()))
        samples += self.fleet.ingest(s, watch, run_id, frames_by_run.get(run_id, ()))
        samples = sorted(samples, key=lambda x: x.t)
        samples = self.vocabulary.translate(run_id, samples, watch.metrics_profile, run.stats, watch.metrics)
        self.series.fold(s, run_id, runs_repo.fold_samples(run, samples), writes.series)
        self.memory.set_state(run_id, run.state)
        report.samples += len(samples)
        stats = self.stats_of(run, watch)
        for sample in samples:
            self.evaluator.observe(sample)
            stats.observe(sample.t, sample.step, sample.metrics, state=sample.state)
        writes.goodput.add(run_id, *stats.goodput.ledger.drain())
        run.source_error = self.unreadable.why(watch.name, run_id) or errors
        blinded = unavailable | self.unreadable.sources_of(watch.name, run_id)  # this run's source alone
        events = self.evaluator.evaluate(run_id, now, blinded, settling)
        # the run's figures are known up to the last poll its own source answered, not to this one
        known = now if run.source not in report.errors else (run.stats or {}).get("known_until")
        run.stats = {
            **stats.snapshot(now, known),
            "metrics_profile": self.vocabulary.describe(run_id),
            "gpus": watch.run_gpus.get(run_id, watch.run_gpus.get(run.name or "", watch.gpus)),
            **page_facts(self.layouts, self.drawn, self.evaluator, run, watch, stats),
            **self.joins[watch.name].facts(run_id),  # a joined run's parts: which source gave what
        }
        skew = self.evaluator.apply(
            skew_rule(watch.clock_skew_bound), run_id, self.step_times[watch.name].finding(run_id), now
        )
        if skew is not None:
            events.append(skew)
        blind, _, coverage = self.blind.check_run(watch, run_id, now, unavailable, run.kind)
        events.extend(blind)
        run.stats = {**run.stats, "coverage": coverage}
        self.recorder.record(s, events, now)
        self.recorder.refresh(s, run_id, now)
        self.blind.refresh(s, run_id)
        report.events.extend(events)
        if self.checkpoints.due(run_id, now, CHECKPOINT_SECONDS, changed=bool(samples or events)):
            self.adoption.save_state(s, [run_id], now, writes.states)

    # ---- source health, on its own schedule -------------------------------------------------------
    def check_health(self, watch_name: str | None = None) -> list[AlertEvent]:
        """The ``source_unavailable`` alerts of a watch (default: every watch held), now (``health_job``)."""
        return self.health.check(watch_name)

    # ---- shutdown ---------------------------------------------------------------------------------
    def checkpoint(self) -> int:
        """Save the state of every run of the watches this process still holds (at shutdown): the
        polls handed to the writer first (``Adoption.checkpoint``). Returns the number of runs saved."""
        self.batches.drain()
        with self.lock, self.sessions.begin() as s:
            return self.adoption.checkpoint(s, self.clock.time())

    def close(self) -> None:
        self.batches.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
