"""One run seen through several sources (``join:`` in a watch, ``monitor.config.joins``): a Slurm job, its
log and its W&B run, each found by its own source under its own id, are one run ``join:<watch>/<key>``.

``Joins`` (one per watch) rewrites a poll's results before the engine sees them: each part's samples,
run info, cursors, gaps, logged keys and fleet frames go to the joined run. Each feed has one part that
gives it, so that two sources never write the same series twice (two step counters would read as
restarts, two losses as noise):

- **state**: the scheduler (``slurm``) when it is a part, else the first part of ``by`` that gives a
  state: a job Slurm says failed is never shown as finished because its W&B run says so;
- **steps** and **each metric**: the first part in ``by``'s order that has given it; another part's
  sample keeps only what no part before it gives, without its step (its own metrics at their times);
- a job alert (a crash line) is kept from every part.

What a part has given is remembered with the run (its page's sources table, ``parts``), so that the
same part gives the same feeds after a restart. The part's cursor is kept under the joined run and
the source's kind, with the part's own id (``_member``): the source reads it under that id.

A key held by a run of one source is not taken by a second run of that source (a W&B run made anew
by a requeue): that one stays a run of its own, logged once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from monitor.config.joins import JoinConfig, fields_of, key_of
from monitor.run_ids import qualify
from monitor.samples import ALERT_METRIC, RunInfo, Sample
from monitor.sources.base import Cursor, PollResult

log = logging.getLogger(__name__)
MEMBER = "_member"  # a joined run's cursor: the part's own id at its source
STATE, STEPS, ALERTS = "state", "steps", "alerts"
MAX_PART_METRICS = 40  # metric names a sources table lists per part


class Joins:
    """The joined runs of one watch and what each of their parts gives."""

    def __init__(self, watch: str, cfg: JoinConfig | None, stored: Callable[[str], Any] = lambda _r: None):
        self.watch, self.cfg = watch, cfg
        self.stored = stored  # joined run id -> its row's stats as last written (or None)
        self.of: dict[str, str] = {}  # part id -> joined id
        self.parts: dict[str, dict[str, dict[str, Any]]] = {}  # joined id -> kind -> its row
        self._warned: set[str] = set()

    @property
    def active(self) -> bool:
        return self.cfg is not None

    # ---- cursors ----------------------------------------------------------------------------------
    def cursors_in(self, cursors: Mapping[str, Cursor]) -> dict[str, Cursor]:
        """A source's cursors as it reads them: a joined run's under its part's id."""
        if not self.active:
            return dict(cursors)
        out: dict[str, Cursor] = {}
        for run, cursor in cursors.items():
            member = cursor.get(MEMBER) if isinstance(cursor, dict) else None
            if isinstance(member, str) and member:
                self.of.setdefault(member, run)
                out[member] = {k: v for k, v in cursor.items() if k != MEMBER}
            else:
                out[run] = cursor
        return out

    # ---- a poll ------------------------------------------------------------------------------------
    def join(self, results: dict[str, PollResult], now: float) -> dict[str, PollResult]:
        """The poll's results with the parts of joined runs written as their joined run."""
        if not self.active:
            return results
        for kind, res in results.items():
            for info in res.runs:
                self._claim(kind, info)
        for kind, res in results.items():  # what each part gives, before any is filtered
            for s in res.samples:
                if (joined := self._joined(s.run)) is not None:
                    self._note(joined, kind, s, now)
        merged: dict[str, list[RunInfo]] = {}
        first: dict[str, str] = {}
        out = {kind: self._rewrite(kind, res, merged, first) for kind, res in results.items()}
        for joined, infos in merged.items():
            out[first[joined]].runs.append(self._merge(joined, infos))
        return out

    def _joined(self, run: str) -> str | None:
        joined = self.of.get(run)
        if joined is None and run.startswith("join:"):  # read under the joined id (Prometheus)
            self._parts(run)
            joined = run
        return joined

    def _claim(self, kind: str, info: RunInfo) -> None:
        assert self.cfg is not None
        if info.run in self.of or kind not in self.cfg.by:
            return
        fields = fields_of(info.name, info.display_name, info.project, info.labels)
        key = key_of(self.cfg.by[kind], fields)
        if key is None:
            return
        joined = qualify("join", self.watch, key)
        parts = self._parts(joined)
        held = parts.get(kind, {}).get("run")
        if held and held != info.run:
            if info.run not in self._warned and len(self._warned) < 10_000:
                self._warned.add(info.run)
                log.warning(
                    "watch %s: %s has the key %r of %s (joined to %s already): it stays a run of its own",
                    self.watch,
                    info.run,
                    key,
                    joined,
                    held,
                )
            return
        self.of[info.run] = joined
        parts.setdefault(kind, {"source": kind, "run": info.run, "gives": []})

    def _parts(self, joined: str) -> dict[str, dict[str, Any]]:
        """The joined run's parts: from memory, else as its row last stored them."""
        parts = self.parts.get(joined)
        if parts is None:
            stats = self.stored(joined) or {}
            rows = stats.get("sources") if isinstance(stats, dict) else None
            parts = self.parts[joined] = {
                str(r["source"]): {**r, "gives": [*r.get("gives", ()), *r.get("also", ())]}
                for r in rows or []
                if isinstance(r, dict) and r.get("source")
            }
            for row in parts.values():
                if row.get("run"):
                    self.of.setdefault(str(row["run"]), joined)
        return parts

    def _rewrite(
        self, kind: str, res: PollResult, merged: dict[str, list[RunInfo]], first: dict[str, str]
    ) -> PollResult:
        to = self.of.get
        infos = []
        for info in res.runs:
            joined = to(info.run)
            if joined is None:
                infos.append(info)
            else:
                merged.setdefault(joined, []).append(dataclasses.replace(info, run=joined))
                first.setdefault(joined, kind)
        samples = []
        for s in res.samples:
            joined = self._joined(s.run)
            if joined is None:
                samples.append(s)
            elif (kept := self._own(joined, kind, s)) is not None:
                samples.append(kept)
        cursors = {}
        for run, cursor in res.cursors.items():
            joined = to(run)
            cursors[joined or run] = {**cursor, MEMBER: run} if joined else cursor
        return dataclasses.replace(
            res,
            samples=samples,
            runs=infos,
            cursors=cursors,
            gaps={to(r) or r: g for r, g in res.gaps.items()},
            logged={to(r) or r: k for r, k in res.logged.items()},
            fleet=[dataclasses.replace(f, run=to(f.run) or f.run) for f in res.fleet],
        )

    def _note(self, joined: str, kind: str, s: Sample, now: float) -> None:
        row = self._parts(joined).setdefault(kind, {"source": kind, "run": None, "gives": []})
        row["last_at"] = now
        gives = set(row["gives"])
        if s.state is not None:
            gives.add(STATE)
        if s.step is not None:
            gives.add(STEPS)
        if s.alert is not None:
            gives.add(ALERTS)
        gives.update(k for k in s.metrics if k != ALERT_METRIC)
        if len(gives) != len(row["gives"]):
            row["gives"] = sorted(gives)

    def _own(self, joined: str, kind: str, s: Sample) -> Sample | None:
        """The part of ``s`` that ``kind`` gives for the joined run (nothing another part gives)."""
        state = s.state if self.owner(joined, STATE) == kind else None
        step = s.step if self.owner(joined, STEPS) == kind else None
        metrics = {k: v for k, v in s.metrics.items() if k == ALERT_METRIC or self.owner(joined, k) == kind}
        if state is None and step is None and not metrics and s.alert is None:
            return None
        return dataclasses.replace(s, run=joined, state=state, step=step, metrics=metrics)

    def owner(self, joined: str, feed: str) -> str | None:
        """The part that gives ``feed`` for the joined run (None: no part does)."""
        parts = self.parts.get(joined, {})
        order = self._order(feed, parts)
        return next((k for k in order if feed in parts[k].get("gives", ())), None)

    def _order(self, feed: str, parts: Mapping[str, Any]) -> list[str]:
        assert self.cfg is not None
        first = self.cfg.state_order() if feed == STATE else list(self.cfg.by)
        return [k for k in first if k in parts] + sorted(k for k in parts if k not in first)

    def _merge(self, joined: str, infos: list[RunInfo]) -> RunInfo:
        """One run info of the parts' infos: names from the first part of ``by``, the state from the
        part that gives it, the labels of all (an earlier part's word wins)."""
        by_kind = {i.source: i for i in infos}
        order = [k for k in self._order(STEPS, self.parts.get(joined, {})) if k in by_kind]
        order += [k for k in by_kind if k not in order]
        ranked = [by_kind[k] for k in order]
        owner = self.owner(joined, STATE)
        state = by_kind[owner].state if owner in by_kind else None
        labels: dict[str, str] = {}
        for info in reversed(ranked):
            labels.update(info.labels)
        kinds = self._order(STEPS, self.parts.get(joined, {}))
        labels.update(source=owner or order[0], sources=",".join(kinds), join_key=joined.split("/", 1)[-1])

        def first(attr: str) -> Any:
            return next((getattr(i, attr) for i in ranked if getattr(i, attr)), None)

        beats = [i.heartbeat_at for i in ranked if i.heartbeat_at is not None]
        return RunInfo(
            run=joined,
            source=owner or order[0],
            display_name=first("display_name"),
            state=state,
            labels=labels,
            url=first("url"),
            heartbeat_at=max(beats) if beats else None,
            name=first("name"),
            project=first("project"),
        )

    # ---- the run page -------------------------------------------------------------------------------
    def facts(self, joined: str) -> dict[str, Any]:
        """The joined run's sources table for its stats: per part its id, last answer and what it gives."""
        if joined not in self.parts:
            return {}
        parts = self.parts[joined]
        rows = []
        for kind in self._order(STEPS, parts):
            row = parts[kind]
            gives = [f for f in row.get("gives", ()) if self.owner(joined, f) == kind]
            also = [f for f in row.get("gives", ()) if f not in gives]
            rows.append({**row, "gives": _listed(gives), "also": _listed(also)})
        return {"sources": rows}


def _listed(feeds: Iterable[str]) -> list[str]:
    first = [f for f in (STATE, STEPS, ALERTS) if f in feeds]
    rest = sorted(f for f in feeds if f not in first)
    return first + rest[:MAX_PART_METRICS]
