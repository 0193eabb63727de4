"""Replay a recorded trace through the rules with a simulated clock: what would have fired, and when.

The same Evaluator as the live engine. Each run has its own clock: it ticks at each of the run's
sample times (after all samples of that time) and on a fixed ``interval`` grid between them, so
time-based rules (stall, telemetry gone, absent) fire when they would have live. After the last
sample every run's clock goes on to the end of the trace, so a run that went silent while others
carried on is caught. Ticks at which no rule can change are skipped (``Evaluator.quiet_until``).

After the trace's last line the clock runs on, as live, while a timer the data armed can fire
(``Evaluator.armed_until``: a pending ``for``, a crash's grace), not the silence timers (a trace's end
looks like silence); ``finish(end)`` runs every clock to ``end`` (``--until``). A backlog after an
outage (``trace.Backlogs``) is taken in with its own times, the clock staying where it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from alerts.model import AlertState
from monitor.engine.blindness import Blind, absent_watched, apply, causes, describe, open_causes, run_findings
from monitor.engine.coverage import RunCoverage
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.engine.source_health import DEFAULT_AFTER
from monitor.profiles import AUTO, Vocabulary
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample
from monitor.traces.replay_events import ReplayEvent, ReplayResult, RunClock, RunSummary, to_replay_event
from monitor.traces.replay_outages import ReplayOutages
from monitor.traces.trace import Backlogs

DEFAULT_INTERVAL = 15.0
BATCH = 512  # plain samples of one run fed to the evaluator at once
COVERAGE_TICKS = 4  # coverage is judged every this many evaluation intervals of a run at first,
COVERAGE_MAX = 900.0  # and, while it does not change, ever less often, down to once per this many seconds
RUN_ON = 24 * 3600.0  # after the trace, armed timers are run on for at most this long
RUN_ON_TICKS = 100_000  # and at most this many evaluations (a timer that keeps re-arming)


class Replayer:
    """Feeds samples to an Evaluator and ticks each run's simulated clock. Collects the events."""

    def __init__(
        self,
        rules: Sequence[RuleSpec] | Callable[[str], Iterable[RuleSpec]],
        interval: float = DEFAULT_INTERVAL,
        labels_for_run: Callable[[str], Mapping[str, str]] = lambda run: {},
        on_event: Callable[[ReplayEvent], None] | None = None,
        unavailable_after: float = DEFAULT_AFTER,
        metrics_profile: str | None = AUTO,
        batched: bool = True,
    ) -> None:
        if interval <= 0:
            raise ValueError("the evaluation interval must be positive")
        rules_for_run = rules if callable(rules) else (lambda run, _r=list(rules): _r)
        self._ev = Evaluator(rules_for_run, labels_for_run)
        self.interval = float(interval)
        self.events: list[ReplayEvent] = []
        self.summaries: dict[str, RunSummary] = {}
        self._clocks: dict[str, RunClock] = {}
        self._on_event = on_event
        self._observe = self._ev.observe
        self._evaluate_run = self._ev.evaluate
        # trainer key names -> the rules' names, as the live engine does (None: samples as they are)
        self.metrics_profile = metrics_profile
        self.vocabulary = Vocabulary() if metrics_profile is not None else None
        self._outages = ReplayOutages(self._ev, unavailable_after)
        self._health = self._outages.health  # watch -> its sources' health, once one is in trouble
        self._scope = self._outages.scope  # run -> its watch
        self._coverage_at: dict[str, float] = {}  # run -> when its coverage is judged next
        self._coverage_every: dict[str, float] = {}  # run -> how long until the next judgement
        self._coverage_said: dict[str, tuple] = {}  # run -> the last judgement, to tell a change
        self._buf: list[Sample] = []  # plain samples of one run not fed to the evaluator yet (flush)
        self.batched = batched  # False: every sample fed to the evaluator alone (the reference path)
        self._plain: RunClock | None = None  # the run whose plain samples batch (feed's fast path)
        self._plain_run: str | None = None
        self.trace_end: float | None = None  # the time of the trace's last line (finish)
        self._backlogs = Backlogs()  # rows read after an outage, older than the run's clock

    @property
    def evaluator(self) -> Evaluator:
        """The evaluator, with every sample fed so far taken in."""
        self.flush()
        return self._ev

    def _evaluate(self, run: str, now: float) -> list[AlertEvent]:
        if self._health and self._outages.troubled(run) is not None:
            blind, settling = self._outages.blind(run, now)
            events = self._ev.evaluate(run, now, blind, settling)
            events += self._outages.check(self._scope[run], now)
        else:
            blind, events = frozenset(), self._ev.evaluate(run, now)
        if now >= self._coverage_at.get(run, -math.inf):
            cov, said, found = self._check_coverage(run, now, blind)
            events += found
            # judged often while it changes (a young run), rarely while it does not: it costs ~0.3 ms
            base = COVERAGE_TICKS * self.interval
            key = (cov.state, said.reason if said else None)  # which inputs are missing, not for how long
            every = self._coverage_every.get(run, base)
            settled = cov.state != "warming" and self._coverage_said.get(run) == key
            every = min(max(COVERAGE_MAX, base), 2 * every) if settled else base
            self._coverage_said[run], self._coverage_every[run] = key, every
            self._coverage_at[run] = now + every
        return events

    def _check_coverage(
        self, run: str, now: float, unavailable: frozenset[str]
    ) -> tuple[RunCoverage, Blind | None, list[AlertEvent]]:
        """The run's coverage and ``watching_blind`` (one alert per cause), as the live engine judges
        them after a poll."""
        ev = self._ev
        cov = ev.coverage(run, now, unavailable)
        voc = self.vocabulary
        keys = voc.keys(run) if voc is not None else []
        renames = voc.renames(run) if voc is not None else {}
        shapes = voc.shapes(run) if voc is not None else {}
        silenced = absent_watched(ev.detectors(run))
        blind = describe(cov, keys, None, renames, silenced, shapes)
        watch = self._scope.get(run, "trace")
        by_cause = causes(cov, keys, None, renames, silenced, shapes)
        findings = run_findings(by_cause, watch, open_causes(ev, run))
        return cov, blind, apply(ev, run, findings, now)

    # ---- feeding ---------------------------------------------------------------------------
    def feed(self, sample: Sample) -> None:
        # the common case first: a plain sample of the run whose batch is being gathered (``_feed``
        # checked the rest of the conditions, which hold until a source is in trouble: ``_sources``)
        clock = self._plain
        if (
            clock is not None
            and sample.run == self._plain_run
            and sample.state is None
            and sample.source_error is None
            and sample.metrics.keys() == clock.keys
        ):
            buf = self._buf
            if sample.t >= (buf[-1].t if buf else clock.t):
                if not clock.as_is and clock.translate is not None:
                    translated = clock.translate(sample)
                    clock.as_is = translated is sample
                    sample = translated
                buf.append(sample)
                if len(buf) >= BATCH:
                    self.flush()
                return
        self._feed(sample)

    def _feed(self, sample: Sample) -> None:
        run, t = sample.run, sample.t
        clock = self._clocks.get(run)
        if clock is None:
            voc = self.vocabulary
            clock = self._clocks[run] = RunClock(
                voc.translator(run, self.metrics_profile) if voc is not None else None
            )
            self.summaries[run] = RunSummary(run, first_t=t)
        if self._health:
            if t < clock.t:
                return self._backlog(run, clock, sample)
            self._backlogs.note(sample, clock.t)
        elif sample.source_error is not None:
            self._backlogs.note(sample, clock.t if clock.samples else None)
        buf = self._buf
        # a plain sample (no news, the same keys as the run's last one, so nothing for the vocabulary
        # to learn) waits in the batch; anything else is fed at once, after the batch
        keys, clock.keys = clock.keys, sample.metrics.keys()
        if (
            sample.state is None
            and self.batched
            and sample.source_error is None
            and not self._health
            and keys is not None
            and keys == clock.keys
            and run in self._scope
        ):
            if buf and buf[-1].run != run:
                self.flush()
                buf = self._buf
            if t >= (buf[-1].t if buf else clock.t):  # (going back in time is refused below)
                clock.keys = keys  # the run batches from here: feed's common case takes the sample
                self._plain, self._plain_run = clock, run
                return self.feed(sample)
        if buf:
            self.flush()
        if clock.translate is not None:
            translated = clock.translate(sample)
            # the same keys again are then as they are (the translation's fast path only grows)
            clock.as_is = translated is sample
            sample = translated
        if t != clock.t:
            self._next_time(run, clock, t)
        # source health: only news (a state, an error) or a watch with a source in trouble needs a look
        if (
            sample.state is not None
            or sample.source_error is not None
            or self._health
            or run not in self._scope
        ):
            events = self._outages.note(sample)
            if events:
                self._plain = None  # feed's fast path: only while no source is in trouble
                self._record(run, events)
            elif self._health:
                self._plain = None
        self._observe(sample)
        clock.pending = True
        clock.samples += 1
        step = sample.step
        if step is not None:
            if clock.first_step is None:
                clock.first_step = step
            clock.last_step, clock.last_step_t = step, t

    def _backlog(self, run: str, clock: RunClock, sample: Sample) -> None:
        """A row older than the run's clock, read after an outage: taken in, the clock stays."""
        if not self._backlogs.admits(sample):
            raise ValueError(f"run {run!r} goes back in time ({sample.t!r} after {clock.t!r})")
        self.flush()
        self._observe(clock.translate(sample) if clock.translate is not None else sample)
        clock.pending, clock.samples = True, clock.samples + 1
        clock.last_step = max(clock.last_step or sample.step, sample.step)

    def feed_all(self, samples: Iterable[Sample]) -> None:
        feed = self.feed
        for sample in samples:
            feed(sample)
        self.flush()

    def flush(self) -> None:
        """Feed the batch of plain samples to the evaluator: segment by segment (a segment ends where
        the replayer has work of its own: a coverage judgement, a grid tick), each with the evaluations
        a feed sample by sample would make inside it (``Evaluator.observe_segment``)."""
        buf = self._buf
        if not buf:
            return
        self._buf = []
        run = buf[0].run
        clock = self._clocks[run]
        # every sample of a batch has the keys of the one before it (feed): the names of the first
        self._ev.vouch_names(buf, tuple(buf[0].metrics))
        interval = self.interval
        times = [s.t for s in buf]
        n, i = len(buf), 0
        while i < n:
            t = prev = times[i]
            if t != clock.t:
                self._next_time(run, clock, t)
            cover = self._coverage_at.get(run, -math.inf)
            j = i + 1
            while j < n:
                u = times[j]
                if u != prev:
                    if prev >= cover or (prev // interval + 1) * interval < u:
                        break
                    prev = u
                j += 1
            events = self._ev.observe_segment(run, buf, i, j)
            if events:
                self._record(run, events)
            clock.pending = True
            clock.samples += j - i
            for k in range(j - 1, i - 1, -1):  # the segment's last step, and its first if none yet
                if buf[k].step is not None:
                    clock.last_step, clock.last_step_t = buf[k].step, buf[k].t
                    if clock.first_step is None:
                        clock.first_step = next(s.step for s in buf[i : k + 1] if s.step is not None)
                    break
            clock.t = buf[j - 1].t
            i = j
        self._ev.vouch_names(None)

    def _next_time(self, run: str, clock: RunClock, t: float) -> None:
        """A sample of ``run`` at a new time ``t``: evaluate the samples at ``clock.t``, tick the grid."""
        if t < clock.t:
            raise ValueError(f"run {run!r} goes back in time ({t!r} after {clock.t!r})")
        if clock.pending:  # inline of _advance's common case: evaluate, no grid point to tick
            now = clock.t
            if self._health or now >= self._coverage_at.get(run, -math.inf):
                events = self._evaluate(run, now)
            else:  # (_evaluate with no source down and no coverage due)
                events = self._evaluate_run(run, now)
            if events:
                self._record(run, events)
            clock.pending = False
            if (clock.t // self.interval + 1) * self.interval < t:
                self._advance(run, clock, t)
        clock.t = t

    @property
    def end(self) -> float:
        """The latest sample time seen, over all runs (-inf before any)."""
        self.flush()
        return max((c.t for c in self._clocks.values()), default=-math.inf)

    def advance_to(self, until: float) -> None:
        """Bring every run's clock to ``until`` (inclusive): ticks on the way and one at ``until``."""
        self.flush()
        for run, clock in self._clocks.items():
            if until > clock.t:
                self._advance(run, clock, until)
                self._tick(run, until)
                clock.t = until
            elif clock.pending:
                self._tick(run, clock.t)
                clock.pending = False

    def finish(self, end: float | None = None) -> list[ReplayEvent]:
        """Run every clock to the end of the trace (or ``end``) and return all events in time order."""
        self.flush()
        self.trace_end = self.end
        stop = self.trace_end if end is None else end
        if stop > -math.inf:
            self.advance_to(stop)
        for run, summary in self.summaries.items():
            summary.take(self._clocks[run])
        if end is None and stop > -math.inf:
            self._run_on(stop + RUN_ON)
        for run, summary in self.summaries.items():
            clock = self._clocks[run]
            summary.stats = self._ev.stats(run)
            summary.coverage, summary.blind, found = self._check_coverage(run, clock.t, frozenset())
            if found:
                self._record(run, found)
        self.events.sort(key=lambda e: e.t)  # stable: each run's events stay in order
        return self.events

    # ---- the clock -------------------------------------------------------------------------
    def _run_on(self, horizon: float) -> None:
        """After the trace: tick each run whose data armed a timer, on the grid, until none is left."""
        step, armed_until = self.interval, self._ev.armed_until
        for _ in range(RUN_ON_TICKS):
            due, run = min(
                ((d, r) for r, c in self._clocks.items() if c.t < (d := armed_until(r)) <= horizon),
                default=(math.inf, None),
            )
            if run is None:
                return
            clock = self._clocks[run]
            clock.t = max(math.ceil(due / step) * step, clock.t)
            self._tick(run, clock.t)

    def _advance(self, run: str, clock: RunClock, until: float) -> None:
        """Evaluate the samples at ``clock.t``, then tick the grid strictly between it and ``until``."""
        if clock.pending:
            events = self._evaluate(run, clock.t)
            if events:
                self._record(run, events)
            clock.pending = False
        step = self.interval
        k = int(clock.t // step) + 1
        if k * step >= until:
            return  # the common case: no grid point before the next sample
        quiet_until = self._ev.quiet_until
        outage = self._outages.in_outage
        while k * step < until:
            quiet = -math.inf if self._health and outage(run, k * step) else quiet_until(run)
            if quiet > k * step:
                if quiet >= until:
                    break
                k = max(k + 1, math.ceil(quiet / step))  # nothing can happen before ``quiet``
                continue
            self._tick(run, k * step)
            k += 1

    def _tick(self, run: str, now: float) -> None:
        events = self._evaluate(run, now)
        if events:
            self._record(run, events)

    def _record(self, run: str, events: list[AlertEvent]) -> None:
        for ev in events:
            rev = to_replay_event(ev)
            self.events.append(rev)
            if rev.state == AlertState.FIRING:
                summary = self.summaries[run]
                summary.fired[rev.severity] += 1
                summary.rules_fired[rev.rule] += 1
            if self._on_event is not None:
                self._on_event(rev)


def replay(
    samples: Iterable[Sample],
    rules: Sequence[RuleSpec] | Callable[[str], Iterable[RuleSpec]],
    interval: float = DEFAULT_INTERVAL,
    end: float | None = None,
    metrics_profile: str | None = AUTO,
) -> ReplayResult:
    r = Replayer(rules, interval, metrics_profile=metrics_profile)
    r.feed_all(samples)
    events = r.finish(end)
    return ReplayResult(events, r.summaries)
