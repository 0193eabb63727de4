"""Who herowatch can ask for stacks, and what it asks: the wrappers' long polls meet the asks here.

In memory, one per ``herowatch serve`` process, shared by the engine (a hang alert asks) and the web
side (a wrapper's poll takes the ask; on-call asks on demand). A node counts as connected while its
wrapper polled within ``live_for`` seconds. An alert's ask goes once per incident of a run (the
symptom it pages for, until that ends) and reaches each node once: a node whose wrapper reconnects
during the incident takes it then. Thread-safe; a poll waits by looking again (``take``), so neither
side blocks the other.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

ASK_FOR = 300.0  # seconds an ask is offered to nodes that have not taken it
HOLD = 30.0  # seconds a capture waits for the nodes' answers, at most (HEROWATCH_STACKS_HOLD)


@dataclass
class Ask:
    id: str
    run: str
    reason: str
    at: float
    nodes: frozenset[str]  # connected when asked: the answers a page waits for
    taken: set[str] = field(default_factory=set)


class StackBroker:
    def __init__(self, clock: Callable[[], float], live_for: float = 60.0, hold: float = HOLD) -> None:
        self.clock, self.live_for = clock, live_for
        self.hold = hold  # how long a capture waits for its nodes: a hang's first page, the run page
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, float]] = {}  # run -> node -> last poll
        self._asks: dict[str, Ask] = {}  # run -> its latest ask
        self._incidents: dict[str, str] = {}  # run -> the incident it was asked for

    def nodes(self, run: str) -> set[str]:
        now = self.clock()
        with self._lock:
            return {n for n, t in self._seen.get(run, {}).items() if now - t <= self.live_for}

    def ask(self, run: str, reason: str, incident: str | None = None) -> Ask | None:
        """Ask every connected node of ``run`` for its stacks; None when no wrapper of it is connected,
        or ``incident`` was asked for already."""
        nodes = self.nodes(run)
        with self._lock:
            if not nodes or (incident is not None and self._incidents.get(run) == incident):
                return None
            if incident is not None:
                self._incidents[run] = incident
            now = self.clock()
            ask = Ask(f"c{int(now)}-{secrets.token_hex(4)}", run, reason, now, frozenset(nodes))
            self._asks[run] = ask
            return ask

    def incident_over(self, run: str) -> None:
        with self._lock:
            self._incidents.pop(run, None)

    def take(self, run: str, node: str) -> Ask | None:
        """A node's poll: it is connected; the ask it has not taken yet, if any."""
        now = self.clock()
        with self._lock:
            seen = self._seen.setdefault(run, {})
            if node not in seen and len(seen) >= 4096:
                return None  # a token holder cannot grow this without end
            seen[node] = now
            ask = self._asks.get(run)
            if ask is None or node in ask.taken or now - ask.at > ASK_FOR:
                return None
            ask.taken.add(node)
            return ask

    def current(self, run: str) -> Ask | None:
        with self._lock:
            return self._asks.get(run)
