"""The live engine's side of coverage: what its sources say they could not find, each run's coverage
after every poll, and the ``watching_blind`` alerts (``blindness``) applied through the evaluator like
``source_unavailable`` and ``clock_skew``. The coverage is stored with the run's stats for the API and
the run page; the arrivals it is judged from are part of the detector snapshot (``RunRules``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from alerts.model import Finding
from monitor.config.schema import Watch
from monitor.engine.blindness import (
    Blind,
    absent_watched,
    apply,
    blind_rule,
    causes,
    describe,
    open_causes,
    run_findings,
    watch_findings,
)
from monitor.engine.coverage import FIRST_SCRAPE, RunCoverage
from monitor.engine.coverage_stored import stored as stored_coverage
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.profiles import Vocabulary
from monitor.samples import TERMINAL_STATES
from monitor.storage import alerts_repo

MAX_LOGGED = 2000  # keys remembered per run
KEYS_STORED = 40  # run keys kept with the coverage, for the run page's "the run logs ..."


def promised(watch: Watch) -> frozenset[str]:
    """What the watch's sources deliver for every run: step and state, the aliases they query."""
    out: set[str] = set()
    for cfg in watch.targets().values():
        promises = getattr(cfg, "promises", None)
        if promises is not None:
            out |= promises()
    return frozenset(out)


class BlindWatch:
    def __init__(self, evaluator: Evaluator, vocabulary: Vocabulary) -> None:
        self.evaluator = evaluator
        self.vocabulary = vocabulary
        self._gaps: dict[str, dict[str, dict[str, str]]] = {}  # run -> source -> input -> why
        self._blind: dict[str, list[Blind]] = {}  # run -> its blindness by cause
        self._findings: dict[str, list[Finding]] = {}  # run or watch -> its latest watching_blind findings
        self._logged: dict[str, set[str]] = {}  # run -> keys its sources saw it log (read or not)
        self._promised: dict[str, tuple[Watch, frozenset[str]]] = {}  # watch -> (that Watch, promised(it))

    def note_gaps(self, source: str, gaps: Mapping[str, Mapping[str, str]]) -> None:
        for run, by_input in gaps.items():
            self._gaps.setdefault(run, {})[source] = dict(by_input)

    def note_logged(self, logged: Mapping[str, Iterable[str]]) -> None:
        for run, keys in logged.items():
            known = self._logged.setdefault(run, set())
            if len(known) < MAX_LOGGED:
                known.update(keys)

    def keys(self, run: str) -> list[str]:
        """What the run logs, as logged: the keys read (vocabulary) and those its sources saw."""
        return sorted(set(self.vocabulary.keys(run)) | self._logged.get(run, set()))

    def promised(self, watch: Watch) -> frozenset[str]:
        """``promised(watch)``, worked out once per configured watch (not per run and poll)."""
        held = self._promised.get(watch.name)
        if held is None or held[0] is not watch:  # first asked, or the config was loaded again
            held = self._promised[watch.name] = (watch, promised(watch))
        return held[1]

    def gaps(self, run: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for by_input in self._gaps.get(run, {}).values():
            out.update(by_input)
        return out

    def check_run(
        self, watch: Watch, run: str, now: float, unavailable: frozenset[str], kind: str | None = None
    ) -> tuple[list[AlertEvent], RunCoverage, dict[str, Any]]:
        """The run's coverage now, its ``watching_blind`` events (one alert per cause: each essential
        input it misses, and the optional inputs that stopped) and what to store. ``kind``: what the run
        is (rules of another kind's pack expect none of their metrics of it)."""
        grace = max(watch.unavailable_after, FIRST_SCRAPE)  # a queried input's first scrape may be due
        cov = self.evaluator.coverage(run, now, unavailable, self.promised(watch), kind, grace)
        keys = self.keys(run)
        gaps = self.gaps(run)
        blind, by_cause = None, []
        if cov.state == "blind":  # else no input is blind (a blind input makes its rules and the run blind)
            renames = self.vocabulary.renames(run)
            shapes = self.vocabulary.shapes(run)
            silenced = absent_watched(self.evaluator.detectors(run))
            blind = describe(cov, keys, gaps, renames, silenced, shapes)
            by_cause = causes(cov, keys, gaps, renames, silenced, shapes)
        self._blind[run] = by_cause
        findings = self._findings[run] = run_findings(by_cause, watch.name, open_causes(self.evaluator, run))
        events = apply(self.evaluator, run, findings, now)
        stored = {
            **stored_coverage(cov),
            "summary": blind.text if blind is not None else None,
            "gaps": gaps,
            "keys": tuple(keys[:KEYS_STORED]),  # a tuple of strings: untracked by the collector
        }
        return events, cov, stored

    def check_watch(
        self, watch: Watch, runs: Iterable[str], states: Mapping[str, str | None], now: float
    ) -> list[AlertEvent]:
        """The watch's ``watching_blind`` events: one alert per cause most of its running runs share."""
        running = [r for r in runs if states.get(r) not in TERMINAL_STATES]
        blinds = [b for r in running for b in self._blind.get(r, ())]
        findings = watch_findings(watch.name, len(running), blinds, open_causes(self.evaluator, watch.name))
        self._findings[watch.name] = findings
        return apply(self.evaluator, watch.name, findings, now)

    def refresh(self, s: Session, scope: str) -> None:
        """Keep each firing ``watching_blind``'s text true as rules go blind or see again (run or watch)."""
        rule = blind_rule()
        active = {f.extra_labels.get("input"): f for f in self._findings.get(scope, ()) if f.active}
        if not active:
            return
        for alert in self.evaluator.open_alerts(scope):
            if alert.key.rule.name != rule.name or alert.ref is None:
                continue
            finding = active.get(alert.key.labels.get("input"))
            if finding is not None:
                text = self.evaluator.annotations(rule, scope, finding)
                alerts_repo.refresh_annotations(s, alert.ref, text, finding.value, None)

    def forget(self, run: str) -> None:
        self._gaps.pop(run, None)
        self._blind.pop(run, None)
        self._findings.pop(run, None)
        self._logged.pop(run, None)
