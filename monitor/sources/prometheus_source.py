"""Source kind ``prometheus``: named PromQL queries per run, read through the HTTP API with httpx.

Each poll reads, for every run of the watch (``runs`` from the config plus the runs the watch already
knows) and every alias (``prometheus_config``), what is new since the run's cursor:

* first sight of a run (no cursor): a range query over ``lookback``, to warm the rules up;
* later, in ``range`` mode, a range query from the step after the cursor to now; in ``instant`` mode an
  instant query at now. A cursor older than ``lookback`` is caught up over ``lookback`` only.

Range queries are evaluated on a grid of ``step`` (timestamps that are multiples of it), so the values
of all aliases of a run at one timestamp make one Sample, and successive reads neither overlap nor
leave holes. The cursor keeps the last timestamp read and the state of the counters (see the kinds in
``prometheus_config``).

Failures: a refused connection, a timeout, HTTP 429/5xx are retried ``retries`` times with exponential
backoff and jitter; a PromQL error (HTTP 400/422) is not. If any query of a poll fails, the poll
returns ``PollResult(error=...)`` with no samples and no cursor moved: the next poll reads the same
span again. A query that returns no series is not a failure: that alias has no value (logged).
When no run has anything new to read (polled faster than ``step``), one ``vector(1)`` query is
sent anyway, so that an unreachable server is always reported.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import threading
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from monitor.run_ids import qualify
from monitor.samples import RunInfo, Sample
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.prometheus_config import (
    TOKEN_ENV,
    PrometheusTarget,
    QueryKind,
    QuerySpec,
    TemplateError,
    query_runs,
    render,
    template_values,
)

log = logging.getLogger(__name__)

SOURCE = "prometheus"
_PROBE = "(probe)"  # run and alias of the request sent when nothing is due
_BACKOFF_CAP = 30.0

Series = tuple[dict[str, str], list[tuple[float, float]]]  # labels, (t, value) in time order


class QueryFailed(Exception):
    """A query could not be answered: the message says why (never holds credentials)."""


class _Aborted(Exception):
    """Another query of the same poll failed: this one is not sent."""


@dataclass(frozen=True)
class _Request:
    run: str
    alias: str
    path: str  # /api/v1/query or /api/v1/query_range
    params: dict[str, str]


@dataclass
class _Window:
    """What to read for one run: a range [start, end] on the step grid, an instant, or nothing."""

    last: float | None  # the cursor's last timestamp
    start: float | None = None
    end: float | None = None
    instant: float | None = None

    @property
    def empty(self) -> bool:
        return self.start is None and self.instant is None

    @property
    def read_up_to(self) -> float | None:
        return self.instant if self.instant is not None else self.end


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def _window(cfg: PrometheusTarget, cursor: Cursor | None, now: float, where: str = "") -> _Window:
    step = cfg.step
    last = float(cursor["t"]) if cursor and cursor.get("t") is not None else None
    earliest = math.ceil((now - cfg.lookback) / step - 1e-9) * step
    if last is not None and cfg.mode == "instant":
        return _Window(last, instant=now) if now > last else _Window(last)
    start = earliest if last is None else (math.floor(last / step + 1e-9) + 1) * step
    if start < earliest:
        log.warning(
            "prometheus %s: skipping %.0fs not read since the last poll (more than lookback)",
            where,
            earliest - start,
        )
        start = earliest
    if start > now:
        return _Window(last)
    end = start + math.floor((now - start) / step + 1e-9) * step
    return _Window(last, start=start, end=end)


def _series_key(labels: Mapping[str, str]) -> str:
    text = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _parse(data: Any) -> list[Series]:
    kind, result = data.get("resultType"), data.get("result")
    if kind == "matrix":
        return [(s.get("metric", {}), [(float(t), float(v)) for t, v in s.get("values", [])]) for s in result]
    if kind == "vector":
        return [(s.get("metric", {}), [(float(s["value"][0]), float(s["value"][1]))]) for s in result]
    if kind == "scalar":
        return [({}, [(float(result[0]), float(result[1]))])]
    raise QueryFailed(f"the query returns a {kind}, not numbers")


def accumulate(
    kind: QueryKind,
    state: Mapping[str, Any] | None,
    series: list[Series],
    after: float | None,
    now: float,
    forget_after: float,
) -> tuple[list[tuple[float, float]], dict[str, Any]]:
    """Counter/events values per timestamp from the raw series, and the state to keep in the cursor.

    ``state`` is {"total": float, "series": {key: [last value, last seen]}}. Non-finite values are
    ignored (a counter has none). A ``counter`` series that drops was reset: its new value counts in
    full. An ``events`` series counts one for each change to a non-zero value.
    """
    total = float(state["total"]) if state else 0.0
    known: dict[str, list[float]] = {k: list(v) for k, v in (state or {}).get("series", {}).items()}
    points: dict[float, list[tuple[str, float]]] = defaultdict(list)
    for labels, values in series:
        key = _series_key(labels)
        for t, v in values:
            if (after is None or t > after) and math.isfinite(v):
                points[t].append((key, v))
    out: list[tuple[float, float]] = []
    for t in sorted(points):
        for key, v in points[t]:
            prev = known.get(key)
            if kind == "counter":
                total += v if prev is None or v < prev[0] else v - prev[0]
            elif v != 0 and (prev is None or v != prev[0]):
                total += 1.0
            known[key] = [v, t]
        out.append((t, total))
    known = {k: s for k, s in known.items() if now - s[1] <= forget_after}
    return out, {"total": total, "series": known}


class PrometheusSource:
    """Source kind ``prometheus``. One instance serves every watch; it keeps no run state of its own
    (all of it is in the cursors), only an HTTP client and one concurrency limit per server URL."""

    kind: ClassVar[str] = SOURCE

    def __init__(self, settings: object | None = None) -> None:
        token = getattr(settings, "prometheus_token", None)
        if token is not None and hasattr(token, "get_secret_value"):
            token = token.get_secret_value()
        self._token: str | None = token or os.environ.get(TOKEN_ENV) or None
        self._client = httpx.Client(follow_redirects=False)
        self._lock = threading.Lock()
        self._limits: dict[str, threading.Semaphore] = {}
        self._empty: dict[tuple[str, str], frozenset[str]] = {}
        self._rng = random.Random()

    # ---- the Source interface -------------------------------------------------------------------
    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        counter = _Counter()
        try:
            return self._poll(target, cursors, now, counter)
        except Exception as exc:  # noqa: BLE001 - a source never raises for an outage
            log.warning("prometheus watch %s: %s: %s", target.watch, type(exc).__name__, exc)
            return PollResult(error=f"prometheus: {type(exc).__name__}: {exc}", requests=counter.value)

    def close(self) -> None:
        self._client.close()

    # ---- one poll -------------------------------------------------------------------------------
    def _poll(
        self, target: Target, cursors: Mapping[str, Cursor], now: float, counter: _Counter
    ) -> PollResult:
        cfg: PrometheusTarget = target.config
        runs = query_runs(target, SOURCE)  # run id -> its name in the query templates
        if not runs:
            log.info(
                "prometheus watch %s: no runs yet (set prometheus.runs, or another source finds them)",
                target.watch,
            )
            return PollResult()
        queries = cfg.all_queries()
        windows: dict[str, _Window] = {}
        requests: list[_Request] = []
        for run in runs:
            win = windows[run] = _window(cfg, cursors.get(run), now, f"watch {target.watch}, run {run}")
            if win.empty:
                continue
            try:
                texts = self._texts(cfg, target, run, runs[run], queries)
            except TemplateError as exc:
                return PollResult(error=f"prometheus watch {target.watch}, run {run!r}: {exc}")
            for alias, text in texts.items():
                requests.append(self._request(cfg, run, alias, text, win))

        if not requests:  # nothing new on the grid yet: still make sure the server answers
            probe = {"query": "vector(1)", "time": f"{now:.3f}", "timeout": f"{cfg.timeout:g}"}
            requests.append(_Request(_PROBE, _PROBE, "/api/v1/query", probe))
        answers = self._run_all(cfg, requests, counter)
        if isinstance(answers, str):
            return PollResult(error=answers, requests=counter.value)

        result = PollResult(requests=counter.value)
        for run in runs:
            cursor = dict(cursors.get(run) or {})
            win = windows[run]
            if not win.empty:
                try:
                    samples, cursor = self._assemble(target, run, queries, win, cursor, answers, now)
                except QueryFailed as exc:
                    return PollResult(
                        error=f"prometheus watch {target.watch}, run {run!r}: {exc}", requests=counter.value
                    )
                result.samples.extend(samples)
            result.cursors[run] = cursor
            name = runs[run]
            if run == qualify(SOURCE, target.watch, name):  # a run of the config's own
                labels = {"source": SOURCE, **dict(target.labels), **cfg.run_labels.get(name, {})}
                info = RunInfo(run, SOURCE, name, labels=labels, name=name, project=target.watch)
                result.runs.append(info)
        return result

    def _texts(
        self, cfg: PrometheusTarget, target: Target, run: str, name: str, queries: Mapping[str, QuerySpec]
    ) -> dict[str, str]:
        values = template_values(target, run, name)
        fragments = {name: render(text, values) for name, text in cfg.all_selectors().items()}
        return {alias: render(q.expr, values, fragments) for alias, q in queries.items()}

    @staticmethod
    def _request(cfg: PrometheusTarget, run: str, alias: str, text: str, win: _Window) -> _Request:
        timeout = f"{cfg.timeout:g}"
        if win.instant is not None:
            params = {"query": text, "time": f"{win.instant:.3f}", "timeout": timeout}
            return _Request(run, alias, "/api/v1/query", params)
        params = {
            "query": text,
            "start": f"{win.start:.3f}",
            "end": f"{win.end:.3f}",
            "step": f"{cfg.step:g}",
            "timeout": timeout,
        }
        return _Request(run, alias, "/api/v1/query_range", params)

    def _assemble(
        self,
        target: Target,
        run: str,
        queries: Mapping[str, QuerySpec],
        win: _Window,
        cursor: dict[str, Any],
        answers: Mapping[tuple[str, str], list[Series]],
        now: float,
    ) -> tuple[list[Sample], dict[str, Any]]:
        cfg: PrometheusTarget = target.config
        rows: dict[float, dict[str, float]] = defaultdict(dict)
        counters = dict(cursor.get("counters") or {})
        empty: list[str] = []
        for alias, spec in queries.items():
            series = answers[(run, alias)]
            if not any(values for _, values in series):
                empty.append(alias)
                continue
            if spec.kind == "gauge":
                for _, values in series:
                    for t, v in values:
                        if win.last is not None and t <= win.last:
                            continue
                        if alias in rows[t]:
                            raise QueryFailed(
                                f"query {alias!r} returns several series; aggregate it, e.g. min(...)"
                            )
                        rows[t][alias] = v
            else:
                points, counters[alias] = accumulate(
                    spec.kind, counters.get(alias), series, win.last, now, cfg.forget_after
                )
                for t, v in points:
                    rows[t][alias] = v
        self._note_empty(target.watch, run, empty)
        samples = [
            Sample(t=t, run=run, step=None, metrics=rows[t], source=SOURCE) for t in sorted(rows) if rows[t]
        ]
        up_to = win.read_up_to
        new_cursor: dict[str, Any] = {"t": up_to if win.last is None else max(win.last, up_to)}
        if counters:
            new_cursor["counters"] = counters
        return samples, new_cursor

    def _note_empty(self, watch: str, run: str, empty: list[str]) -> None:
        now_empty = frozenset(empty)
        with self._lock:
            before = self._empty.get((watch, run))
            self._empty[(watch, run)] = now_empty
        if now_empty and now_empty != before:
            log.info(
                "prometheus watch %s, run %s: no series for %s", watch, run, ", ".join(sorted(now_empty))
            )
        elif now_empty:
            log.debug(
                "prometheus watch %s, run %s: no series for %s", watch, run, ", ".join(sorted(now_empty))
            )

    # ---- HTTP -----------------------------------------------------------------------------------
    def _limit(self, cfg: PrometheusTarget) -> threading.Semaphore:
        """One limit per server URL, shared by every watch reading it (the first watch's size wins)."""
        with self._lock:
            sem = self._limits.get(cfg.url)
            if sem is None:
                sem = self._limits[cfg.url] = threading.BoundedSemaphore(cfg.max_concurrency)
            return sem

    def _run_all(
        self, cfg: PrometheusTarget, requests: list[_Request], counter: _Counter
    ) -> dict[tuple[str, str], list[Series]] | str:
        """Every request answered, or the first failure as an error message."""
        if not requests:
            return {}
        sem = self._limit(cfg)
        abort = threading.Event()

        def one(req: _Request) -> list[Series]:
            try:
                return self._send(cfg, req, sem, abort, counter)
            except QueryFailed:
                abort.set()
                raise

        answers: dict[tuple[str, str], list[Series]] = {}
        failures: list[str] = []
        with ThreadPoolExecutor(max_workers=min(cfg.max_concurrency, len(requests))) as pool:
            futures = [(req, pool.submit(one, req)) for req in requests]
            for req, fut in futures:
                try:
                    answers[(req.run, req.alias)] = fut.result()
                except _Aborted:
                    pass
                except QueryFailed as exc:
                    failures.append(f"query {req.alias!r} for run {req.run!r}: {exc}")
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            return f"prometheus {cfg.url}: {failures[0]}{more}"
        return answers

    def _send(
        self,
        cfg: PrometheusTarget,
        req: _Request,
        sem: threading.Semaphore,
        abort: threading.Event,
        counter: _Counter,
    ) -> list[Series]:
        headers = {**cfg.headers, "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        attempts = cfg.retries + 1
        problem = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(_BACKOFF_CAP, cfg.backoff * 2 ** (attempt - 1))
                if abort.wait(delay * (0.5 + 0.5 * self._rng.random())):  # jitter: 50-100% of the delay
                    raise _Aborted
            if abort.is_set():
                raise _Aborted
            counter.add()
            try:
                with sem:
                    resp = self._client.post(
                        cfg.url + req.path, data=req.params, headers=headers, timeout=cfg.timeout
                    )
            except httpx.TimeoutException:
                problem = f"no answer within {cfg.timeout:g}s"
                continue
            except httpx.TransportError as exc:
                problem = f"cannot reach the server ({type(exc).__name__}: {exc})"
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                problem = f"HTTP {resp.status_code}{_api_error(resp)}"
                continue
            try:
                body = resp.json()
            except ValueError:
                raise QueryFailed(f"HTTP {resp.status_code}: the answer is not JSON") from None
            if resp.status_code != 200 or body.get("status") != "success":
                raise QueryFailed(f"HTTP {resp.status_code}{_api_error(resp)}")
            for warning in body.get("warnings") or []:
                log.warning("prometheus %s: query %r for run %r: %s", cfg.url, req.alias, req.run, warning)
            return _parse(body.get("data") or {})
        raise QueryFailed(f"{problem} (after {attempts} attempt{'s' if attempts > 1 else ''})")


def _api_error(resp: httpx.Response) -> str:
    """``: <errorType>: <error>`` from a Prometheus error answer, if it is one."""
    try:
        body = resp.json()
    except ValueError:
        return ""
    if not isinstance(body, dict) or "error" not in body:
        return ""
    kind = body.get("errorType")
    return f": {kind}: {body['error']}" if kind else f": {body['error']}"
