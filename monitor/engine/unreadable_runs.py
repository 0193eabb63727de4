"""Runs a source could not read while it read the rest of their watch (``PollResult.unreadable``: a
damaged event file at a byte, an answer over a limit): one bad run never blinds its watch.

Each such run gets its own ``source_unavailable`` (the run's alert, not the watch's: it names the file
and byte, or the limit), through the same lifecycle as a whole source's outage: pending for the watch's
``unavailable_after``, then firing; then ``source_down``, critical, after ``unavailable_page_after`` (a
damaged file does not heal by itself, and a run herowatch cannot read must reach a human). The rules
fed by that source are frozen for that run alone meanwhile (no stall page for a run herowatch cannot
read). A run read cleanly again resolves both. A source that failed as a whole this poll says nothing
new about its runs: their state is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from alerts.model import Finding
from monitor.config.schema import Watch
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.engine.source_health import down_rule, source_rule
from monitor.rules.spec import RuleSpec
from monitor.sources.base import PollResult


def _rules(kind: str, watch: Watch) -> tuple[RuleSpec, RuleSpec]:
    """As for a whole source: ``source_unavailable`` (a warning) after ``unavailable_after``, then
    ``source_down`` (critical: it pages under any route) after ``unavailable_page_after``."""
    page_after = max(watch.unavailable_page_after, watch.unavailable_after)
    return source_rule(kind, watch.unavailable_after), down_rule(kind, page_after)


def _same(a: RuleSpec, b: RuleSpec) -> bool:
    return a.name == b.name and a.labels.get("source") == b.labels.get("source")


class UnreadableRuns:
    def __init__(self) -> None:
        self._now: dict[str, dict[tuple[str, str], str]] = {}  # watch -> (source, run) -> why

    def note(
        self, evaluator: Evaluator, watch: Watch, results: Mapping[str, PollResult], now: float
    ) -> dict[str, list[AlertEvent]]:
        """This poll's unreadable runs of ``watch``, as ``source_unavailable`` changes, by run."""
        before = self._now.get(watch.name, {})
        current = {
            (kind, run): why
            for kind, res in results.items()
            if not res.error
            for run, why in res.unreadable.items()
        }
        for (kind, run), why in before.items():
            if kind not in results or results[kind].error:
                current.setdefault((kind, run), why)
        events: dict[str, list[AlertEvent]] = {}

        def add(run: str, event: AlertEvent | None) -> None:
            if event is not None:
                events.setdefault(run, []).append(event)

        for (kind, run), why in sorted(current.items()):
            for rule in _rules(kind, watch):
                add(run, evaluator.apply(rule, run, Finding(True, reason=why[:300]), now))
        for kind, res in sorted(results.items()):
            if res.error:
                continue
            read_again = sorted({r.run for r in res.runs} - {r for k, r in current if k == kind})
            for rule in _rules(kind, watch):
                for run in read_again:  # an alert open from before a restart is resolved too
                    if any(_same(a.key.rule, rule) for a in evaluator.open_alerts(run)):
                        add(
                            run,
                            evaluator.apply(rule, run, Finding(False, reason="the run is read again"), now),
                        )
        self._now[watch.name] = current
        return events

    def sources_of(self, watch: str, run: str) -> frozenset[str]:
        """The sources that cannot read ``run`` now: its rules fed only by them are frozen."""
        return frozenset(kind for kind, r in self._now.get(watch, {}) if r == run)

    def why(self, watch: str, run: str) -> str | None:
        found = [why for (_, r), why in sorted(self._now.get(watch, {}).items()) if r == run]
        return "; ".join(found) or None

    def forget(self, watch: str) -> None:
        self._now.pop(watch, None)
