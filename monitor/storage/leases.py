"""Leases in the database: at most one holder per name, until it expires or is released.

Acquire and renew are one conditional UPDATE (taken when free, expired or already ours), after an
INSERT for a name never seen. Correct on PostgreSQL across processes and on SQLite within one.
"""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from monitor.storage.models import Lease


class Leases:
    def __init__(self, sessions: sessionmaker[Session], holder: str) -> None:
        self.sessions = sessions
        self.holder = holder

    def acquire(self, name: str, now: float, ttl: float) -> bool:
        """Take or renew ``name`` for ``ttl`` seconds. True if this holder has it now."""
        with self.sessions.begin() as s:
            res = s.execute(
                update(Lease)
                .where(Lease.name == name, (Lease.holder == self.holder) | (Lease.expires_at <= now))
                .values(holder=self.holder, expires_at=now + ttl)
                .execution_options(synchronize_session=False)
            )
            if res.rowcount == 1:
                return True
            if s.get(Lease, name) is not None:
                return False
        try:
            with self.sessions.begin() as s:
                s.add(Lease(name=name, holder=self.holder, expires_at=now + ttl, acquired_at=now))
            return True
        except IntegrityError:  # another replica inserted it first
            return False

    def holds(self, s: Session, name: str, now: float) -> bool:
        """Inside a transaction: is the lease still ours? (Locks the row on PostgreSQL: a fence.)"""
        q = select(Lease).where(Lease.name == name)
        if s.get_bind().dialect.name == "postgresql":
            q = q.with_for_update()
        lease = s.scalar(q)
        return lease is not None and lease.holder == self.holder and lease.expires_at > now

    def holds_many(self, s: Session, names: list[str], now: float) -> set[str]:
        """Inside a transaction: which of ``names`` are still ours? (Their rows locked on PostgreSQL, in
        name order so that replicas never wait on each other in a circle: a fence for a batch.)"""
        q = select(Lease).where(Lease.name.in_(names)).order_by(Lease.name)
        if s.get_bind().dialect.name == "postgresql":
            q = q.with_for_update()
        return {
            lease.name for lease in s.scalars(q) if lease.holder == self.holder and lease.expires_at > now
        }

    def renew_held(self, s: Session, ttls: dict[str, float], now: float) -> set[str]:
        """Inside a transaction: renew those of ``ttls`` (name -> ttl) this holder still has, and return
        them. One UPDATE per distinct ttl, rows in name order; they stay locked until the transaction
        ends (a fence: no other replica can take them over meanwhile)."""
        held: set[str] = set()
        by_ttl: dict[float, list[str]] = {}
        for name, ttl in sorted(ttls.items()):
            by_ttl.setdefault(ttl, []).append(name)
        for ttl, names in by_ttl.items():
            res = s.execute(
                update(Lease)
                .where(Lease.name.in_(names), Lease.holder == self.holder, Lease.expires_at > now)
                .values(expires_at=now + ttl)
                .returning(Lease.name)
                .execution_options(synchronize_session=False)
            )
            held.update(res.scalars())
        return held

    def release(self, name: str) -> None:
        with self.sessions.begin() as s:
            s.execute(delete(Lease).where(Lease.name == name, Lease.holder == self.holder))

    def held(self, now: float) -> list[str]:
        with self.sessions() as s:
            return list(
                s.scalars(select(Lease.name).where(Lease.holder == self.holder, Lease.expires_at > now))
            )
