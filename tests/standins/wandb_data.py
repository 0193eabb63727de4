"""The state of the W&B stand-in and its answers to GraphQL operations (no HTTP here: see wandb_server).

Runs live in projects of one entity; a run's history is a dict step -> row, as the service keys history
by step. ``HistoryPage`` answers at most ``pageSize`` rows: a wider range is sampled, as the service does,
so a client asking too wide a range loses rows, as it would against the real service.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("standin.wandb")

_FIELDS = {
    "user": "username",
    "name": "id",
    "displayName": "display_name",
    "display_name": "display_name",
    "state": "state",
    "tags": "tags",
    "group": "group",
    "jobType": "job_type",
}


@dataclass
class FakeRun:
    id: str
    display_name: str
    created_at: float
    state: str = "running"
    tags: list[str] = field(default_factory=list)
    heartbeat_at: float = 0.0
    group: str | None = None
    job_type: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    quirk: str | None = None  # "duplicate" | "shuffle": how HistoryPage answers are mangled

    def ordered(self) -> list[dict[str, Any]]:
        return [self.rows[s] for s in sorted(self.rows)]

    @property
    def last_step(self) -> int:
        return max(self.rows) if self.rows else -1

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for row in self.ordered():
            out.update(row)
        return out


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _sample(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Evenly spaced ``n`` of ``rows`` keeping the first and last, as the service's sampling does."""
    if n <= 0 or len(rows) <= n:
        return rows
    if n == 1:
        return [rows[-1]]
    idx = sorted({round(i * (len(rows) - 1) / (n - 1)) for i in range(n)})
    return [rows[i] for i in idx]


class WandbData:
    """Projects, runs and their history, and the GraphQL answers about them. Thread-safe."""

    def __init__(self, entity: str, clock: float, step_seconds: float) -> None:
        self.entity = entity
        self.clock = clock  # the server's time: moved by ``log`` and by tests, never by the wall clock
        self.step_seconds = step_seconds
        self.projects: dict[str, dict[str, FakeRun]] = {}
        self.unknown_operations: list[str] = []
        self._lock = threading.RLock()
        # called with (operation, variables) before each answer: e.g. delete a run mid-poll
        self.before_answer: Callable[[str, dict[str, Any]], None] | None = None

    # ---- the data ------------------------------------------------------------------------------
    def add_run(
        self,
        project: str,
        run_id: str,
        *,
        display_name: str | None = None,
        tags: Iterable[str] = (),
        state: str = "running",
        config: Mapping[str, Any] | None = None,
    ) -> FakeRun:
        with self._lock:
            run = FakeRun(
                run_id,
                display_name or run_id,
                created_at=self.clock,
                state=state,
                tags=list(tags),
                heartbeat_at=self.clock,
                config=dict(config or {}),
            )
            self.projects.setdefault(project, {})[run_id] = run
            self.clock += 1.0
            return run

    def run(self, project: str, run_id: str) -> FakeRun:
        return self.projects[project][run_id]

    def log(self, project: str, run_id: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Log history rows as the SDK would: each needs ``_step``; ``_timestamp`` and ``_runtime`` are
        filled in from the server clock (each row moves it by ``step_seconds``) unless given. A row for a
        step already logged replaces it."""
        with self._lock:
            run = self.run(project, run_id)
            for given in rows:
                row = dict(given)
                step = int(row["_step"])
                if "_timestamp" not in row:
                    self.clock += self.step_seconds
                    row["_timestamp"] = self.clock
                row.setdefault("_runtime", row["_timestamp"] - run.created_at)
                run.rows[step] = row
                run.heartbeat_at = max(run.heartbeat_at, float(row["_timestamp"]))

    def log_steps(
        self,
        project: str,
        run_id: str,
        start: int,
        stop: int,
        metrics: Callable[[int], Mapping[str, Any]] | None = None,
    ) -> None:
        """Log steps ``start`` .. ``stop - 1`` with a falling loss (or ``metrics(step)``)."""
        fn = metrics or (lambda s: {"train/loss": 10.0 / (1.0 + s / 100.0) + 0.001, "global_step": s})
        self.log(project, run_id, ({"_step": s, **fn(s)} for s in range(start, stop)))

    def rewind(self, project: str, run_id: str, to_step: int) -> None:
        """The run resumed from a checkpoint at ``to_step``: the service drops the history after it."""
        with self._lock:
            run = self.run(project, run_id)
            run.rows = {s: r for s, r in run.rows.items() if s <= to_step}

    def set_state(self, project: str, run_id: str, state: str) -> None:
        with self._lock:
            self.run(project, run_id).state = state

    def set_tags(self, project: str, run_id: str, tags: Iterable[str]) -> None:
        with self._lock:
            self.run(project, run_id).tags = list(tags)

    def delete_run(self, project: str, run_id: str) -> None:
        with self._lock:
            del self.projects[project][run_id]

    # ---- GraphQL ---------------------------------------------------------------------------------
    def answer(self, operation: str, query: str, v: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.before_answer is not None:
                self.before_answer(operation, v)
            handler = getattr(self, f"_op_{operation}", None)
            if handler is None:
                self.unknown_operations.append(operation)
                log.error("wandb stand-in: UNKNOWN OPERATION %r (variables %s)\n%s", operation, v, query)
                return {"data": None, "errors": [{"message": f"stand-in does not implement {operation}"}]}
            return {"data": handler(query, v)}

    def _run_of(self, v: dict[str, Any], key: str = "name") -> FakeRun | None:
        if v.get("entity") not in (None, self.entity):
            return None
        return self.projects.get(v.get("project", ""), {}).get(v.get(key, ""))

    def _wrap_run(self, v: dict[str, Any], key: str, body: Callable[[FakeRun], dict[str, Any]]) -> dict:
        run = self._run_of(v, key)
        if run is None:
            return {"project": None if v.get("project") not in self.projects else {"run": None}}
        return {"project": {"run": body(run)}}

    def _op_Viewer(self, q: str, v: dict) -> dict:  # noqa: N802
        return {
            "viewer": {
                "id": "VXNlcjox",
                "entity": self.entity,
                "username": "herowatch-test",
                "email": "test@example.invalid",
                "admin": False,
                "flags": "{}",
                "teams": {"edges": [{"node": {"name": self.entity}}]},
            }
        }

    _op_GetDefaultEntity = _op_Viewer

    def _node(self, run: FakeRun, q: str) -> dict[str, Any]:
        node: dict[str, Any] = {
            "id": base64.b64encode(f"Run:{run.id}".encode()).decode(),
            "name": run.id,
            "projectId": "1",
            "displayName": run.display_name,
            "state": run.state,
            "tags": list(run.tags),
            "createdAt": iso(run.created_at),
            "heartbeatAt": iso(run.heartbeat_at),
            "historyLineCount": len(run.rows),
            "sweepName": None,
            "group": run.group,
            "jobType": run.job_type,
            "commit": None,
            "readOnly": False,
            "description": None,
            "notes": None,
            "user": {"name": "herowatch test", "username": "herowatch-test"},
        }
        if re.search(r"\bconfig\b", q):
            node["config"] = json.dumps({k: {"value": x} for k, x in run.config.items()})
        if "summaryMetrics" in q:
            node["summaryMetrics"] = json.dumps(run.summary())  # NaN as the SDK writes it
        if "systemMetrics" in q:
            node["systemMetrics"] = "{}"
        if "historyKeys" in q:
            node["historyKeys"] = self._history_keys(run)
        return node

    def _history_keys(self, run: FakeRun) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for row in run.rows.values():
            for k in row:
                counts[k] = counts.get(k, 0) + 1
        keys = {k: {"typeCounts": [{"type": "number", "count": n}]} for k, n in counts.items()}
        return {"keys": keys, "lastStep": run.last_step}

    def _op_Run(self, q: str, v: dict) -> dict:  # noqa: N802
        return self._wrap_run(v, "name", lambda run: self._node(run, q))

    def _op_RunState(self, q: str, v: dict) -> dict:  # noqa: N802
        return self._wrap_run(v, "name", lambda run: {"state": run.state})

    def _op_Runs(self, q: str, v: dict) -> dict:  # noqa: N802
        if v.get("entity") != self.entity or v.get("project") not in self.projects:
            return {"project": None}
        flt = json.loads(v.get("filters") or "{}")
        runs = [r for r in self.projects[v["project"]].values() if _matches(r, flt)]
        order = v.get("order") or "+created_at"
        attr = {"created_at": "created_at", "heartbeat_at": "heartbeat_at"}.get(
            order.lstrip("+-"), "created_at"
        )
        runs.sort(key=lambda r: (getattr(r, attr), r.id), reverse=order.startswith("-"))
        start = int(base64.b64decode(v["cursor"]).decode()) + 1 if v.get("cursor") else 0
        per_page = int(v.get("perPage") or 50)
        page = runs[start : start + per_page]
        edges = [
            {"node": self._node(r, q), "cursor": base64.b64encode(str(start + i).encode()).decode()}
            for i, r in enumerate(page)
        ]
        return {
            "project": {
                "internalId": "1",
                "runCount": len(runs),
                "readOnly": False,
                "runs": {
                    "edges": edges,
                    "pageInfo": {
                        "endCursor": edges[-1]["cursor"] if edges else None,
                        "hasNextPage": start + per_page < len(runs),
                    },
                },
            }
        }

    def _op_RunHistoryKeys(self, q: str, v: dict) -> dict:  # noqa: N802
        return self._wrap_run(v, "name", lambda run: {"historyKeys": self._history_keys(run)})

    def _op_RunParquetHistory(self, q: str, v: dict) -> dict:  # noqa: N802
        keys = v.get("liveKeys") or ["_step"]

        def body(run: FakeRun) -> dict:
            live = [{k: _json_safe(r[k]) for k in keys if k in r} for r in run.ordered()]
            return {"parquetHistory": {"parquetUrls": [], "liveData": live}}

        return self._wrap_run(v, "runName", body)

    def _op_HistoryPage(self, q: str, v: dict) -> dict:  # noqa: N802
        lo, hi, n = int(v["minStep"]), int(v["maxStep"]), int(v["pageSize"])

        def body(run: FakeRun) -> dict:
            rows = _sample([r for r in run.ordered() if lo <= r["_step"] < hi], n)
            if run.quirk == "duplicate":
                rows = list(itertools.chain.from_iterable((r, r) for r in rows))
            elif run.quirk == "shuffle":
                rows = rows[::-1]
            return {"history": [json.dumps(r) for r in rows]}

        return self._wrap_run(v, "run", body)

    def _op_SampledHistoryPage(self, q: str, v: dict) -> dict:  # noqa: N802
        spec = json.loads(v["spec"])
        keys, lo, hi = spec["keys"], int(spec.get("minStep", 0)), int(spec.get("maxStep", 2**62))

        def body(run: FakeRun) -> dict:
            rows = [r for r in run.ordered() if lo <= r["_step"] <= hi and all(k in r for k in keys)]
            rows = _sample(rows, int(spec.get("samples", 500)))
            return {"sampledHistory": [[{k: _json_safe(r[k]) for k in keys} for r in rows]]}

        return self._wrap_run(v, "run", body)

    def _op_RunSampledHistory(self, q: str, v: dict) -> dict:  # noqa: N802
        def body(run: FakeRun) -> dict:
            out = []
            for spec in map(json.loads, v["specs"]):
                rows = [r for r in run.ordered() if all(k in r for k in spec["keys"])]
                rows = _sample(rows, int(spec.get("samples", 500)))
                out.append([{k: _json_safe(r[k]) for k in spec["keys"]} for r in rows])
            return {"sampledHistory": out}

        return self._wrap_run(v, "name", body)

    def _op_RunFullHistory(self, q: str, v: dict) -> dict:  # noqa: N802
        def body(run: FakeRun) -> dict:
            rows = _sample(run.ordered(), int(v.get("samples") or 500))
            return {"history": [json.dumps(r) for r in rows], "events": []}

        return self._wrap_run(v, "name", body)


# ---- the Mongo-style run filters the service accepts (the subset the clients here use) ----------
def _field(run: FakeRun, name: str) -> Any:
    if name in _FIELDS:
        return getattr(run, _FIELDS[name]) if name != "user" else "herowatch-test"
    if name.startswith("config."):
        return run.config.get(name.split(".", 1)[1].removesuffix(".value"))
    if name.startswith("summary_metrics."):
        return run.summary().get(name.split(".", 1)[1])
    raise ValueError(f"stand-in cannot filter on {name!r}")


def _cond(value: Any, cond: Any) -> bool:
    many = value if isinstance(value, list) else [value]
    if not isinstance(cond, dict):
        return cond in many
    ok = True
    for op, arg in cond.items():
        if op == "$eq":
            ok &= arg in many
        elif op == "$ne":
            ok &= arg not in many
        elif op == "$in":
            ok &= any(x in arg for x in many)
        elif op == "$nin":
            ok &= not any(x in arg for x in many)
        elif op == "$regex":
            ok &= any(isinstance(x, str) and re.search(arg, x) is not None for x in many)
        elif op == "$exists":
            ok &= (value is not None) == bool(arg)
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            cmp = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}[op]
            ok &= value is not None and cmp(float(value), float(arg))
        else:
            raise ValueError(f"stand-in does not support filter operator {op!r}")
    return ok


def _matches(run: FakeRun, flt: Mapping[str, Any]) -> bool:
    for key, cond in flt.items():
        if key == "$and":
            ok = all(_matches(run, f) for f in cond)
        elif key == "$or":
            ok = any(_matches(run, f) for f in cond)
        elif key == "$nor":
            ok = not any(_matches(run, f) for f in cond)
        else:
            ok = _cond(_field(run, key), cond)
        if not ok:
            return False
    return True
