"""A run's coverage as it is stored with the run's stats, compactly, and read back in full.

The engine stores every run's coverage after every poll (``blind_watch``), so its size is paid on every
poll of every run: most rules share their inputs (the step clock, the state, the loss), so the stored
form keeps each distinct input state once and each rule refers to them by position, and leaves out the
words an input's state and times say already (a covered input's "last value 4s ago", an unused one's)::

    {"v": 2, "state", "at", "inputs": [[name, state, last_at, count(, why)], ...],
     "rules": [[rule, kind, severity, state, [input positions]], ...], "summary", "gaps", "keys"}

``expand`` turns it (or the earlier form, rules each with their inputs written out, still held by runs
not polled since) into that earlier form, which is what the API and the pages read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.engine.coverage import UNUSED_WHY, RunCoverage, covered_why

VERSION = 2


def stored(cov: RunCoverage) -> dict[str, Any]:
    """The compact form of ``cov`` (without summary, gaps and keys, which the caller adds)."""
    inputs: list[list] = []
    index: dict[int, int] = {}  # id of an InputState -> its position (``judge`` shares them)
    groups: dict[int, list[int]] = {}  # id of a rule's inputs -> their positions (rules share them too)
    rules = []
    for r in cov.rules:
        refs = groups.get(id(r.inputs))
        if refs is None:
            refs = groups[id(r.inputs)] = []
            for i in r.inputs:
                at = index.get(id(i))
                if at is None:
                    at = index[id(i)] = len(inputs)
                    row = [i.name, i.state, i.last_at, i.count]
                    if i.said is not None and i.said != _said(i.state, i.last_at, cov.now):
                        row.append(i.said)
                    inputs.append(row)
                refs.append(at)
        rules.append([r.rule, r.kind, r.severity, r.state, refs])
    return {"v": VERSION, "state": cov.state, "at": cov.now, "inputs": inputs, "rules": rules}


def expand(data: Any) -> dict[str, Any] | None:
    """The stored coverage (either form) with each rule's inputs written out; None if there is none."""
    if not isinstance(data, Mapping):
        return None
    if data.get("v") != VERSION:
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
    rules = []
    for r in data.get("rules") or ():
        if not (isinstance(r, list | tuple) and len(r) == 5):
            continue
        refs = [inputs[k] for k in r[4] if isinstance(k, int) and 0 <= k < len(inputs)]
        rules.append({"rule": r[0], "kind": r[1], "severity": r[2], "state": r[3], "inputs": refs})
    out = {k: v for k, v in data.items() if k not in ("v", "inputs")}
    out["rules"] = rules
    return out


def _said(state: Any, last_at: Any, at: Any) -> str | None:
    """The words of a state that its times say (None: they must be stored)."""
    if state == "unused":
        return UNUSED_WHY
    if state == "covered" and isinstance(last_at, int | float) and isinstance(at, int | float):
        return covered_why(at - last_at)
    return None
