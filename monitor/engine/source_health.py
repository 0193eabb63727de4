"""The outage model, one for the live engine and for replay: which sources cannot be read now, and
``source_unavailable``, herowatch's own alert that says so.

While a source cannot be read, the rules it feeds are frozen at once (``Evaluator.evaluate`` with
``unavailable``): an outage is never a stalled run. If it lasts longer than ``unavailable_after``, one
``source_unavailable`` alert per source and watch says so, listing the runs it hides (finished runs
are not hidden by anything). A poll that hangs counts as failing once it has run longer than the
source's own time limit, so the alert comes on time even while the poll is still stuck in retries.

Hysteresis: an outage ends only once the source has answered cleanly for ``settle_for`` (as long as it
had failed, between ``after`` and 5x it: 2 to 10 minutes by default); an error meanwhile continues it,
so a flickering source is one alert, one message. While it settles the source is readable (fresh data
is judged) but the silence rules (a stall: ``Detector.silence``) wait, and after it they wait on for
the backlog: until the run's newest step is as recent as the time the source came back, at most half
as long as the outage lasted (at least the settling, at most ``MAX_CATCH_UP``). Late steps with their
own timestamps inside the outage are progress then (``settling(now)``: source -> ``Settle``, since when,
and when the outage began). Only a silence the outage can explain is held so: one that began clearly
before the outage (the run's newest step older than the outage's start by ``MARGIN_STEPS`` of its step
times, at least ``MIN_MARGIN``) was seen while the source answered, and is judged as soon as the source
answers again (``waits_for_backlog``): a hang older than the outage pages then, not after the settling.

Escalation: an outage that has *failed* for ``page_after`` (never read counts) is also ``source_down``,
critical (``down_finding``); the settling does not count towards it, and once due it ends with
``source_unavailable``, after the same settling: one outage, one incident.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

from alerts.model import Finding, Severity
from monitor.durations import format_duration
from monitor.rules.spec import RuleSpec

DEFAULT_AFTER = 120.0
DEFAULT_PAGE_AFTER = 600.0  # failing this long (or never read): source_down, critical
SETTLE_TIMES = 5.0  # an outage settles after clean answers for as long as it failed, up to 5 x ``after``
MAX_CATCH_UP = 3600.0  # after an outage, the silence rules wait for the backlog at most this long
# a silence that began this long before the outage did is not the outage's: MARGIN_STEPS of the run's step
# times, at least MIN_MARGIN (a step read a poll or two before the outage, late as a tracker delivers it)
MARGIN_STEPS = 5.0
MIN_MARGIN = 180.0
SCOPE = {"scope": "watch"}  # the watch carries its sources' alerts (kept apart from a same-named run)
MAX_LISTED = 10


class SourceHealthSpec(RuleSpec):
    kind: Literal["source_unavailable"] = "source_unavailable"
    own: ClassVar[bool] = True


@functools.cache  # built once per source kind and wait, not per poll
def source_rule(source: str, after: float = DEFAULT_AFTER) -> SourceHealthSpec:
    return SourceHealthSpec(
        name="source_unavailable",
        kind="source_unavailable",
        severity=Severity.WARNING,
        for_=after,
        labels={"source": source, "category": "herowatch"},
        annotations={
            "summary": f"{{run}}: cannot read {source}: {{reason}}",
            "description": "herowatch cannot read this source. The rules it feeds are paused (no false "
            "stall pages) until it answers again; the listed runs are not watched meanwhile.",
            "runbook_url": "{runbooks}#source-unavailable",
        },
    )


@functools.cache
def down_rule(source: str, after: float = DEFAULT_PAGE_AFTER) -> SourceHealthSpec:
    """``source_down``: the source has failed (or never answered) for ``after``: critical, it pages under
    any route (``source_unavailable`` before it is a warning: a brief outage stays one quiet message)."""
    return SourceHealthSpec(
        name="source_down",
        kind="source_unavailable",
        severity=Severity.CRITICAL,
        for_=after,
        labels={"source": source, "category": "herowatch"},
        annotations={
            "summary": f"{{run}}: {source} unreadable for {format_duration(after)}: {{reason}}",
            "description": "herowatch has not been able to read this source for a long time (or never "
            "has): the runs it feeds are not watched, and no page about them can come. Fix the source "
            "(its credentials, its address) or silence this alert.",
            "runbook_url": "{runbooks}#source-unavailable",
        },
    )


@dataclass
class _Status:
    error: str | None = None
    failing_since: float | None = None  # the outage began (None: no outage)
    failed_at: float | None = None  # the latest failed poll of the outage
    last_error: str | None = None  # its error
    clean_since: float | None = None  # answering again since (the outage settles)
    inflight_since: float | None = None
    catch_up: tuple[float, float] | None = None  # after an outage: (answering since, waiting until)
    answered_at: float | None = None  # the latest clean answer
    began: float | None = None  # the outage's start: the last clean answer before it (else its first failure)


class Settle(NamedTuple):
    """A source that answers again after an outage whose settling (or backlog) is not over."""

    since: float  # it answers again since
    began: float  # the outage began: its last clean answer before it failed (else its first failure)


def waits_for_backlog(stepped: float, cadence: float | None, settles: Iterable[Settle]) -> bool:
    """Does a silence rule wait for these sources (all of a feed's) to settle, for a run whose newest
    step came at ``stepped``, ``cadence`` its usual step interval (None: not known)? While the run has not
    stepped since they answer again its backlog may still be on its way, unless its silence began clearly
    before the outage did (the latest start among them, less ``MARGIN_STEPS`` step times, at least
    ``MIN_MARGIN``): that silence was seen while the source answered, no backlog explains it."""
    settles = list(settles)
    if stepped >= min(s.since for s in settles):
        return False
    if cadence is None or stepped == -math.inf:
        return True  # nothing to tell a silence from a cadence by: wait, as for any outage
    return stepped >= max(s.began for s in settles) - max(MARGIN_STEPS * cadence, MIN_MARGIN)


@dataclass
class SourceHealth:
    """The sources of one watch (or of one replayed trace): what answered, what failed, what hangs."""

    stuck_after: dict[str, float] = field(default_factory=dict)  # source -> longest acceptable poll
    after: float = DEFAULT_AFTER  # an outage this long is announced (the watch's unavailable_after)
    _status: dict[str, _Status] = field(default_factory=dict)
    _awaiting: set[str] = field(default_factory=set)

    def awaiting(self, sources: Iterable[str]) -> None:
        """Taken up (a start, or a takeover): until each source answers once, what herowatch knows of
        its runs is old, so its rules stay frozen (no alert is raised for it meanwhile)."""
        self._awaiting = set(sources)

    def sources(self) -> list[str]:
        return sorted(self._status)

    def started(self, source: str, now: float) -> None:
        st = self._status.setdefault(source, _Status())
        if st.inflight_since is None:
            st.inflight_since = now

    def polled(self, source: str, now: float, error: str | None = None) -> None:
        """A poll of ``source`` ended, at ``now``: with ``error``, or fine."""
        st = self._status.setdefault(source, _Status())
        st.inflight_since = None
        if error:
            st.error, st.last_error, st.failed_at, st.clean_since = error, error, now, None
            if st.failing_since is None:
                st.failing_since = now
                st.began = st.answered_at if st.answered_at is not None else now
            return
        self._awaiting.discard(source)
        st.error, st.answered_at = None, now
        if st.failing_since is not None and st.clean_since is None:
            st.clean_since = now
        self._settle(st, now)

    def answered(self, source: str, now: float) -> None:
        """Data of ``source`` read outside an outage (a replayed trace's rows, which ``polled`` does not
        see): the next outage begins after it."""
        st = self._status.get(source)
        if st is not None and st.failing_since is None:
            st.answered_at = now

    def settle_for(self, st: _Status) -> float:
        """How long the source must answer cleanly before its outage is over: as long as it had failed,
        at least ``after`` (2 minutes by default), at most ``SETTLE_TIMES`` x that."""
        failed = (st.clean_since or 0.0) - (st.failing_since or 0.0)
        return min(SETTLE_TIMES * self.after, max(self.after, failed))

    def _settle(self, st: _Status, now: float) -> None:
        if st.clean_since is None or now - st.clean_since < self.settle_for(st):
            return
        lasted = st.clean_since - (st.failing_since or st.clean_since)
        wait = min(MAX_CATCH_UP, max(lasted / 2, self.settle_for(st)))  # for the backlog: half the outage
        st.catch_up = (st.clean_since, st.clean_since + wait)
        st.failing_since = st.failed_at = st.clean_since = None

    def in_outage(self, source: str, now: float) -> bool:
        """Failing, hung, or not answering cleanly for long enough yet, or waiting for its backlog."""
        st = self._status.get(source)
        if st is None:
            return False
        self._settle(st, now)
        return (
            st.failing_since is not None
            or self._hung(source, st, now)
            or (st.catch_up is not None and now < st.catch_up[1])
        )

    def settling(self, now: float) -> dict[str, Settle]:
        """Sources that answer again but whose outage (or its backlog) is not over: -> since when, and
        when the outage began."""
        out = {}
        for source, st in self._status.items():
            self._settle(st, now)
            began = st.began
            if st.error is None and st.clean_since is not None:
                out[source] = Settle(st.clean_since, st.clean_since if began is None else began)
            elif st.error is None and st.catch_up is not None and now < st.catch_up[1]:
                out[source] = Settle(st.catch_up[0], st.catch_up[0] if began is None else began)
        return out

    def _hung(self, source: str, st: _Status, now: float) -> bool:
        limit = self.stuck_after.get(source)
        return st.inflight_since is not None and limit is not None and now - st.inflight_since > limit

    def unavailable(self, now: float) -> frozenset[str]:
        failing = {s for s, st in self._status.items() if st.error or self._hung(s, st, now)}
        return frozenset(failing | self._awaiting)

    def error(self, source: str, now: float) -> str | None:
        st = self._status.get(source)
        if st is None:
            return None
        if st.error:
            return st.error
        if self._hung(source, st, now):
            return (
                f"no answer for {format_duration(now - (st.inflight_since or now))} (a poll is still running)"
            )
        return None

    def down_finding(
        self, source: str, now: float, affected: Iterable[str], any_known: bool, page_after: float
    ) -> Finding:
        """The ``source_down`` finding: it begins only while the source fails (or hangs) now, so a brief
        outage that answers again before ``page_after`` never pages; once the outage had failed for
        ``page_after`` (the alert fired, or was due), it ends with ``source_unavailable``, after the
        same settling: one outage, one escalation, one resolution for both."""
        st = self._status.get(source)
        if self.error(source, now) is None:
            failed = 0.0
            if st is not None and st.clean_since is not None and st.failing_since is not None:
                failed = (st.failed_at or st.failing_since) - st.failing_since
            if failed < page_after:
                return Finding(False, reason="the source answers", extra_labels=SCOPE)
        return self.finding(source, now, affected, any_known)

    def finding(self, source: str, now: float, affected: Iterable[str], any_known: bool) -> Finding:
        """The ``source_unavailable`` finding for ``source``. ``affected``: the runs it hides (running or
        of unknown state); ``any_known``: whether the watch knows any run at all."""
        error = self.error(source, now)
        runs = sorted(affected)
        st = self._status.get(source)
        if not error and st is not None and st.clean_since is not None and st.failing_since is not None:
            failed = (st.failed_at or st.failing_since) - st.failing_since
            if failed >= self.after:  # announced (or due): the same outage until it has settled
                settle = format_duration(self.settle_for(st))
                error = (
                    f"answers again since {format_duration(now - st.clean_since)} ago, after failing for "
                    f"{format_duration(failed)} ({(st.last_error or 'errors')[:200]}); the outage ends after "
                    f"{settle} of clean answers"
                )
        if not error:
            return Finding(False, reason="the source answers again", extra_labels=SCOPE)
        if any_known and not runs:
            return Finding(False, reason="only finished runs: nothing to watch", extra_labels=SCOPE)
        listed = ", ".join(runs[:MAX_LISTED]) + (
            f" and {len(runs) - MAX_LISTED} more" if len(runs) > MAX_LISTED else ""
        )
        hides = f"; runs not watched meanwhile: {listed}" if runs else "; no run of this watch is known yet"
        return Finding(True, reason=f"{error[:300]}{hides}", extra_labels=SCOPE)
