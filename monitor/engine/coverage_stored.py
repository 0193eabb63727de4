"""A run's coverage as it is stored with the run's stats, compactly, and read back in full.

The engine stores every run's coverage after every poll (``blind_watch``), so its size is paid on every
poll of every run, in building it and in encoding it as JSON: most rules share their inputs (the step
clock, the state, the loss), so the stored form keeps each distinct input state once and each rule
refers to them by position; it leaves out the words an input's state and times say already (a covered
input's "last value 4s ago", an unused one's) and each rule's state, which its inputs' states say
(``coverage.group_state``). The rules' names, kinds, severities and inputs are the same every poll for
the runs of a watch: they are one string (``name kind severity 0,1;...``), made once per plan::

    {"v": 3, "state", "at", "inputs": [[name, state, last_at, count(, why)], ...],
     "table": "rule kind severity 2,5;...", "summary", "gaps", "keys"}

(The table is not under ``rules``: a replica of the version before, during a rolling upgrade, reads a
coverage without rules rather than failing on a string. When a name does not fit the string, the
coverage is stored in version 2: ``"rules": [[rule, kind, severity, state, [input positions]], ...]``.)
``expand`` turns it, or an earlier form (version 2, or rules each with their inputs written out, still
held by runs not polled since), into that earlier form, which is what the API and the pages read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.engine.coverage import ORDER, UNUSED_WHY, RunCoverage, covered_why, group_state

VERSION = 3
LISTED = 2  # the version whose rules are lists, each with its state
_UNFIT = frozenset(" ;,")  # a name holding one of these is stored as a list


def stored(cov: RunCoverage) -> dict[str, Any]:
    """The compact form of ``cov`` (without summary, gaps and keys, which the caller adds)."""
    p = cov.plan
    if p is not None and len(cov.judged) == len(p.inputs):  # as ``judge`` made it: the plan's order
        now = cov.now
        inputs = tuple([_row(i, now) for i in cov.judged])
        table = p.memo.get("stored_rules")
        if table is None:
            table = p.memo["stored_rules"] = _table([(n, k, s, idx) for n, k, s, idx in p.rules])
        if isinstance(table, str):
            return {"v": VERSION, "state": cov.state, "at": now, "inputs": inputs, "table": table}
    return _stored_walk(cov)


def _row(i: Any, now: float) -> tuple:
    """An input's stored row: a tuple (JSON writes it as a list; read back, it is one), which the
    collector stops tracking (a run holds its coverage in memory between polls: ~20 rows)."""
    if i.said is not None and i.said != _said(i.state, i.last_at, now):
        return (i.name, i.state, i.last_at, i.count, i.said)
    return (i.name, i.state, i.last_at, i.count)


def _table(rules: list[tuple[str, str, str, tuple[int, ...] | list[int]]]) -> str | None:
    """The rules as one string, or None if a name does not fit in it (or a rule has no inputs)."""
    parts = []
    for name, kind, severity, refs in rules:
        words = (str(name), str(kind), str(severity))
        if not refs or any(not w or not _UNFIT.isdisjoint(w) for w in words):
            return None
        parts.append(" ".join(words) + " " + ",".join(map(str, refs)))
    return ";".join(parts)


def _stored_walk(cov: RunCoverage) -> dict[str, Any]:
    """``stored`` of a coverage made without a plan: its rules' inputs, each distinct state once."""
    inputs: list[tuple] = []
    index: dict[int, int] = {}  # id of an InputState -> its position (``judge`` shares them)
    groups: dict[int, list[int]] = {}  # id of a rule's inputs -> their positions (rules share them too)
    rows = []
    for r in cov.rules:
        refs = groups.get(id(r.inputs))
        if refs is None:
            refs = groups[id(r.inputs)] = []
            for i in r.inputs:
                at = index.get(id(i))
                if at is None:
                    at = index[id(i)] = len(inputs)
                    inputs.append(_row(i, cov.now))
                refs.append(at)
        rows.append([r.rule, r.kind, r.severity, r.state, refs])
    table = _table([(r[0], r[1], r[2], r[4]) for r in rows])
    derived = table is not None and all(r[3] == group_state([inputs[k][1] for k in r[4]]) for r in rows)
    if not derived:
        return {"v": LISTED, "state": cov.state, "at": cov.now, "inputs": tuple(inputs), "rules": rows}
    return {"v": VERSION, "state": cov.state, "at": cov.now, "inputs": tuple(inputs), "table": table}


def expand(data: Any) -> dict[str, Any] | None:
    """The stored coverage (any form) with each rule's inputs written out; None if there is none."""
    if not isinstance(data, Mapping):
        return None
    if data.get("v") not in (VERSION, LISTED):
        return dict(data)
    at = data.get("at")
    inputs = [
        {
            "name": i[0],
            "state": i[1],
            "last_at": i[2],
            "count": i[3],
            "why": i[4] if len(i) > 4 else _said(i[1], i[2], at),
        }
        for i in data.get("inputs") or ()
        if isinstance(i, list | tuple) and len(i) in (4, 5)
    ]
    table = data.get("table")
    listed = _parse(table) if isinstance(table, str) else data.get("rules") or ()
    rules = []
    for r in listed:
        if not (isinstance(r, list | tuple) and len(r) == 5):
            continue
        refs = [inputs[k] for k in r[4] if isinstance(k, int) and 0 <= k < len(inputs)]
        state = r[3] if r[3] is not None else _state_of([i["state"] for i in refs])
        rules.append({"rule": r[0], "kind": r[1], "severity": r[2], "state": state, "inputs": refs})
    out = {k: v for k, v in data.items() if k not in ("v", "inputs", "table")}
    out["rules"] = rules
    return out


def _parse(table: str) -> list[tuple]:
    """The rows of a stored rule string, each rule's state left to its inputs (None)."""
    out = []
    for part in table.split(";"):
        words = part.split(" ")
        if len(words) != 4:
            continue
        try:
            refs = [int(k) for k in words[3].split(",")]
        except ValueError:
            continue
        out.append((words[0], words[1], words[2], None, refs))
    return out


def _state_of(states: list[Any]) -> str | None:
    """A rule's state from its inputs' (None if they say none)."""
    if not states or not all(s in ORDER for s in states):
        return None
    return group_state(states)


def _said(state: Any, last_at: Any, at: Any) -> str | None:
    """The words of a state that its times say (None: they must be stored)."""
    if state == "unused":
        return UNUSED_WHY
    if state == "covered" and isinstance(last_at, int | float) and isinstance(at, int | float):
        return covered_why(at - last_at)
    return None
