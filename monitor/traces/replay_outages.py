"""Source outages in a replayed trace: the live engine's outage model (``engine.source_health``) fed
from the trace's ``source_error`` lines and the lines after them, one ``SourceHealth`` per watch.

Owned by the ``Replayer``: it tells each sample (``note``) and asks, when it evaluates a run, what
cannot be read and what is settling (``blind``) and for the ``source_unavailable`` changes (``check``).
"""

from __future__ import annotations

from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.engine.source_health import Settle, SourceHealth, source_rule
from monitor.samples import TERMINAL_STATES, Sample

NOTHING: tuple[frozenset[str], dict[str, Settle]] = (frozenset(), {})


class ReplayOutages:
    def __init__(self, evaluator: Evaluator, after: float) -> None:
        self._ev = evaluator
        self._after = after  # an outage this long is announced
        self.health: dict[str, SourceHealth] = {}  # watch -> its sources' health (only once in trouble)
        self.scope: dict[str, str] = {}  # run -> its watch
        self._states: dict[str, str | None] = {}

    def note(self, sample: Sample) -> list[AlertEvent]:
        """Source errors and recoveries, as the live engine's polls see them."""
        scope = self.scope.get(sample.run)
        if scope is None:
            scope = self.scope[sample.run] = (sample.labels or {}).get("watch") or "trace"
        if sample.state is not None:
            self._states[sample.run] = sample.state
        source = sample.source or "unknown"
        health = self.health.get(scope)
        if sample.source_error is None and (health is None or not health.in_outage(source, sample.t)):
            if health is not None:
                health.answered(source, sample.t)  # an outage after it begins after this row
            return []
        if health is None:
            health = self.health[scope] = SourceHealth(after=self._after)
        health.polled(source, sample.t, sample.source_error)
        return self.check(scope, sample.t)

    def troubled(self, run: str) -> SourceHealth | None:
        """The health of the run's watch, if a source of it was ever in trouble."""
        return self.health.get(self.scope.get(run, "")) if self.health else None

    def blind(self, run: str, now: float) -> tuple[frozenset[str], dict[str, Settle]]:
        """(sources that cannot be read, sources settling after an outage -> since, began) for ``run``."""
        health = self.troubled(run)
        if health is None:
            return NOTHING
        return health.unavailable(now), health.settling(now)

    def in_outage(self, run: str, now: float) -> bool:
        health = self.troubled(run)
        return health is not None and any(health.in_outage(s, now) for s in health.sources())

    def check(self, scope: str, now: float) -> list[AlertEvent]:
        health = self.health[scope]
        runs = [r for r, s in self.scope.items() if s == scope]
        affected = [r for r in runs if self._states.get(r) not in TERMINAL_STATES]
        events = []
        for kind in health.sources():
            finding = health.finding(kind, now, affected, any_known=True)
            event = self._ev.apply(source_rule(kind, self._after), scope, finding, now)
            if event is not None:
                events.append(event)
        return events
