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
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from pydantic import SecretStr

from monitor.run_ids import qualify
from monitor.samples import RunInfo, RunState, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.quota import Quota
from monitor.sources.wandb_budget import Pass, admit, throttle
from monitor.sources.wandb_client import (
    HISTORY_PAGE_QUERY,
    RUNS_QUERY,
    OverQuota,
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
from monitor.sources.wandb_select import Selector, runs_filter

log = logging.getLogger(__name__)
_MAX_LIST_PAGES = 1000


class _Poll:
    """One poll of one target: the requests and what they found."""

    def __init__(
        self, source: WandbSource, client: WandbClient, cfg: WandbTarget, count: RequestCount
    ) -> None:
        self.client, self.cfg, self.sleep, self.count = client, cfg, source.sleep, count
        self.failed = threading.Event()  # once one request has failed, the rest are not sent
        self.listing = 0  # Runs pages asked this poll

    def ask(
        self, operation: str, query: str, variables: Mapping[str, Any], paid: Pass | None = None
    ) -> dict[str, Any]:
        """One operation. Its place in the quota: one ``paid`` ahead, else taken now, waiting up to the
        pass's wait (the listing: a request's time-out); ``OverQuota`` if none is free by then."""
        if self.failed.is_set():
            raise WandbUnavailable("skipped after an earlier failure in this poll")
        wait = self.cfg.timeout if paid is None else paid.wait

        def place() -> None:
            if (paid is None or not paid.use()) and not self.client.quota.take(1, wait=wait):
                raise OverQuota(
                    f"no place in the quota ({self.cfg.rate_limit} per {self.cfg.rate_limit_window:g}s)"
                )

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
                admit=place,
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
            self.listing += 1
            try:
                project = self.ask("Runs", RUNS_QUERY, variables).get("project")
            except OverQuota as exc:  # the listing waits for its place; none in time: unreadable now
                raise WandbUnavailable(f"W&B at {cfg.base_url}: {exc} for the run listing") from None
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

    def page(self, run_id: str, lo: int, hi_exclusive: int, paid: Pass) -> list[dict[str, Any]] | None:
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
        run = (self.ask("HistoryPage", HISTORY_PAGE_QUERY, variables, paid).get("project") or {}).get("run")
        return None if run is None else parse_history(run.get("history") or [], lo, hi_exclusive)

    def history(self, run_id: str, lo: int, hi: int, paid: Pass) -> list[dict[str, Any]] | None:
        """Steps ``lo`` .. ``hi`` of a run at full resolution, page by page; None if the run is gone."""
        rows: list[dict[str, Any]] = []
        for a, b in pages(lo, hi, self.cfg.history_page_size):
            page = self.page(run_id, a, b, paid)
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
        paid: Pass,
    ) -> list[dict[str, Any]] | None:
        """After a rewind: pages from step ``hi`` back towards ``floor``, until a page holds a row logged
        before the last read (the history the run went back to), so usually a single page."""
        rows: list[dict[str, Any]] = []
        end = hi + 1
        while end > floor:
            start = max(floor, end - self.cfg.history_page_size)
            page = self.page(run_id, start, end, paid)
            if page is None:
                return None
            rows = page + rows
            if any(logged_before(r, cursor) for r in page):
                break
            end = start
        return merge(rows)

    def read(self, p: Plan, cursor: Mapping[str, Any] | None, paid: Pass) -> Settled | None | OverQuota:
        """The run's new rows and cursor; None if the run is gone; ``OverQuota`` if a further page found no
        place in time (the read is put off, as if not admitted)."""
        try:
            return self._read(p, cursor, paid)
        except OverQuota as exc:
            return exc
        finally:
            if paid.left:
                self.client.quota.give_back(paid.left)

    def _read(self, p: Plan, cursor: Mapping[str, Any] | None, paid: Pass) -> Settled | None:
        if p.mode == "rewind":
            rows = self.history_back(p.run.id, p.hi, p.lo, cursor, paid)
            return None if rows is None else settle(p, cursor, rows, rewritten=False)
        rows = self.history(p.run.id, p.lo, p.hi, paid)
        if rows is None:
            return None
        rewritten = p.mode == "continue" and cursor is not None and not continuous(rows, cursor)
        if rewritten:  # re-logged past the cursor after a rewind: look back for where it went back to
            floor = max(0, p.lo - self.cfg.warmup_steps + 1)
            earlier = self.history_back(p.run.id, p.lo - 1, floor, cursor, paid) if floor < p.lo else []
            if earlier is None:
                return None
            rows = merge([*earlier, *rows])
        return settle(p, cursor, rows, rewritten)

    def read_all(
        self, reads: list[tuple[Plan, Pass]], cursors: Mapping[str, Cursor]
    ) -> dict[str, Settled | None | OverQuota]:
        if len(reads) <= 1:
            return {p.run.id: self.read(p, cursors.get(p.run.id), paid) for p, paid in reads}
        workers = min(self.cfg.max_concurrency, len(reads))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wandb-history") as pool:
            futures = {p.run.id: pool.submit(self.read, p, cursors.get(p.run.id), paid) for p, paid in reads}
        return {run_id: f.result() for run_id, f in futures.items()}


class WandbSource:
    """Source kind ``wandb``. The API key comes from Settings (``WANDB_API_KEY``) and nowhere else."""

    kind: ClassVar[str] = "wandb"

    def __init__(self, settings: Settings | None = None) -> None:
        self._key: SecretStr | None = settings.wandb_api_key if settings is not None else None
        self._clients: dict[str, WandbClient] = {}
        self._lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()
        self.sleep: Callable[[float], None] = time.sleep  # between retries; tests may replace it
        # The quota's clock and its waits (real time; a bench or test moves a simulated one).
        self.clock: Callable[[], float] = time.monotonic
        self.quota_sleep: Callable[[float], None] = time.sleep
        self._read_at: dict[str, float] = {}  # herowatch run id -> when its history was last read (clock)

    def _client(self, cfg: WandbTarget, count: RequestCount) -> WandbClient:
        key = self._key.get_secret_value() if self._key is not None else ""
        if not key:
            raise WandbUnavailable("no W&B API key: set WANDB_API_KEY in herowatch's environment")
        with self._lock:
            client = self._clients.get(cfg.base_url)
            if client is None:
                count.add("Viewer")  # signing in asks the server who the key belongs to
                quota = Quota(
                    cfg.rate_limit,
                    cfg.rate_limit_window,
                    clock=lambda: self.clock(),
                    sleep=lambda seconds: self.quota_sleep(seconds),
                )
                client = WandbClient(cfg.base_url, key, cfg.timeout, cfg.max_concurrency, quota)
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
        read_at = {
            p.run.id: self._read_at[prefix + p.run.id] for p in plans if prefix + p.run.id in self._read_at
        }
        reads, deferred = admit(plans, cfg, job.client.quota, read_at, job.listing)
        read = job.read_all(reads, cursors)
        deferred += [p for p in plans if isinstance(read.get(p.run.id), OverQuota)]
        put_off = {p.run.id for p in deferred}
        done_at = self.clock()
        for run_id in read.keys() - put_off:
            self._read_at[prefix + run_id] = done_at

        keys = KeyFilter(cfg.keys)
        out = PollResult(throttle=throttle(cfg, deferred, read_at, done_at))
        for run_id, view in views.items():
            cursor = dict(cursors.get(run_id) or {})
            if run_id in put_off:  # its new steps wait for a later poll: the cursor stays where it was
                cursor.pop("deleted", None)
                cursor["state"] = view.state
                out.samples.append(state_sample(view, now, prefix + run_id))
                out.runs.append(self._info(cfg, target, view))
                out.cursors[prefix + run_id] = cursor
                continue
            if run_id in read and read[run_id] is None:  # deleted between the listing and its history
                self._gone(out, cfg, run_id, cursor, now)
                continue
            if (settled := read.get(run_id)) is not None:
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
