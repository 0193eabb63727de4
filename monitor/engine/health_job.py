"""``source_unavailable`` on its own schedule: one job for every watch this process holds, so that a
stuck poll cannot delay it (``SourceHealth`` is the outage model). The alerts are evaluated in memory
under the engine lock; only the watches whose alerts change are written, in one transaction, each
fenced by its lease (one whose lease is gone is let go)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session, sessionmaker

from monitor.config.schema import Watch
from monitor.engine.evaluator import AlertEvent
from monitor.engine.isolation import write_rule
from monitor.engine.source_health import down_rule, source_rule
from monitor.samples import TERMINAL_STATES

if TYPE_CHECKING:
    from alerts.clock import Clock
    from monitor.engine.adoption import Adoption
    from monitor.engine.evaluator import Evaluator
    from monitor.engine.lease_keeping import LeaseKeeper
    from monitor.engine.polling import WatchPoller
    from monitor.engine.recording import Recorder
    from monitor.engine.run_memory import RunMemory


class Checked(Protocol):
    """What the health job acts on: the engine's parts (``cycle.Engine``)."""

    watches: dict[str, Watch]
    clock: Clock
    sessions: sessionmaker[Session]
    evaluator: Evaluator
    pollers: dict[str, WatchPoller]  # each watch's source health
    recorder: Recorder
    leases_kept: LeaseKeeper  # fences the watches' writes
    adoption: Adoption  # lets a watch go whose lease is gone

    @property
    def adopted(self) -> frozenset[str]: ...


class HealthJob:
    """``engine``: the parts it acts on (``Checked``); ``memory``: the watches' runs and their states;
    ``lock``: the engine's, held while evaluating."""

    def __init__(self, engine: Checked, memory: RunMemory, lock: threading.RLock) -> None:
        self.engine = engine
        self.memory = memory
        self.lock = lock

    def check(self, watch_name: str | None = None) -> list[AlertEvent]:
        """Evaluate the ``source_unavailable`` alerts of a watch (default: of every watch held) now."""
        eng = self.engine
        names = [watch_name] if watch_name is not None else sorted(eng.adopted)
        with self.lock:
            now = eng.clock.time()
            pending: dict[str, list[AlertEvent]] = {}
            for name in names:
                if name in eng.adopted and (events := self.events(eng.watches[name], now)):
                    pending[name] = events
            if not pending:
                return []
            try:
                with eng.sessions.begin() as s:
                    held = eng.leases_kept.fence(s, list(pending), now)
                    for name in held:
                        eng.recorder.record(s, pending[name], now)
            except Exception:
                for name in pending:  # rolled back: the transitions in memory must not outlive it
                    eng.adoption.let_go(name)
                raise
            for name in set(pending) - held:
                eng.adoption.let_go(name)
            return [e for name in sorted(held) for e in pending[name]]

    def record(self, s: Session, watch: Watch, now: float) -> list[AlertEvent]:
        """In a poll's transaction: the watch's ``source_unavailable`` changes, written."""
        events = self.events(watch, now)
        self.engine.recorder.record(s, events, now)
        return events

    def events(self, watch: Watch, now: float) -> list[AlertEvent]:
        eng = self.engine
        health = eng.pollers[watch.name].health
        runs = self.memory.runs_of(watch.name)
        states = self.memory.states()
        affected = [r for r in runs if states.get(r) not in TERMINAL_STATES]
        events = []
        for kind in watch.targets():
            finding = health.finding(kind, now, affected, any_known=bool(runs))
            event = eng.evaluator.apply(source_rule(kind, watch.unavailable_after), watch.name, finding, now)
            if event is not None:
                events.append(event)
            down = health.down_finding(kind, now, affected, any_known=bool(runs))
            rule = down_rule(kind, max(watch.unavailable_page_after, watch.unavailable_after))
            if (event := eng.evaluator.apply(rule, watch.name, down, now)) is not None:
                events.append(event)
        writes = eng.write_health.finding(watch.name, now)
        event = eng.evaluator.apply(write_rule(watch.unavailable_after), watch.name, writes, now)
        if event is not None:
            events.append(event)
        return events
