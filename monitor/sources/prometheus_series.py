"""Why a Prometheus query matches no series: what the metric has instead, found at the boundary.

A query with no series leaves its rules blind. The usual causes are a metric renamed by an exporter
upgrade, a recording rule not deployed, or a selector whose labels differ from what the exporter
attaches (``pod=~"hero-7b-.*"`` while the pods are ``trainer-hero-7b-0``). For each selector of the
query (``metric{matchers}``) ``explain`` asks the server how many series the metric has at all, and,
when some exist, which values the selector's labels take (``/api/v1/label/<name>/values``), so that
the warning can say "container_oom_events_total exists for 312 pods (e.g. ...); your selector
pod=~"hero-7b-.*" matched none". ``EmptyQueries`` remembers the answer per run and alias and asks
again at most every ``RECHECK`` seconds (or when the set of empty aliases changes). Used by the
Prometheus source (a gap per run and alias in its poll result) and by ``herowatch doctor``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from monitor.sources.bounded import DEFAULT_ANSWER_BYTES, AnswerTooLarge, read_httpx

log = logging.getLogger(__name__)

RECHECK = 300.0  # at most this long between two lookups for the same empty query
FIRST_RECHECK = 5.0  # the first lookups come sooner (doubling): a new target may not be scraped yet
EXAMPLES = 3
RECENT = 3600.0  # label values of the series seen in the last hour
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')

Get = Callable[[str, Mapping[str, str]], Any]  # (API path, params) -> the answer's "data"


class LookupFailed(Exception):
    pass


def selectors(query: str) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """``(metric, matcher text, [(label, op, value)])`` for each ``metric{...}`` in a PromQL query."""
    out = []
    for m in _SELECTOR.finditer(query):
        name, text = m.group(1), m.group(2)
        if name in ("by", "without", "on", "ignoring", "group_left", "group_right"):
            continue
        out.append((name, text.strip(), [g.groups() for g in _MATCHER.finditer(text)]))
    return out


def count(get: Get, expr: str, at: float) -> int:
    """How many series ``expr`` has now (an instant ``count(...)``)."""
    data = get("/api/v1/query", {"query": f"count({expr})", "time": f"{at:.3f}"})
    result = (data or {}).get("result") or []
    return int(float(result[0]["value"][1])) if result else 0


def series_count(get: Get, query: str, at: float) -> int:
    """How many series the query itself returns now."""
    data = get("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
    result = (data or {}).get("result") or []
    return len(result) if isinstance(result, list) else 1


def explain(get: Get, query: str, at: float) -> str:
    """Why ``query`` matches no series, in words (what each of its selectors finds instead)."""
    head = f"the query {query} matches no series"
    parts = []
    for metric, text, matchers in selectors(query):
        total = count(get, metric, at)
        if total == 0:
            parts.append(f"{metric} has no series at all (not scraped, or renamed by an exporter upgrade?)")
            continue
        if not matchers or count(get, f"{metric}{{{text}}}", at):
            continue  # this selector matches: the rest of the query filters everything out
        for label, op, value in matchers:
            if count(get, f'{metric}{{{label}{op}"{value}"}}', at):
                continue
            recent = {"match[]": metric, "start": f"{at - RECENT:.3f}", "end": f"{at:.3f}"}
            values = get(f"/api/v1/label/{label}/values", recent) or []
            if not values:
                parts.append(f"{metric} exists ({total} series) but none has a {label} label")
            else:
                eg = ", ".join(str(v) for v in values[:EXAMPLES])
                mine = f'{label}{op}"{value}"'
                found = f"{metric} exists for {len(values)} {label}s (e.g. {eg})"
                parts.append(f"{found}; your selector {mine} matches none")
            break
        else:
            parts.append(f"{metric} exists ({total} series) but none matches all of {{{text}}}")
    return "; ".join([head, *parts])


def http_get(
    client: httpx.Client,
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    limit: int = DEFAULT_ANSWER_BYTES,
) -> Get:
    """A ``Get`` over the server's HTTP API (no retries: a hint, not a poll), each answer read against
    ``limit`` bytes."""

    def get(path: str, params: Mapping[str, str]) -> Any:
        try:
            with client.stream(
                "GET", url + path, params=dict(params), headers=dict(headers), timeout=timeout
            ) as resp:
                body = json.loads(read_httpx(resp, f"prometheus {url}{path}", limit))
        except (httpx.HTTPError, ValueError, AnswerTooLarge) as exc:
            raise LookupFailed(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(body, dict):
            raise LookupFailed(f"HTTP {resp.status_code}: not a JSON object")
        if resp.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
            raise LookupFailed(f"HTTP {resp.status_code}: {str(body.get('error', ''))[:200]}")
        return body.get("data")

    return get


class EmptyQueries:
    """Per watch, run and alias: the explanation of a query that matches nothing, looked up rarely."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (watch, run) -> alias -> (first noted, looked up at, why)
        self._known: dict[tuple[str, str], dict[str, tuple[float, float, str]]] = {}

    def note(self, get: Get, watch: str, run: str, empty: Mapping[str, str], now: float) -> dict[str, str]:
        """``empty``: alias -> the query text that matched nothing this poll. Returns alias -> why."""
        with self._lock:
            before = self._known.get((watch, run), {})
        out: dict[str, tuple[float, float, str]] = {}
        for alias, query in empty.items():
            old = before.get(alias)
            first = old[0] if old is not None else now
            if old is not None and now - old[1] < min(RECHECK, max(FIRST_RECHECK, old[1] - first)):
                out[alias] = old
                continue
            try:
                why = explain(get, query, now)
            except LookupFailed as exc:
                why = f"the query {query} matches no series (the series lookup failed: {exc})"
            if old is None:
                log.info("prometheus watch %s, run %s: no series for %s: %s", watch, run, alias, why)
            out[alias] = (first, now, why)
        with self._lock:
            self._known[(watch, run)] = out
        return {alias: why for alias, (*_, why) in out.items()}
