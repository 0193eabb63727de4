"""Source kind ``wandb``: runs of a Weights & Biases project, read incrementally at full resolution.

One poll of a target costs one ``Runs`` request per page of runs (state, heartbeat, history length and
summary of every run selected), then ``HistoryPage`` requests only for the runs whose history moved,
from their stored step cursor (see monitor.sources.wandb_history for cursors and rewinds). On first
sight of a run only its last ``warmup_steps`` steps are read, not weeks of history.

Selection happens on the server (a Mongo-style filter) and again here. Runs this source already follows
(it holds their cursors) are listed whatever the selector says, so that a run dropping out of a
``states: [running]`` selector by crashing is seen crashing; a followed run that is no longer listed was
deleted, and is reported once with state ``deleted``.

Anything unreadable (timeouts, 5xx, a refused key, an unexpected answer) makes the whole poll an error:
no samples and no cursor moves, so the engine sees "source unavailable", never "no new steps".
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import SecretStr

from monitor.run_ids import qualify
from monitor.samples import RunInfo, RunState, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.wandb_client import (
    HISTORY_PAGE_QUERY,
    RUNS_QUERY,
    RequestCount,
    WandbClient,
    WandbUnavailable,
)
from monitor.sources.wandb_config import WandbTarget
from monitor.sources.wandb_history import (
    SOURCE,
    KeyFilter,
    Plan,
    RunView,
    Settled,
    continuous,
    logged_before,
    merge,
    pages,
    parse_history,
    plan,
    settle,
    state_sample,
    to_samples,
)

log = logging.getLogger(__name__)
_MAX_LIST_PAGES = 1000


def selector_filter(cfg: WandbTarget) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if cfg.run_ids:
        parts.append({"name": {"$in": cfg.run_ids}})
    if cfg.tags:
        parts.append({"tags": {"$in": cfg.tags}})
    if cfg.name_pattern:
        parts.append({"display_name": {"$regex": cfg.name_pattern}})
    if cfg.states:
        parts.append({"state": {"$in": list(cfg.states)}})
    if len(parts) > 1:
        return {"$and": parts}
    return parts[0] if parts else {}


def runs_filter(cfg: WandbTarget, followed: set[str]) -> dict[str, Any]:
    """The selector, or a run already followed."""
    selector = selector_filter(cfg)
    if followed and selector:
        return {"$or": [selector, {"name": {"$in": sorted(followed)}}]}
    return selector


class Selector:
    """The same selection, checked here too (the server's filter is trusted for cost, not correctness)."""

    def __init__(self, cfg: WandbTarget) -> None:
        self.cfg = cfg
        self.pattern = re.compile(cfg.name_pattern) if cfg.name_pattern else None

    def __call__(self, view: RunView) -> bool:
        cfg = self.cfg
        return (
            (not cfg.run_ids or view.id in cfg.run_ids)
            and (not cfg.tags or bool(set(view.tags) & set(cfg.tags)))
            and (self.pattern is None or self.pattern.search(view.display_name or "") is not None)
            and (not cfg.states or view.state in cfg.states)
        )


class _Poll:
    """One poll of one target: the requests and what they found."""

    def __init__(
        self, source: WandbSource, client: WandbClient, cfg: WandbTarget, count: RequestCount
    ) -> None:
        self.client, self.cfg, self.sleep, self.count = client, cfg, source.sleep, count
        self.failed = threading.Event()  # once one request has failed, the rest are not sent

    def ask(self, operation: str, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        if self.failed.is_set():
            raise WandbUnavailable("skipped after an earlier failure in this poll")
        try:
            return self.client.execute(
                operation,
                query,
                variables,
                timeout=self.cfg.timeout,
                attempts=self.cfg.retries + 1,
                backoff=self.cfg.backoff,
                count=self.count,
                sleep=self.sleep,
            )
        except WandbUnavailable:
            self.failed.set()
            raise

    def list_runs(self, followed: set[str]) -> list[dict[str, Any]]:
        cfg = self.cfg
        variables: dict[str, Any] = {
            "entity": cfg.entity,
            "project": cfg.project,
            "order": "+created_at",
            "filters": json.dumps(runs_filter(cfg, followed)),
            "perPage": cfg.per_page,
            "cursor": None,
        }
        nodes: list[dict[str, Any]] = []
        for _ in range(_MAX_LIST_PAGES):
            project = self.ask("Runs", RUNS_QUERY, variables).get("project")
            if project is None:
                raise WandbUnavailable(f"project {cfg.entity}/{cfg.project} not found at {cfg.base_url}")
            runs = project.get("runs") or {}
            edges = runs.get("edges") or []
            nodes.extend(edge["node"] for edge in edges)
            info = runs.get("pageInfo") or {}
            if not edges or not info.get("hasNextPage"):
                break
            variables["cursor"] = info.get("endCursor") or edges[-1].get("cursor")
        return nodes

    def page(self, run_id: str, lo: int, hi_exclusive: int) -> list[dict[str, Any]] | None:
        """One ``HistoryPage``: every row with ``lo`` <= step < ``hi_exclusive``; None if the run is gone."""
        cfg = self.cfg
        variables = {
            "entity": cfg.entity,
            "project": cfg.project,
            "run": run_id,
            "minStep": lo,
            "maxStep": hi_exclusive,
            "pageSize": hi_exclusive - lo,
        }
        run = (self.ask("HistoryPage", HISTORY_PAGE_QUERY, variables).get("project") or {}).get("run")
        return None if run is None else parse_history(run.get("history") or [], lo, hi_exclusive)

    def history(self, run_id: str, lo: int, hi: int) -> list[dict[str, Any]] | None:
        """Steps ``lo`` .. ``hi`` of a run at full resolution, page by page; None if the run is gone."""
        rows: list[dict[str, Any]] = []
        for a, b in pages(lo, hi, self.cfg.history_page_size):
            page = self.page(run_id, a, b)
            if page is None:
                return None
            rows.extend(page)
        return merge(rows)

    def history_back(
        self,
        run_id: str,
        hi: int,
        floor: int,
        cursor: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]] | None:
        """After a rewind: pages from step ``hi`` back towards ``floor``, until a page holds a row logged
        before the last read (the history the run went back to), so usually a single page."""
        rows: list[dict[str, Any]] = []
        end = hi + 1
        while end > floor:
            start = max(floor, end - self.cfg.history_page_size)
            page = self.page(run_id, start, end)
            if page is None:
                return None
            rows = page + rows
            if any(logged_before(r, cursor) for r in page):
                break
            end = start
        return merge(rows)

    def read(self, p: Plan, cursor: Mapping[str, Any] | None) -> Settled | None:
        if p.mode == "rewind":
            rows = self.history_back(p.run.id, p.hi, p.lo, cursor)
            return None if rows is None else settle(p, cursor, rows, rewritten=False)
        rows = self.history(p.run.id, p.lo, p.hi)
        if rows is None:
            return None
        rewritten = p.mode == "continue" and cursor is not None and not continuous(rows, cursor)
        if rewritten:  # re-logged past the cursor after a rewind: look back for where it went back to
            floor = max(0, p.lo - self.cfg.warmup_steps + 1)
            earlier = self.history_back(p.run.id, p.lo - 1, floor, cursor) if floor < p.lo else []
            if earlier is None:
                return None
            rows = merge([*earlier, *rows])
        return settle(p, cursor, rows, rewritten)

    def read_one(self, p: Plan, cursor: Cursor | None) -> Settled | Unreadable | None:
        """One run's history; an answer about this run that makes no sense is this run's problem
        (``Unreadable``), a server that cannot be read is the watch's (``WandbUnavailable``)."""
        try:
            return self.read(p, cursor)
        except WandbUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - one run's odd history never blinds the others
            return Unreadable(f"unexpected history of run {p.run.id}: {type(exc).__name__}: {str(exc)[:300]}")

    def read_all(
        self, plans: list[Plan], cursors: Mapping[str, Cursor]
    ) -> dict[str, Settled | Unreadable | None]:
        if len(plans) <= 1:
            return {p.run.id: self.read_one(p, cursors.get(p.run.id)) for p in plans}
        workers = min(self.cfg.max_concurrency, len(plans))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wandb-history") as pool:
            futures = {p.run.id: pool.submit(self.read_one, p, cursors.get(p.run.id)) for p in plans}
        return {run_id: f.result() for run_id, f in futures.items()}


@dataclass(frozen=True)
class Unreadable:
    why: str


class WandbSource:
    """Source kind ``wandb``. The API key comes from Settings (``WANDB_API_KEY``) and nowhere else."""

    kind: ClassVar[str] = "wandb"

    def __init__(self, settings: Settings | None = None) -> None:
        self._key: SecretStr | None = settings.wandb_api_key if settings is not None else None
        self._clients: dict[str, WandbClient] = {}
        self._lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()
        self.sleep: Callable[[float], None] = time.sleep  # between retries; tests may replace it

    def _client(self, cfg: WandbTarget, count: RequestCount) -> WandbClient:
        key = self._key.get_secret_value() if self._key is not None else ""
        if not key:
            raise WandbUnavailable("no W&B API key: set WANDB_API_KEY in herowatch's environment")
        with self._lock:
            client = self._clients.get(cfg.base_url)
            if client is None:
                count.add("Viewer")  # signing in asks the server who the key belongs to
                client = WandbClient(cfg.base_url, key, cfg.timeout, cfg.max_concurrency)
                self._clients[cfg.base_url] = client
            return client

    def _redact(self, text: str) -> str:
        key = self._key.get_secret_value() if self._key is not None else ""
        return text.replace(key, "***") if key else text

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: WandbTarget = target.config
        count = RequestCount()
        try:
            job = _Poll(self, self._client(cfg, count), cfg, count)
            result = self._poll(job, target, cursors, now)
        except WandbUnavailable as exc:
            log.warning("watch %s: W&B unreadable: %s", target.watch, exc)
            result = PollResult(error=str(exc))
        except Exception as exc:  # an answer that makes no sense: unreadable, not stalled
            msg = self._redact(f"unexpected answer from W&B at {cfg.base_url}: {type(exc).__name__}: {exc}")
            log.warning("watch %s: %s", target.watch, msg)
            result = PollResult(error=msg)
        result.requests = count.total
        return result

    def _poll(self, job: _Poll, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg = job.cfg
        where = f"{cfg.entity}/{cfg.project}"
        prefix = qualify(SOURCE, where, "")  # herowatch's id of a run is this + its W&B id (run_ids)
        # only this project's cursors, by W&B id: the engine may hand over other watches' too
        cursors = {k[len(prefix) :]: c for k, c in cursors.items() if k.startswith(prefix)}
        followed = {run_id for run_id, c in cursors.items() if not c.get("deleted")}
        selected = Selector(cfg)
        views: dict[str, RunView] = {}
        for node in job.list_runs(followed):
            view = RunView.from_node(node)
            if view.id in followed or selected(view):
                views[view.id] = view
        self._warn_missing(cfg, views)
        plans = [p for v in views.values() if (p := plan(v, cursors.get(v.id), cfg.warmup_steps)) is not None]
        read = job.read_all(plans, cursors)

        keys = KeyFilter(cfg.keys)
        out = PollResult()
        for run_id, view in views.items():
            cursor = dict(cursors.get(run_id) or {})
            if run_id in read and read[run_id] is None:  # deleted between the listing and its history
                self._gone(out, cfg, run_id, cursor, now)
                continue
            if isinstance(settled := read.get(run_id), Unreadable):
                out.unreadable[prefix + run_id] = self._redact(settled.why)
                settled = None
            if settled is not None:
                if settled.rewound_to is not None:
                    log.info(
                        "watch %s: run %s went back from step %s to %s (resumed from a checkpoint)",
                        target.watch,
                        run_id,
                        cursor.get("step"),
                        settled.rewound_to,
                    )
                out.samples.extend(to_samples(settled.rows, prefix + run_id, keys, now))
                out.logged[prefix + run_id] = sorted(
                    {k for row in settled.rows for k in row if not k.startswith("_")}
                )
                cursor = settled.cursor
            else:
                cursor.pop("deleted", None)
                cursor["state"] = view.state
                if "step" in cursor:
                    cursor["lines"] = view.lines
            out.samples.append(state_sample(view, now, prefix + run_id))
            out.runs.append(self._info(cfg, target, view))
            out.cursors[prefix + run_id] = cursor
        for run_id in sorted(followed - views.keys()):
            self._gone(out, cfg, run_id, dict(cursors.get(run_id) or {}), now)
        for cursor in out.cursors.values():
            cursor["project"] = where
        return out

    @staticmethod
    def _info(cfg: WandbTarget, target: Target, view: RunView) -> RunInfo:
        labels = {
            "source": SOURCE,
            "wandb_project": f"{cfg.entity}/{cfg.project}",
            **{f"tag.{t}": "true" for t in view.tags},
            **dict(target.labels),
        }
        where = f"{cfg.entity}/{cfg.project}"
        return RunInfo(
            run=qualify(SOURCE, where, view.id),
            source=SOURCE,
            display_name=view.display_name,
            state=view.state,
            labels=labels,
            url=cfg.run_url(view.id),
            heartbeat_at=view.heartbeat_at,
            name=view.id,
            project=where,
        )

    @staticmethod
    def _gone(out: PollResult, cfg: WandbTarget, run_id: str, cursor: Cursor, now: float) -> None:
        log.warning("run %s is no longer in W&B project %s/%s (deleted?)", run_id, cfg.entity, cfg.project)
        where = f"{cfg.entity}/{cfg.project}"
        key = qualify(SOURCE, where, run_id)
        out.samples.append(Sample(t=now, run=key, state=RunState.DELETED, source=SOURCE))
        out.runs.append(
            RunInfo(
                run=key,
                source=SOURCE,
                state=RunState.DELETED,
                url=cfg.run_url(run_id),
                name=run_id,
                project=where,
            )
        )
        out.cursors[key] = {**cursor, "deleted": True, "state": RunState.DELETED.value}

    def _warn_missing(self, cfg: WandbTarget, views: Mapping[str, RunView]) -> None:
        for run_id in cfg.run_ids:
            if run_id not in views and (cfg.project, run_id) not in self._warned:
                self._warned.add((cfg.project, run_id))
                log.warning("run id %s not found in W&B project %s/%s", run_id, cfg.entity, cfg.project)

    def close(self) -> None:
        with self._lock:
            self._clients.clear()
