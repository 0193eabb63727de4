"""The leases of the watches this replica polls (PostgreSQL; none on SQLite, one process does all).

A poll takes its watch's lease before reading (a watch newly leased is taken up: ``adoption``); every
batch that writes watches renews their leases in its own transaction, which also fences it: a watch
whose lease is gone is left out of the batch and let go. A lease renewed by the last batch with more
than half its time left needs no statement of its own at the next poll.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from alerts.clock import Clock
    from monitor.config.schema import Watch
    from monitor.engine.adoption import Adoption
    from monitor.storage.leases import Leases


class Leased(Protocol):
    """What keeping the leases acts on: the engine's parts (``cycle.Engine``)."""

    watches: dict[str, Watch]
    clock: Clock
    leases: Leases | None  # None: one process does all the work (SQLite)
    adoption: Adoption  # takes a newly leased watch up, lets a lost one go

    @property
    def adopted(self) -> frozenset[str]: ...


class LeaseKeeper:
    def __init__(self, engine: Leased) -> None:
        self.engine = engine
        self._until: dict[str, float] = {}  # watch -> until when this replica holds its lease

    def ttl(self, watch: str) -> float:
        return max(3 * self.engine.watches[watch].poll_interval, 30.0)

    def take(self, watch: str) -> bool:
        """Hold the watch's lease for this poll (taking the watch up if it is new to this replica)."""
        eng = self.engine
        now, ttl = eng.clock.time(), self.ttl(watch)
        fresh = watch in eng.adopted and self._until.get(watch, -math.inf) - now > ttl / 2
        if eng.leases is not None and not fresh:
            if not eng.leases.acquire(f"poll:{watch}", now, ttl):
                if watch in eng.adopted:
                    eng.adoption.let_go(watch)
                return False
            self._until[watch] = now + ttl
        if watch not in eng.adopted:
            eng.adoption.adopt(watch)
        return True

    def fence(self, s: Session, watches: list[str], now: float) -> set[str]:
        """The watches whose lease this replica still holds, renewed in ``s``'s transaction (their rows
        stay locked until it commits: no takeover mid-batch)."""
        leases = self.engine.leases
        if leases is None:
            return set(watches)
        ttls = {f"poll:{w}": self.ttl(w) for w in watches}
        held = leases.renew_held(s, ttls, now)
        for w in watches:
            if f"poll:{w}" in held:
                self._until[w] = now + ttls[f"poll:{w}"]
            else:
                self._until.pop(w, None)
        return {w for w in watches if f"poll:{w}" in held}
