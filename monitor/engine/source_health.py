"""The outage model, one for the live engine and for replay: which sources cannot be read now, and
``source_unavailable``, herowatch's own alert that says so.

While a source cannot be read, the rules it feeds are frozen at once (``Evaluator.evaluate`` with
``unavailable``): an outage is never a stalled run. If it lasts longer than ``unavailable_after``, one
``source_unavailable`` alert per source and watch says so, listing the runs it hides (finished runs
are not hidden by anything). A poll that hangs counts as failing once it has run longer than the
source's own time limit, so the alert comes on time even while the poll is still stuck in retries.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from alerts.model import Finding, Severity
from monitor.durations import format_duration
from monitor.rules.spec import RuleSpec

DEFAULT_AFTER = 120.0
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


@dataclass
class _Status:
    error: str | None = None
    failing_since: float | None = None
    inflight_since: float | None = None


@dataclass
class SourceHealth:
    """The sources of one watch (or of one replayed trace): what answered, what failed, what hangs."""

    stuck_after: dict[str, float] = field(default_factory=dict)  # source -> longest acceptable poll
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
        if not error:
            self._awaiting.discard(source)
        if error:
            st.error = error
            if st.failing_since is None:
                st.failing_since = now
        else:
            st.error, st.failing_since = None, None

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

    def finding(self, source: str, now: float, affected: Iterable[str], any_known: bool) -> Finding:
        """The ``source_unavailable`` finding for ``source``. ``affected``: the runs it hides (running or
        of unknown state); ``any_known``: whether the watch knows any run at all."""
        error = self.error(source, now)
        runs = sorted(affected)
        if not error:
            return Finding(False, reason="the source answers again", extra_labels=SCOPE)
        if any_known and not runs:
            return Finding(False, reason="only finished runs: nothing to watch", extra_labels=SCOPE)
        listed = ", ".join(runs[:MAX_LISTED]) + (
            f" and {len(runs) - MAX_LISTED} more" if len(runs) > MAX_LISTED else ""
        )
        hides = f"; runs not watched meanwhile: {listed}" if runs else "; no run of this watch is known yet"
        return Finding(True, reason=f"{error[:300]}{hides}", extra_labels=SCOPE)
