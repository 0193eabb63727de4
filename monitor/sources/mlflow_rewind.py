"""Steps an MLflow run logs again below its highest: a run resumed from a checkpoint into the same run.

MLflow keeps, per run and key, the value with the greatest (step, timestamp, value) as the latest (its
store's ``_update_latest_metrics_if_necessary``), and the latest is all ``runs/search`` answers. A run
resumed from a checkpoint below its highest step therefore logs, until it passes that step again,
without moving anything the search shows. Its new values are told apart by their time: each key's
cursor keeps the (timestamp, step) of the newest value read (its horizon), and a value logged after it
is new whatever its step (``Read.wants``).

Where to look: history is read by step interval (``get-history-bulk-interval``, ordered by step, then
timestamp). ``get-history`` orders by timestamp but pages by an offset token whose format MLflow says
is not stable, so it is not used. A scan reads one window of the run's lead key (its most advanced
key) just below its latest step, where a resumed run starts again (its last checkpoint). A window
whose lowest step holds a value logged again reaches further down, a window at a time, until it meets
steps logged only once (the checkpoint). Later polls go on from the highest step logged again (the
run's ``rework`` cursor), upwards while the highest step of a window holds a new value. The other keys
are then read over the steps the lead key was logged again at. A scan costs one request, plus one per
further window that holds new values: what is new, never the whole history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from monitor.sources.mlflow_history import Read, batches

Row = dict[str, Any]
History = Callable[[tuple[str, ...], str, int, int], list[Row]]


@dataclass(frozen=True)
class Scan:
    run_id: str
    key: str  # the run's lead key
    lo: int
    hi: int  # nothing is logged again above the key's latest step
    horizon: tuple[int, int]  # (timestamp, step) of the newest value of the key read before
    down: bool  # where the rework starts is not known yet: look below the first window too


def lead_key(latest: Mapping[str, tuple[int, int]]) -> str | None:
    """The most advanced key (greatest latest step, then time, then name): logged at every step the
    others are, as a loss is."""
    return max(latest, key=lambda k: (*latest[k], k), default=None)


def _step(m: Row) -> int:
    return int(m.get("step") or 0)


def _new(rows: Iterable[Row], horizon: tuple[int, int]) -> list[Row]:
    return [m for m in rows if (int(m.get("timestamp") or 0), _step(m)) > horizon]


def _bottom_is_new(rows: list[Row], new: list[Row]) -> bool:
    return bool(new) and min(map(_step, rows)) == min(map(_step, new))


def _top_is_new(rows: list[Row], new: list[Row]) -> bool:
    return bool(new) and max(map(_step, rows)) == max(map(_step, new))


def relogged(history: History, scans: list[Scan], window: int) -> dict[str, list[Row]]:
    """Run id -> the lead key's values logged again (after its horizon, at or below its latest step).
    The first windows of runs in step with each other share requests (mlflow_history.batches)."""
    firsts = {s.run_id: Read(s.run_id, s.key, s.lo, min(s.hi, s.lo + window - 1), None) for s in scans}
    got: dict[str, list[Row]] = defaultdict(list)
    for batch in batches(list(firsts.values()), window):
        for m in history(batch.run_ids, batch.key, batch.lo, batch.hi):
            r = firsts.get(str(m.get("run_id")))
            if r is not None and r.wants(_step(m), int(m.get("timestamp") or 0)):
                got[r.run_id].append(m)
    out: dict[str, list[Row]] = {}
    for s in scans:
        first = firsts[s.run_id]
        rows = got[s.run_id]
        new = _new(rows, s.horizon)
        if not new:
            continue
        found = list(new)
        lo, win_rows, win_new = first.lo, rows, new
        while s.down and lo > 0 and _bottom_is_new(win_rows, win_new):
            lo, hi = max(0, lo - window), lo - 1
            win_rows = history((s.run_id,), s.key, lo, hi)
            win_new = _new(win_rows, s.horizon)
            found += win_new
        hi, win_rows, win_new = first.hi, rows, new
        while hi < s.hi and _top_is_new(win_rows, win_new):
            lo, hi = hi + 1, min(s.hi, hi + window)
            win_rows = history((s.run_id,), s.key, lo, hi)
            win_new = _new(win_rows, s.horizon)
            found += win_new
        out[s.run_id] = found
    return out


def plan(
    run_id: str,
    key: str,
    latest_step: int,
    horizon: tuple[int, int],
    *,
    moved_from: int | None,
    relogged_in_read: bool,
    rework: int | None,
    due: bool,
    window: int,
) -> Scan | None:
    """Whether and where to look for a run's steps logged again.

    ``moved_from``: the lead key's latest step before this poll if it moved (else None);
    ``relogged_in_read``: reading what moved found a value logged again at or below that step;
    ``rework``: the highest step logged again read so far, while the run is below its old top;
    ``due``: the run is running, nothing moved, and its periodic probe is due."""
    top = latest_step if moved_from is None else moved_from
    if rework is not None and (moved_from is not None or due):
        return Scan(run_id, key, min(rework, top), top, horizon, down=False)
    if relogged_in_read or (due and moved_from is None):
        return Scan(run_id, key, max(0, top - window + 1), top, horizon, down=True)
    return None
