"""The status as of one moment, built once and shared by every reader until something changes.

A :class:`Snapshot` holds every run's summary (``RunOut``, by id) and every pending or firing alert
(``AlertOut``, newest first), computed from the database at one time of the service's clock.
``/api/runs``, the active part of ``/api/alerts`` and the overview page answer from it; what each of
them makes of it (the JSON of ``?kind=rl&order=urgency``, the overview's HTML of a kind) is made once
per snapshot and kept beside it (:meth:`Snapshot.memo`) with its ETag, so a refresh that finds nothing
new costs a dictionary lookup and a 304.

When a new snapshot is built (:class:`SnapshotStore`):

- after a write to the database by this process: the engine's cycle, an acknowledgement, a silence (a
  commit of a connection that wrote, heard from SQLAlchemy's engine events, so the engine's write path
  needs no hook of its own; writes only to tables the snapshot does not read, such as a lease renewal
  or an outbox claim, do not count);
- when the snapshot is older than the shortest poll interval of the configured watches (by the
  service's clock, and by the wall clock for a clock that does not move): what other processes wrote
  (a replica polling other watches, ``herowatch silence`` from a shell) and what time alone changes
  ("firing for 20m", a run not polled for three intervals) is served at most one poll interval late.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from monitor import run_ids
from monitor.runs import backfill
from monitor.storage import views
from monitor.web import status
from monitor.web.context import DEFAULT_POLL_INTERVAL, ApiContext
from monitor.web.schemas import AlertOut, RunOut

READS = ("select", "pragma", "show", "set ", "savepoint", "release", "begin", "explain")
WRITE_TO = re.compile(
    r"\s*(?:insert\s+(?:or\s+\w+\s+)?into|update|delete\s+from|replace\s+into)\s+\"?(\w+)", re.I
)
# tables nothing in the snapshot comes from: the leases, the outbox, cursors, detector state, fleet frames
UNSEEN = frozenset(
    {
        "leases",
        "notifications",
        "alert_groups",
        "alert_group_members",
        "source_cursors",
        "rule_state",
        "fleet_rasters",
        "fleet_columns",
    }
)


def changes_status(sql: str) -> bool:
    """Whether a statement may change what the snapshot shows: any write, unless it plainly writes to a
    table the snapshot does not read (a lease renewal, an outbox claim)."""
    if sql.lstrip()[:9].lower().startswith(READS):
        return False
    m = WRITE_TO.match(sql)
    return m is None or m.group(1).lower() not in UNSEEN


def etag_of(*parts: str | bytes) -> str:
    """A weak validator (the gzip middleware may re-encode the bytes) over the variant and its body."""
    h = hashlib.blake2b(digest_size=12)
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return f'W/"{h.hexdigest()}"'


@dataclass
class Snapshot:
    version: int  # the store's change counter when the build started
    now: float  # the service's clock at the build: every relative time in it is as of then
    built_mono: float  # time.monotonic() at the build
    runs: list[RunOut]  # every run, by id
    alerts: list[AlertOut]  # pending and firing, newest first (as /api/alerts lists them)
    api_titles: dict[str, str]  # run id -> its title as /api/alerts gives it (runs_repo.titles)
    backfill: dict[str, float] = field(default_factory=dict)  # watch -> share of its past played (left out)
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def kinds(self) -> Counter[str]:
        return Counter(r.kind for r in self.runs)

    def runs_of(self, kind: str | None) -> list[RunOut]:
        return self.runs if kind is None else [r for r in self.runs if r.kind == kind]

    def urgent_alerts(self, runs: list[RunOut] | None = None) -> list[AlertOut]:
        """Active alerts (of ``runs``, if given) most urgent first, with the overview's run titles."""
        shown = None if runs is None else {r.id for r in runs}
        titles = {r.id: r.title for r in self.runs}
        out = [
            a.model_copy(update={"run_title": titles.get(a.run)})
            for a in self.alerts
            if shown is None or a.run in shown
        ]
        return sorted(out, key=status.alert_order)

    def lookup(self, key: str) -> list[str]:
        """The ids of the runs ``key`` names, as ``views.lookup_runs`` finds them: the run with that id,
        else every run with that display name or source id."""
        if any(r.id == key for r in self.runs):
            return [key]
        return [r.id for r in self.runs if key in (r.display_name, r.name)][:50]

    def memo(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """What ``make`` returns, made once per snapshot (concurrent callers wait for the first)."""
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._memo.get(key)
            if hit is None:
                hit = self._memo[key] = make()
            return hit

    def cached(self, key: Hashable) -> Any:
        return self._memo.get(key)


def build(ctx: ApiContext, s: Session, version: int) -> Snapshot:
    """Every run with its health and every active alert: a few queries whatever the number of runs."""
    now = ctx.now()
    silences = views.active_silence_specs(s, now, ctx.silences)
    playing = backfill.in_play()  # their runs are a week in the past until played: left out
    every = views.all_runs(s, with_stats=False)
    hidden = {r.id for r in every if r.watch in playing} | set(playing)  # a watch's own alerts carry its name
    rows = [r for r in every if r.id not in hidden]
    shared = run_ids.ambiguous_names(r.display_name for r in rows)
    titles = {
        r.id: run_ids.title(r.display_name, r.name or r.id, r.project, r.display_name in shared) for r in rows
    }
    active = [
        status.alert_out(a, silences, now, titles)
        for a in views.find_alerts(s, state="active")
        if a.run_id not in hidden
    ]
    by_run: dict[str, list[AlertOut]] = {}
    for a in sorted(active, key=lambda a: a.id):  # as views.active_alerts lists them
        by_run.setdefault(a.run, []).append(a)
    derived = ctx.stats_cache.get_many(s, rows, now)
    runs = [
        status.run_out(ctx, r, derived[r.id], by_run.get(r.id, []), now, r.display_name in shared)
        for r in rows
    ]
    api_titles = {
        r.id: run_ids.title(r.display_name, r.name, r.project, r.display_name in shared) for r in rows
    }
    return Snapshot(version, now, time.monotonic(), runs, active, api_titles, backfill=playing)


class SnapshotStore:
    """The current snapshot of one app, rebuilt when this process wrote or when it is a poll interval old."""

    def __init__(self) -> None:
        self._snap: Snapshot | None = None
        self._version = 0
        self._lock = threading.Lock()
        self._heard: set[int] = set()  # the SQLAlchemy engines whose commits we listen to

    # ---- what makes it stale ----------------------------------------------------------------------
    def changed(self) -> None:
        """Something the snapshot shows may have changed: the next reader gets a new one."""
        self._version += 1

    def listen(self, sessions: sessionmaker[Session]) -> None:
        """Hear the commits of connections that wrote, through ``sessions``' engine (any session or
        connection of that engine: the engine's cycle, the API's and dashboard's writes, the CLI in
        this process)."""
        bind = sessions.kw.get("bind")
        if bind is None or id(bind) in self._heard:
            return
        self._heard.add(id(bind))

        def statement(conn, cursor, text, params, context, executemany) -> None:  # noqa: ANN001, ARG001
            if changes_status(text):
                conn.info["herowatch_wrote"] = True

        def commit(conn) -> None:  # noqa: ANN001
            if conn.info.pop("herowatch_wrote", False):
                self.changed()

        event.listen(bind, "before_cursor_execute", statement)
        event.listen(bind, "commit", commit)

    @staticmethod
    def max_age(ctx: ApiContext) -> float:
        """The staleness bound: the shortest poll interval of the configured watches."""
        return min(ctx.poll_intervals.values(), default=DEFAULT_POLL_INTERVAL)

    def fresh(self, ctx: ApiContext) -> Snapshot | None:
        """The current snapshot if it may still be served, without waiting or touching the database."""
        snap = self._snap
        if snap is None or snap.version != self._version:
            return None
        age, now = self.max_age(ctx), ctx.now()
        if not snap.now <= now < snap.now + age:
            return None
        if time.monotonic() - snap.built_mono >= age / max(ctx.speed, 1.0):
            return None
        return snap

    def get(self, ctx: ApiContext) -> Snapshot:
        """The current snapshot, built now if stale (one builder at a time; the others wait for it)."""
        self.listen(ctx.sessions)
        snap = self.fresh(ctx)
        if snap is not None:
            return snap
        with self._lock:
            snap = self.fresh(ctx)
            if snap is None:
                version = self._version
                with ctx.sessions() as s:
                    snap = build(ctx, s, version)
                self._snap = snap
            return snap
