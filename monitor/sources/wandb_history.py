"""Pure logic of reading W&B run history incrementally: no I/O here.

- ``RunView``: what one page of the run listing says about a run (state, heartbeat, history length, last
  step from the summary).
- ``plan``: from a run's view and its stored cursor, which steps to read, if any.
- ``pages``: step ranges for ``HistoryPage`` requests (``maxStep`` exclusive, never wider than a page, as a
  wider range is sampled by the service and could drop a one-step spike).
- ``settle``: from the rows read, which are new (after a rewind: the ones logged since the last read) and
  the run's next cursor.
- ``to_samples``: rows to Samples.

The cursor of a run (JSON): ``step`` and ``ts`` (``_step`` and ``_timestamp`` of the last row read),
``lines`` (historyLineCount at that read), ``state``, ``restarts``, and after a rewind ``rewound_from`` /
``rewound_to`` (the last step kept, the step the run went back to); ``deleted`` once the run is gone from
the server; ``project`` (entity/project) so that a cursor is only ever used by a watch of its project.

Continuity check: a continuing read starts at the cursor's own step, so the first row returned must be
the row already read, with the same ``_timestamp``. If it is missing or was logged again, the run was
rewound (resumed from an earlier checkpoint) and re-logged past the old step between two polls.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from monitor.samples import NON_FINITE_WORDS, Sample
from monitor.sources.base import Cursor

SOURCE = "wandb"
HEARTBEAT_AGE = "heartbeat_age_seconds"
_TS_EPSILON = 1e-3


def parse_time(value: Any) -> float | None:
    """W&B times are ISO 8601 in UTC, usually without a zone: ``2026-01-01T12:00:00``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def to_float(value: Any) -> float | None:
    """A metric value as float: numbers (whole floats arrive as ints; bools as 0/1), NaN and infinities
    (also spelled as strings) kept; anything else (text, media, histograms) is None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return NON_FINITE_WORDS.get(value.strip().lower())
    return None


def _int(value: Any) -> int | None:
    f = to_float(value)
    return int(f) if f is not None and math.isfinite(f) else None


@dataclass(frozen=True)
class RunView:
    id: str
    display_name: str | None
    state: str
    tags: tuple[str, ...]
    heartbeat_at: float | None
    lines: int
    last_step: int  # -1: no history yet

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> RunView:
        summary = node.get("summaryMetrics") or {}
        if isinstance(summary, str):
            summary = json.loads(summary) if summary.strip() else {}
        lines = _int(node.get("historyLineCount")) or 0
        last = _int(summary.get("_step")) if isinstance(summary, Mapping) else None
        if last is None:  # no summary step: assume one history row per step
            last = lines - 1
        return cls(
            id=str(node["name"]),
            display_name=node.get("displayName"),
            state=str(node.get("state") or "unknown").lower(),
            tags=tuple(str(t) for t in node.get("tags") or ()),
            heartbeat_at=parse_time(node.get("heartbeatAt")),
            lines=lines,
            last_step=last,
        )


@dataclass(frozen=True)
class Plan:
    """Read steps ``lo`` .. ``hi`` (both inclusive) of ``run``."""

    run: RunView
    lo: int
    hi: int
    mode: Literal["first", "continue", "rewind"]


def plan(view: RunView, cursor: Mapping[str, Any] | None, warmup: int) -> Plan | None:
    """What to read of a run this poll: None when its history has not moved since the cursor."""
    step = _int((cursor or {}).get("step"))
    if step is None or step < 0:
        if view.last_step < 0:
            return None
        return Plan(view, max(0, view.last_step - warmup + 1), view.last_step, "first")
    lines = _int(cursor.get("lines")) if cursor else None
    if view.last_step == step and (lines is None or view.lines == lines):
        return None
    if view.last_step < step or (lines is not None and view.lines < lines):
        # the history went back: resumed from an earlier checkpoint. Re-read the end of what is there.
        if view.last_step < 0:
            return Plan(view, 0, -1, "rewind")
        return Plan(view, max(0, view.last_step - warmup + 1), view.last_step, "rewind")
    return Plan(view, step, max(step, view.last_step), "continue")


def pages(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """``[minStep, maxStep)`` ranges covering ``lo`` .. ``hi`` inclusive, each at most ``width`` steps."""
    return [(a, min(a + width, hi + 1)) for a in range(lo, hi + 1, width)]


def parse_history(lines: Iterable[Any], lo: int, hi_exclusive: int) -> list[dict[str, Any]]:
    """Rows of a ``HistoryPage`` answer (JSON strings, NaN/Infinity literals allowed) in the asked range."""
    rows = []
    for line in lines:
        try:
            row = json.loads(line) if isinstance(line, str | bytes) else line
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        step = _int(row.get("_step"))
        if step is not None and lo <= step < hi_exclusive:
            row["_step"] = step
            rows.append(row)
    return rows


def merge(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per step, in step order; a step seen twice keeps its later answer."""
    by_step: dict[int, dict[str, Any]] = {}
    for row in rows:
        by_step[row["_step"]] = dict(row)
    return [by_step[s] for s in sorted(by_step)]


def _ts(row: Mapping[str, Any]) -> float | None:
    t = to_float(row.get("_timestamp"))
    return t if t is not None and math.isfinite(t) else None


def continuous(rows: Sequence[Mapping[str, Any]], cursor: Mapping[str, Any]) -> bool:
    """Is the cursor's own row still there, as it was read?"""
    step, ts = _int(cursor.get("step")), to_float(cursor.get("ts"))
    for row in rows:
        if row["_step"] == step:
            t = _ts(row)
            return ts is None or t is None or abs(t - ts) <= _TS_EPSILON
    return False


def logged_before(row: Mapping[str, Any], cursor: Mapping[str, Any] | None) -> bool:
    """Was this row there at the last read (logged no later than the cursor's row)? False if unknown."""
    ts, t = to_float((cursor or {}).get("ts")), _ts(row)
    return ts is not None and t is not None and t <= ts + _TS_EPSILON


def logged_since(rows: Sequence[dict[str, Any]], cursor: Mapping[str, Any]) -> list[dict[str, Any]]:
    """After a rewind: the rows logged after the last one read (all rows when that time is unknown)."""
    return [r for r in rows if not logged_before(r, cursor)]


@dataclass
class Settled:
    rows: list[dict[str, Any]]
    cursor: Cursor
    rewound_to: int | None = None
    notes: list[str] = field(default_factory=list)


def settle(p: Plan, cursor: Mapping[str, Any] | None, rows: list[dict[str, Any]], rewritten: bool) -> Settled:
    """New rows and the next cursor. ``rewritten``: a continuing read found the history re-logged, and
    ``rows`` then also hold the steps before the cursor (re-read back to the warm-up window)."""
    old = dict(cursor or {})
    old.pop("deleted", None)
    base: Cursor = {**old, "lines": p.run.lines, "state": p.run.state}
    if p.mode == "first":
        new = rows
    elif p.mode == "continue" and not rewritten:
        new = [r for r in rows if r["_step"] > int(old["step"])]
    else:
        new = logged_since(rows, old)
    rewound_to = None
    if p.mode != "first" and (p.mode == "rewind" or rewritten):  # went back to the last step kept
        kept = [r["_step"] for r in rows if not new or r["_step"] < new[0]["_step"]]
        rewound_to = max(kept) if kept else (new[0]["_step"] - 1 if new else p.run.last_step)
        base.update(
            rewound_from=old.get("step"), rewound_to=rewound_to, restarts=int(old.get("restarts", 0)) + 1
        )
    last = new[-1] if new else (rows[-1] if rows and rewound_to is not None else None)
    if last is not None:
        base.update(step=last["_step"], ts=_ts(last))
    elif rewound_to is not None:  # history cut back to nothing
        base.update(step=-1, ts=None)
    return Settled(new, base, rewound_to)


class KeyFilter:
    """The configured history keys: exact names and ``*`` patterns."""

    def __init__(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.exact = {k for k in keys if "*" not in k and "?" not in k}
        self.patterns = [k for k in keys if k not in self.exact]

    def __call__(self, key: str) -> bool:
        return key in self.exact or any(fnmatch.fnmatchcase(key, p) for p in self.patterns)


def to_samples(rows: Iterable[Mapping[str, Any]], run: str, keys: KeyFilter, now: float) -> list[Sample]:
    """History rows as samples. They carry no run state: the state is what the run listing says now
    (``state_sample``, once per poll), not a property of every step logged before."""
    out = []
    for row in rows:
        metrics = {}
        for key, value in row.items():
            if key in ("_step", "_timestamp") or not keys(key):
                continue
            f = to_float(value)
            if f is not None:
                metrics[key] = f
        t = _ts(row)
        out.append(
            Sample(
                t=t if t is not None else now,
                run=run,
                step=row["_step"],
                metrics=metrics,
                source=SOURCE,
            )
        )
    return out


def state_sample(view: RunView, now: float, run: str | None = None) -> Sample:
    """One stepless sample a poll: the run's state and how old its last heartbeat is (``run``: the
    run's herowatch id, default its W&B id)."""
    metrics = {}
    if view.heartbeat_at is not None:
        metrics[HEARTBEAT_AGE] = max(0.0, now - view.heartbeat_at)
    return Sample(t=now, run=run or view.id, metrics=metrics, state=view.state, source=SOURCE)
