"""The Prometheus HTTP API as the ``prometheus`` source uses it: POSTed queries, answers parsed into
series, retries with backoff and jitter, one concurrency limit per server URL.

Failures: a refused connection, a timeout, HTTP 429/5xx are retried ``retries`` times; a PromQL error
(HTTP 400/422) is not. The first failure of a query aborts the others of the same poll (their answers
could not be used), except for ``soft`` requests (fleet queries): their failure is reported on its own
and leaves the rest of the poll alone.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from alerts.text import one_line
from monitor.sources.bounded import AnswerTooLarge, read_httpx
from monitor.sources.prometheus_config import PrometheusTarget
from monitor.sources.prometheus_series import Get, http_get

log = logging.getLogger("monitor.sources.prometheus_source")

BACKOFF_CAP = 30.0

Series = tuple[dict[str, str], list[tuple[float, float]]]  # labels, (t, value) in time order


class QueryFailed(Exception):
    """A query could not be answered: the message says why (never holds credentials). ``run_only``: the
    answer itself was the problem (over ``max_answer_bytes``, numbers herowatch cannot read): it makes
    its run unreadable, not the server."""

    def __init__(self, message: str, run_only: bool = False) -> None:
        super().__init__(message)
        self.run_only = run_only


class _Aborted(Exception):
    """Another query of the same poll failed: this one is not sent."""


@dataclass(frozen=True)
class Request:
    run: str
    alias: str
    path: str  # /api/v1/query or /api/v1/query_range
    params: dict[str, str]
    soft: bool = False  # its failure does not fail the poll (fleet queries)


@dataclass
class Answers:
    series: dict[tuple[str, str], list[Series]] = field(default_factory=dict)
    error: str | None = None  # a hard request failed: the poll fails
    soft_errors: dict[tuple[str, str], str] = field(default_factory=dict)
    run_errors: dict[str, str] = field(default_factory=dict)  # run -> why its answers could not be used


class Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def parse(data: Any) -> list[Series]:
    kind, result = data.get("resultType"), data.get("result")
    if kind == "matrix":
        return [(s.get("metric", {}), [(float(t), float(v)) for t, v in s.get("values", [])]) for s in result]
    if kind == "vector":
        return [(s.get("metric", {}), [(float(s["value"][0]), float(s["value"][1]))]) for s in result]
    if kind == "scalar":
        return [({}, [(float(result[0]), float(result[1]))])]
    raise QueryFailed(f"the query returns a {kind}, not numbers")


class PrometheusHttp:
    """One HTTP client for every watch; a concurrency limit per server URL."""

    def __init__(self, token: str | None) -> None:
        self._token = token
        self._client = httpx.Client(follow_redirects=False)
        self._lock = threading.Lock()
        self._limits: dict[str, threading.Semaphore] = {}
        self._rng = random.Random()

    def close(self) -> None:
        self._client.close()

    def plain_get(self, cfg: PrometheusTarget) -> Get:
        """The server's HTTP API with this client's token, without retries or the concurrency limit
        (for the no-series hints: a hint, not a poll)."""
        headers = {**cfg.headers, "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return http_get(self._client, cfg.url, headers, cfg.timeout)

    def _limit(self, cfg: PrometheusTarget) -> threading.Semaphore:
        """One limit per server URL, shared by every watch reading it (the first watch's size wins)."""
        with self._lock:
            sem = self._limits.get(cfg.url)
            if sem is None:
                sem = self._limits[cfg.url] = threading.BoundedSemaphore(cfg.max_concurrency)
            return sem

    def run_all(self, cfg: PrometheusTarget, requests: list[Request], counter: Counter) -> Answers:
        """Every request answered, or the first hard failure as an error message."""
        out = Answers()
        if not requests:
            return out
        sem = self._limit(cfg)
        abort = threading.Event()

        def one(req: Request) -> list[Series]:
            try:
                return self._send(cfg, req, sem, abort, counter)
            except QueryFailed as exc:
                if not req.soft and not exc.run_only:
                    abort.set()
                raise

        failures: list[str] = []
        with ThreadPoolExecutor(max_workers=min(cfg.max_concurrency, len(requests))) as pool:
            futures = [(req, pool.submit(one, req)) for req in requests]
            for req, fut in futures:
                try:
                    out.series[(req.run, req.alias)] = fut.result()
                except _Aborted:
                    pass
                except QueryFailed as exc:
                    if req.soft:
                        out.soft_errors[(req.run, req.alias)] = str(exc)
                    elif exc.run_only:
                        out.run_errors.setdefault(req.run, f"query {req.alias!r}: {exc}")
                    else:
                        failures.append(f"query {req.alias!r} for run {req.run!r}: {exc}")
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            out.error = f"prometheus {cfg.url}: {failures[0]}{more}"
        return out

    def _send(
        self,
        cfg: PrometheusTarget,
        req: Request,
        sem: threading.Semaphore,
        abort: threading.Event,
        counter: Counter,
    ) -> list[Series]:
        headers = {**cfg.headers, "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        attempts = cfg.retries + 1
        problem = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(BACKOFF_CAP, cfg.backoff * 2 ** (attempt - 1))
                if abort.wait(delay * (0.5 + 0.5 * self._rng.random())):  # jitter: 50-100% of the delay
                    raise _Aborted
            if abort.is_set():
                raise _Aborted
            counter.add()
            try:
                with sem:
                    resp, failed, raw = self._post(
                        cfg.url + req.path, req.params, headers, cfg.timeout, cfg.max_answer_bytes
                    )
            except AnswerTooLarge as exc:
                raise QueryFailed(str(exc), run_only=True) from None
            except httpx.TimeoutException:
                problem = f"no answer within {cfg.timeout:g}s"
                continue
            except httpx.TransportError as exc:
                problem = f"cannot reach the server ({type(exc).__name__}: {exc})"
                continue
            if failed is not None:
                problem = f"HTTP {resp.status_code}{failed}"
                continue
            try:
                body = json.loads(raw)
            except ValueError:
                raise QueryFailed(f"HTTP {resp.status_code}: the answer is not JSON") from None
            if not isinstance(body, dict):
                raise QueryFailed(f"HTTP {resp.status_code}: the answer is not a JSON object")
            if resp.status_code != 200 or body.get("status") != "success":
                raise QueryFailed(f"HTTP {resp.status_code}{error_text(raw, None)}")
            for warning in body.get("warnings") or []:
                log.warning("prometheus %s: query %r for run %r: %s", cfg.url, req.alias, req.run, warning)
            try:
                return parse(body.get("data") or {})
            except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
                raise QueryFailed(
                    f"an answer herowatch cannot read: {type(exc).__name__}", run_only=True
                ) from None
        raise QueryFailed(f"{problem} (after {attempts} attempt{'s' if attempts > 1 else ''})")

    def _post(
        self, url: str, params: dict, headers: dict[str, str], timeout: float, limit: int
    ) -> tuple[httpx.Response, str | None, bytes]:
        """The answer, read as a stream up to ``limit`` bytes (``AnswerTooLarge`` beyond:
        ``max_answer_bytes``); an answer to retry (429, 5xx) read only up to ``MAX_ERROR_ANSWER`` bytes
        and returned with what it says (``: <errorType>: <error>``, bounded)."""
        request = self._client.build_request("POST", url, data=params, headers=headers, timeout=timeout)
        resp = self._client.send(request, stream=True)
        try:
            if resp.status_code == 429 or resp.status_code >= 500:
                data = bytearray()
                for chunk in resp.iter_bytes():
                    data += chunk
                    if len(data) > MAX_ERROR_ANSWER:
                        break
                return resp, error_text(bytes(data), resp.headers.get("content-length")), b""
            return resp, None, read_httpx(resp, f"prometheus {url}", limit)
        finally:
            resp.close()


MAX_ERROR_ANSWER = 64 * 1024  # an error answer larger than this is not read on: its size and start are told


def api_error(resp: httpx.Response) -> str:
    """``: <errorType>: <error>`` from a Prometheus error answer read whole, if it is one."""
    return error_text(resp.content, None)


def error_text(data: bytes, length: str | None) -> str:
    """``: <errorType>: <error>`` from (the start of) an error answer, bounded (``alerts.text``): a
    50 MB error string is neither read whole nor stored nor logged."""
    if len(data) > MAX_ERROR_ANSWER:
        size = f"{int(length):,} bytes" if length and length.isdigit() else f"over {MAX_ERROR_ANSWER:,} bytes"
        start = data[:300].decode("utf-8", "replace")
        return f": an error answer of {size}, starting {one_line(start, 300)!r}"
    try:
        body = json.loads(data)
    except ValueError:
        return ""
    if not isinstance(body, dict) or "error" not in body:
        return ""
    kind = body.get("errorType")
    return one_line(f": {kind}: {body['error']}" if kind else f": {body['error']}", 1000)
