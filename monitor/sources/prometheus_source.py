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

Failures (``prometheus_http``): a refused connection, a timeout, HTTP 429/5xx are retried ``retries``
times with exponential backoff and jitter; a PromQL error (HTTP 400/422) is not. If any query of a
poll fails, the poll returns ``PollResult(error=...)`` with no samples and no cursor moved: the next
poll reads the same span again. A query that returns no series is not a failure: that alias has no
value; the poll result says why (``gaps``, from ``prometheus_series``) and coverage warns that its
rules are blind. When no run has anything new to read (polled faster than ``step``), one ``vector(1)``
query is sent anyway, so that an unreachable server is always reported.

With ``fleet`` set, every poll also reads one series per GPU or host for each fleet metric, over the
same window (``prometheus_fleet``): ``PollResult.fleet``. Those queries are soft: their failure
leaves a gap in the raster, not a failed poll.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

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
from monitor.sources.prometheus_fleet import PREFIX as FLEET_PREFIX
from monitor.sources.prometheus_fleet import FleetNotes, assemble, fleet_texts
from monitor.sources.prometheus_http import Answers, Counter, PrometheusHttp, QueryFailed, Request, Series
from monitor.sources.prometheus_series import EmptyQueries, Get

log = logging.getLogger(__name__)

SOURCE = "prometheus"
_PROBE = "(probe)"  # run and alias of the request sent when nothing is due


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
        self._http = PrometheusHttp(token or os.environ.get(TOKEN_ENV) or None)
        self._lock = threading.Lock()
        self._empty = EmptyQueries()  # why a query matches no series (prometheus_series)
        self._fleet_notes = FleetNotes()

    # ---- the Source interface -------------------------------------------------------------------
    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        counter = Counter()
        try:
            return self._poll(target, cursors, now, counter)
        except Exception as exc:  # noqa: BLE001 - a source never raises for an outage
            log.warning("prometheus watch %s: %s: %s", target.watch, type(exc).__name__, exc)
            return PollResult(error=f"prometheus: {type(exc).__name__}: {exc}", requests=counter.value)

    def close(self) -> None:
        self._http.close()

    # ---- one poll -------------------------------------------------------------------------------
    def _poll(
        self, target: Target, cursors: Mapping[str, Cursor], now: float, counter: Counter
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
        requests: list[Request] = []
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
            requests.append(Request(_PROBE, _PROBE, "/api/v1/query", probe))
        texts = {
            (r.run, r.alias): r.params["query"]
            for r in requests
            if r.run != _PROBE and not r.alias.startswith(FLEET_PREFIX)
        }
        got = self._http.run_all(cfg, requests, counter)
        if got.error is not None:
            return PollResult(error=got.error, requests=counter.value)
        if _PROBE in got.run_errors:
            return PollResult(error=f"prometheus {cfg.url}: {got.run_errors[_PROBE]}", requests=counter.value)
        result = PollResult(requests=counter.value)
        for run in runs:
            cursor = dict(cursors.get(run) or {})
            win = windows[run]
            if run in got.run_errors:  # its own answers were the problem: this run alone is unreadable
                result.unreadable[run] = f"prometheus {cfg.url}: {got.run_errors[run]}"
            elif not win.empty:
                try:
                    cursor = self._read_run(cfg, target, run, queries, win, cursor, got, texts, now, result)
                except QueryFailed as exc:  # a query that must aggregate: the config's, not the run's
                    error = f"prometheus watch {target.watch}, run {run!r}: {exc}"
                    return PollResult(error=error, requests=counter.value)
            result.cursors[run] = cursor
            name = runs[run]
            if run == qualify(SOURCE, target.watch, name):  # a run of the config's own
                labels = {"source": SOURCE, **dict(target.labels), **cfg.run_labels.get(name, {})}
                info = RunInfo(run, SOURCE, name, labels=labels, name=name, project=target.watch)
                result.runs.append(info)
        return result

    def _read_run(
        self,
        cfg: PrometheusTarget,
        target: Target,
        run: str,
        queries: Mapping[str, QuerySpec],
        win: _Window,
        cursor: Cursor,
        got: Answers,
        texts: Mapping[tuple[str, str], str],
        now: float,
        result: PollResult,
    ) -> Cursor:
        """One run's samples, gaps and fleet frames from the poll's answers; its new cursor."""
        answers = got.series
        samples, cursor = self._assemble(target, run, queries, win, cursor, answers, now)
        result.samples.extend(samples)
        empty = {a: q for (r, a), q in texts.items() if r == run and not any(v for _, v in answers[(r, a)])}
        result.gaps[run] = self._empty.note(self._lookup(cfg), target.watch, run, empty, now)
        result.fleet.extend(
            assemble(cfg, target.watch, run, answers, got.soft_errors, win.last, self._fleet_notes)
        )
        return cursor

    def _texts(
        self, cfg: PrometheusTarget, target: Target, run: str, name: str, queries: Mapping[str, QuerySpec]
    ) -> dict[str, str]:
        values = template_values(target, run, name)
        fragments = {name: render(text, values) for name, text in cfg.all_selectors().items()}
        texts = {alias: render(q.expr, values, fragments) for alias, q in queries.items()}
        return {**texts, **fleet_texts(cfg, values, fragments)}

    @staticmethod
    def _request(cfg: PrometheusTarget, run: str, alias: str, text: str, win: _Window) -> Request:
        timeout = f"{cfg.timeout:g}"
        soft = alias.startswith(FLEET_PREFIX)
        if win.instant is not None:
            params = {"query": text, "time": f"{win.instant:.3f}", "timeout": timeout}
            return Request(run, alias, "/api/v1/query", params, soft)
        params = {
            "query": text,
            "start": f"{win.start:.3f}",
            "end": f"{win.end:.3f}",
            "step": f"{cfg.step:g}",
            "timeout": timeout,
        }
        return Request(run, alias, "/api/v1/query_range", params, soft)

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
        for alias, spec in queries.items():
            series = answers[(run, alias)]
            if not any(values for _, values in series):
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
        samples = [
            Sample(t=t, run=run, step=None, metrics=rows[t], source=SOURCE) for t in sorted(rows) if rows[t]
        ]
        up_to = win.read_up_to
        new_cursor: dict[str, Any] = {"t": up_to if win.last is None else max(win.last, up_to)}
        if counters:
            new_cursor["counters"] = counters
        return samples, new_cursor

    def _lookup(self, cfg: PrometheusTarget) -> Get:
        """The server's HTTP API for the no-series hints (no retries: a hint, not a poll)."""
        return self._http.plain_get(cfg)
