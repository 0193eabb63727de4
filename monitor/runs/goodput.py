"""Goodput (ETTR, effective training time ratio): the share of a run's wall time spent in productive
training, and where the rest went.

Pure: fed every observation of one run in time order (``observe(t, step, state)``);
``report(now)`` says where the wall time since the run was first seen went, without changing the
tracker; ``to_dict``/``from_dict`` persist it (in ``runs.stats``) so it survives a restart of herowatch.

Every second of wall time lands in exactly one bucket, so the buckets add up to the wall time (the
names of Google's ml-goodput-measurement badput types in brackets):

- ``productive``: step intervals at the run's normal cadence, less the work later redone;
- ``data_loading`` (data loading): the part of those intervals the steps waited for data, where the run
  logs it (goodput_book.py);
- ``checkpoint`` (checkpoint save), ``evaluation`` (eval), ``paused`` (other overhead): a gap between
  steps longer than ``SLOW_FACTOR`` x the cadence (the median step interval) that cost less than
  ``STALL_AFTER``, booked by what the run shows of it (goodput_pauses.py);
- ``startup`` (program start-up, checkpoint restore): from the start of a process to its first step,
  where the source says when the process started (``started``), and from the first sight of a run to
  its first step;
- ``stalled`` (hung): no step for longer than that while the run reports running (an incident), from
  the last step to the next one, or to the kill or exit that ended it;
- ``restarting`` (infrastructure recovery): from the exit of the old process (a step rewind without a
  state change, or crashed -> running) to the start of the new one (to its first step when the
  source does not say when it started);
- ``down``: not running (crashed, failed, killed, preempted) until it runs again; counted from the
  last step before it went down, or from the end of the hang it went down from;
- ``rework`` (wasted progress from disruption): the steps redone after a rewind (steps x the
  cadence), moved out of ``productive``;
- ``source_blind``: of the time no step accounts for, the part herowatch could not read the run's source
  (goodput_book.py): booked as that instead of any of the above.

Of an abnormal gap one cadence's worth counts as productive (the step that ended it did compute).
The clock starts at the first step or run state herowatch sees (a run first seen running, with no step
yet, is starting up): times before are unknown and not counted, and a source that reads an hour of
metrics back does not make the run an hour old. States count from when they were observed: a source
reports a run's state once per poll, not on every history row.

Time is booked by what happened, in order, and never relabelled: a hang that was shown as stalled
while it lasted stays stalled when a kill or a restart ends it. The exit of a hung process is the
first sign of it: a down state, or the start of the new process (``started``: a step's time less the
process's uptime, e.g. W&B's ``_runtime``, when that start lies after the last old step). Without
either, herowatch could not see the restart: the hang is booked up to the first new step.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection
from typing import Any, Literal

from monitor.runs.goodput_book import BUCKETS, LOST, MAX_INCIDENTS, Book, DataWait, Span, r3
from monitor.runs.goodput_pauses import PauseKinds, marks_of
from monitor.samples import DOWN_STATES, ENDED_STATES, RunState

SLOW_FACTOR = 5.0  # a gap longer than this x the expected time is not normal cadence
STALL_AFTER = 300.0  # seconds lost in one gap: below, a pause (overhead); above, a stall (incident)
MIN_INCIDENT = 60.0  # a startup is listed as an incident only when it lost at least this
MIN_INTERVALS = 4  # step intervals needed before the cadence is trusted
WINDOW = 128  # recent per-step intervals kept for the median

UPTIME_KEY = "_runtime"  # seconds since the process that logged a row started (W&B's key; the sim's)
__all__ = ["BUCKETS", "LOST", "MAX_INCIDENTS", "Goodput"]
_PLAIN = ("start", "acct", "mode", "since", "ended_at", "last_step", "last_step_t", "steps_redone")
Mode = Literal["init", "running", "restarting", "down", "ended"]  # where the account of a run is


class Goodput(Book):
    def __init__(self) -> None:
        super().__init__()
        self.start: float | None = None  # first observation
        self.mode: Mode = "init"
        self.since: float | None = None  # start of the current restart or down incident
        self.ended_at: float | None = None
        self.last_step_t: float | None = None
        self.intervals: list[float] = []  # seconds per step, normal gaps: the last WINDOW (a list)
        self.steps_redone = 0
        self.last_marks: frozenset[str] = frozenset()  # what the last step logged (an eval, a save) ...
        self._unread: list[Collection[str]] = []  # ... once these keys of its rows are read (when needed)
        self.pauses = PauseKinds()  # the run's save cadence, learned from its pauses
        self._median: float | None = None
        self._stale = 0

    # ---- the cadence -------------------------------------------------------------------------
    def cadence(self) -> float | None:
        """The median seconds per step of recent normal intervals, once there are enough of them."""
        if len(self.intervals) < MIN_INTERVALS:
            return None
        if self._median is None or self._stale >= 8:
            self._median, self._stale = statistics.median(self.intervals), 0
        return self._median

    def _interval(self, per_step: float) -> None:
        self.intervals.append(per_step)
        if len(self.intervals) > WINDOW:
            del self.intervals[0]
        self._stale += 1
        if len(self.intervals) <= MIN_INTERVALS:
            self._median = None

    # ---- observations ------------------------------------------------------------------------
    def observe(
        self,
        t: float,
        step: int | None = None,
        state: RunState | None = None,
        started: float | None = None,
        keys: Collection[str] = (),
        wait: DataWait | None = None,
    ) -> None:
        """``started``: when the process that logged this step started, where the source says;
        ``keys``: the metrics the step's row logged (what they show happened at it: goodput_pauses);
        ``wait``: what it logged of the time its steps waited for data (goodput_book.py)."""
        if self.start is None:
            if step is None and state is None:
                return  # a metric read from far back (Prometheus) is not the start: a step or a state is
            self.start = self.acct = t
        t = max(t, self.acct)  # a late observation is taken as happening now
        self._mark = (self.acct, dict(self.totals))
        self._observe(t, step, state, started, keys, wait)
        self._book()

    def blind(self, since: float) -> None:
        if self.start is not None and self.mode != "ended":  # an ended run has nothing left to see
            super().blind(since)

    def _observe(
        self,
        t: float,
        step: int | None,
        state: RunState | None,
        started: float | None,
        keys: Collection[str],
        wait: DataWait | None,
    ) -> None:
        if state in DOWN_STATES:
            self._go_down(t)
        elif state in ENDED_STATES:
            self._end(t)
        elif state == RunState.RUNNING and self.mode in ("down", "ended"):
            self._back_up(t)
        if step is not None:
            self._step(t, step, started, keys, wait)

    def _hung_until(self, t: float) -> None:
        """The process ended at ``t``: a hang seen as one (no step for longer than ``STALL_AFTER`` past
        the cadence) is booked stalled up to there, an incident of its own. A shorter gap is left to the
        restart or downtime that follows (booked from the last step, as before)."""
        if self.mode != "running" or self.acct is None:
            return
        gap = t - self.acct
        worked = min(gap, self.cadence() or 0.0)
        lost = gap - worked
        if lost - self.blind_of(self.acct, lost) <= STALL_AFTER:
            return
        seen = self._lose("stalled", self.acct, lost)
        self.totals["productive"] += worked
        self._incident("stall", self.acct, t, seen, self.last_step)
        self.acct = t
        self._book()

    def _go_down(self, t: float) -> None:
        if self.mode == "down":
            return
        self._hung_until(t)
        if self.mode == "restarting":  # the restore itself failed: it ends, the downtime begins
            self._close_restart(t, None)
        elif self.mode == "ended":
            self._lose("down", self.acct, t - self.acct)
            self.acct = t
        self.mode, self.since = "down", self.acct  # down since the last progress

    def _back_up(self, t: float) -> None:
        since = self.since if self.mode == "down" else self.acct
        seen = self._lose("down", since, t - since)
        self._incident("down", since, t, seen, self.last_step)
        self.mode, self.since, self.acct, self.ended_at = "restarting", t, t, None

    def _end(self, t: float) -> None:
        if self.mode == "ended":
            return
        if self.mode == "down":
            since = self.since if self.since is not None else self.acct
            seen = self._lose("down", since, t - since)
            self._incident("down", since, t, seen, self.last_step)
        elif self.mode == "restarting":
            self._close_restart(t, None)
        elif self.mode == "running":
            self._gap(t, 1, None)
        elif self.mode == "init":
            self._lose("startup", self.acct, t - self.acct)
        self.mode, self.acct, self.ended_at = "ended", t, t

    def _step(
        self, t: float, step: int, started: float | None, keys: Collection[str], wait: DataWait | None
    ) -> None:
        if self.mode in ("down", "ended"):  # a step while reported down: the state was stale
            self._back_up(t)
        if self.mode == "init":
            seen = self._lose("startup", self.acct, t - self.acct)
            if seen >= MIN_INCIDENT:
                self._incident("startup", self.acct, t, seen, step)
        elif self.mode == "restarting":
            self._close_restart(t, step, started)
        elif step == self.last_step:
            if keys:
                self._unread.append(keys)  # the same step again (its eval row, logged apart)
            return
        elif self.last_step is not None and step < self.last_step:
            # A rewind without a state change: the old process ended when the new one started, if the
            # source says when; else the restart was not seen and a hang lasts up to this step.
            seen = started is not None and self.acct < started <= t
            self._hung_until(started if seen else t)
            self.since = self.acct  # restarted since the exit (or the last step, after a short gap)
            self._close_restart(t, step, started if seen else None)
        else:
            self._gap(t, step - (self.last_step or 0), self.last_step, keys, wait)
        self.mode, self.last_step, self.last_step_t, self.acct = "running", step, t, t
        self.last_marks, self._unread = frozenset(), [keys] if keys else []

    def _marks(self) -> frozenset[str]:
        """What the last step's rows show happened at it (read only when a pause asks)."""
        if self._unread:
            self.last_marks |= marks_of(k for keys in self._unread for k in keys)
            self._unread = []
        return self.last_marks

    def _gap(
        self,
        t: float,
        steps: int,
        at_step: int | None,
        keys: Collection[str] = (),
        wait: DataWait | None = None,
    ) -> None:
        gap = t - self.acct
        m = self.cadence()
        expected = steps * m if m is not None else None
        if expected is None or gap <= SLOW_FACTOR * expected:
            self._worked(gap, steps, gap, wait)
            if steps > 0 and gap > 0:
                self._interval(gap / steps)
            return
        lost = gap - expected
        self._worked(expected, steps, gap, wait)
        blind = self.blind_of(self.acct, lost)
        if lost - blind > STALL_AFTER:
            seen = self._lose("stalled", self.acct, lost)
            self._incident("stall", self.acct, t, seen, at_step)
        elif blind > 0:  # partly unseen: what the pause was is not known, and it teaches nothing
            kind = self.pauses.peek(at_step, self.acct, steps, m * steps, marks_of(keys) | self._marks())
            self._lose(kind, self.acct, lost)
        else:
            slack = m * steps
            for bucket, sec in self.pauses.split(
                at_step, self.acct, lost, steps, slack, marks_of(keys) | self._marks()
            ).items():
                self.totals[bucket] += sec
            self.ledger.pause(self.acct, t, lost, at_step)
            self._interval(gap / steps)  # recurring pauses are the run's cadence too; the median holds

    def _close_restart(self, t: float, step: int | None, started: float | None = None) -> None:
        """The restart from the exit (``since``) ended at ``t``: restarting up to the new process's start
        (``started``, where the source says), start-up (and restore) from there to its first step."""
        since = self.since if self.since is not None else self.acct
        gap = t - since
        m = self.cadence() or 0.0
        worked = min(gap, m) if step is not None else 0.0  # the first new step did compute
        lost = gap - worked
        waiting = lost if started is None else min(lost, max(0.0, started - since))
        self.totals["productive"] += worked
        seen = self._lose("restarting", since, waiting) + self._lose(
            "startup", since + waiting, lost - waiting
        )
        redone, rework = 0, 0.0
        if step is not None and self.last_step is not None and step <= self.last_step:
            redone = self.last_step - step + 1
            rework = min(redone * m, self.totals["productive"])
            self.totals["productive"] -= rework
            self.totals["rework"] += rework
            self.steps_redone += redone
        self._incident("restart", since, t, seen + rework, step, redone)
        self.mode, self.since, self.acct = "running", None, t

    # ---- the report --------------------------------------------------------------------------
    def open_stretch(
        self, now: float
    ) -> tuple[float | None, dict[str, float], dict[str, Any] | None, list[Span]]:
        """Not accounted yet: (from when, seconds per bucket up to ``now``, the ongoing incident, the
        spans of it herowatch could not see)."""
        add, ongoing, holes = self._open(now)
        return self.acct, add, ongoing, holes

    def _open(self, now: float) -> tuple[dict[str, float], dict[str, Any] | None, list[Span]]:
        """The still-open stretch [acct, now], classified without changing anything."""
        add, holes = dict.fromkeys(BUCKETS, 0.0), []
        if self.acct is None or self.mode == "ended" or now <= self.acct:
            return add, None, holes
        tail = now - self.acct
        if self.mode in ("down", "restarting"):
            since = self.since if self.since is not None else self.acct
            bucket = "down" if self.mode == "down" else "restarting"
            seen = self.split(bucket, self.acct, tail, add, holes)
            kind = "down" if self.mode == "down" else "restart"
            return add, self._ongoing(kind, since, seen + (self.acct - since)), holes
        if self.mode == "init":
            seen = self.split("startup", self.acct, tail, add, holes)
            return add, self._ongoing("startup", self.acct, seen) if seen >= MIN_INCIDENT else None, holes
        m = self.cadence()
        if m is None or tail <= SLOW_FACTOR * m:
            add["productive"] = tail
            return add, None, holes
        add["productive"] = m
        lost = tail - m
        if lost - self.blind_of(self.acct, lost) > STALL_AFTER:
            seen = self.split("stalled", self.acct, lost, add, holes)
            return add, self._ongoing("stall", self.acct, seen), holes
        self.split(
            self.pauses.peek(self.last_step, self.acct, 1.0, m, self._marks()), self.acct, lost, add, holes
        )
        return add, None, holes

    def report(self, now: float) -> dict[str, Any]:
        """Where the wall time from the first sight of the run to ``now`` (or its end) went."""
        add, ongoing, _ = self._open(now)
        totals = {k: self.totals[k] + add[k] for k in BUCKETS}
        wall = sum(totals.values())
        seen = wall - totals["source_blind"]  # the ratio is of the time herowatch could see
        incidents = [dict(i, ongoing=False) for i in self.incidents]
        counts = dict(self.counts)
        if ongoing is not None:
            incidents.append(dict(ongoing, ongoing=True))
            counts[ongoing["kind"]] = counts.get(ongoing["kind"], 0) + 1
        return {
            "ratio": (totals["productive"] / seen) if seen > 0 else None,
            "wall_seconds": r3(wall),
            "productive_seconds": r3(totals["productive"]),
            "lost_seconds": {k: r3(totals[k]) for k in LOST},
            "steps_redone": self.steps_redone,
            "median_step_seconds": self.cadence(),
            "incident_counts": counts,
            "incidents": incidents,
            "state": self.mode,
            "since": self.start,
        }

    # ---- persistence -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "v": 1,
            **{k: getattr(self, k) for k in _PLAIN},
            "intervals": tuple([round(x, 3) for x in self.intervals]),  # (r3 inline; a tuple: untracked)
            "totals": {k: round(v, 3) for k, v in self.totals.items()},
            "incidents": list(self.incidents),
            "counts": dict(self.counts),
            "last_marks": tuple(sorted(self._marks())),
            "pauses": self.pauses.to_dict(),
            "unseen": self.unseen_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Goodput:
        """From ``to_dict``; a dict stored before a bucket or field existed leaves it at its start."""
        g = cls()
        if not data or data.get("v") != 1:
            return g
        for k in _PLAIN:
            setattr(g, k, data.get(k, getattr(g, k)))
        g.intervals.extend(float(x) for x in data.get("intervals", ()))
        del g.intervals[:-WINDOW]
        g.totals.update({k: float(v) for k, v in (data.get("totals") or {}).items() if k in g.totals})
        g.incidents = [dict(i) for i in data.get("incidents", ())]
        g.counts = {k: int(v) for k, v in (data.get("counts") or {}).items()}
        g.last_marks = frozenset(str(x) for x in data.get("last_marks", ()))
        g.pauses = PauseKinds.from_dict(data.get("pauses"))
        g.load_unseen(data.get("unseen"))
        return g
