"""The importable push client: a job reports what only it knows to herowatch's ``POST /api/ingest``.

    from monitor.cli.push_client import Pusher

    hw = Pusher(run="pretrain-70b-r3")        # HEROWATCH_URL, HEROWATCH_INGEST_TOKEN from the environment
    hw.started()
    hw.log(step, {"train/loss": loss})        # batched: sent every ``batch`` samples or on flush()
    hw.alert("Data shard corrupt", "shard 17 failed its checksum", level="ERROR", wait_duration=300)
    hw.resolve("Data shard corrupt")          # or let it resolve on its own (1h after the last send)
    hw.exit(code)                             # or hw.exit(137, cause="oom-killed"); flushes first

Sending retries what can pass later (a refused connection, a timeout, 5xx, 429 after its Retry-After)
until ``deadline`` seconds have gone, and raises :class:`PushFailed` with the reason after that: a
job decides itself whether its training goes on without herowatch (``herowatch emit`` warns and goes
on). A refusal (401, 403, 404, 422) is raised at once: retrying cannot help. A batch larger than the
watch takes at once (413, with what it takes: samples per request, metric names per sample, bytes per
request) is split to fit and sent again: a sample with too many metrics becomes several samples of the
same time and step.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

URL_ENV = "HEROWATCH_URL"
TOKEN_ENV = "HEROWATCH_INGEST_TOKEN"
RUN_ENV = "HEROWATCH_RUN"
DEFAULT_URL = "http://127.0.0.1:8080"
BATCH = 1000  # samples per request: well under the server's 1 MiB body limit for ordinary rows


MAX_SAMPLES_HEADER = "X-Herowatch-Max-Samples"  # on a 413: how many samples the watch takes at once
MAX_METRICS_HEADER = "X-Herowatch-Max-Metrics"  # on a 413: how many metric names one sample may hold


class PushFailed(RuntimeError):
    pass


class TooLarge(PushFailed):
    """A 413: the request held more than the server takes at once (``fits``: how many samples it takes,
    ``metrics``: how many metric names per sample, when it said so; neither: too many bytes)."""

    def __init__(self, message: str, fits: int | None, metrics: int | None = None) -> None:
        super().__init__(message)
        self.fits, self.metrics = fits, metrics


@dataclass(frozen=True)
class Reply:
    """What the server answered: the status, the headers (names in lower case), the body's text."""

    status: int
    headers: Mapping[str, str]
    text: str


Post = Callable[[str, bytes, Mapping[str, str]], Reply]  # url, JSON body, headers; raises OSError


def http_post(timeout: float) -> Post:
    """POST with the standard library only: `herowatch emit` runs once a step in some jobs, and an
    HTTP client library would cost more to import than the request takes (docs/deploy.md)."""

    def post(url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        request = urllib.request.Request(url, data=body, method="POST")
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:  # noqa: S310 - herowatch's own URL
                return Reply(r.status, {k.lower(): v for k, v in r.headers.items()}, _text(r.read()))
        except urllib.error.HTTPError as exc:  # an answer, not a failure to reach the server
            with exc:
                return Reply(exc.code, {k.lower(): v for k, v in exc.headers.items()}, _text(exc.read()))

    return post


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def _json_number(v: float) -> float | str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


class Pusher:
    def __init__(
        self,
        run: str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        batch: int = BATCH,
        timeout: float = 10.0,
        deadline: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        post: Post | None = None,
    ) -> None:
        self.run = run or os.environ.get(RUN_ENV) or ""
        if not self.run:
            raise ValueError(f"say which run this is (run=..., or {RUN_ENV} in the environment)")
        self.url = (url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        self.token = token or os.environ.get(TOKEN_ENV) or ""
        if not self.token:
            raise ValueError(f"no ingest token: set {TOKEN_ENV} (the watch's push.token_env variable)")
        self.batch, self.deadline, self.sleep = batch, deadline, sleep
        self.buffer: list[dict[str, Any]] = []
        self.post = post or http_post(timeout)
        self.requests = 0

    def log(self, step: int | None, metrics: Mapping[str, float], t: float | None = None) -> None:
        row: dict[str, Any] = {"t": time.time() if t is None else t, "metrics": {}}
        if step is not None:
            row["step"] = step
        row["metrics"] = {k: _json_number(float(v)) for k, v in metrics.items()}
        self.buffer.append(row)
        if len(self.buffer) >= self.batch:
            self.flush()

    def flush(self) -> None:
        while self.buffer:
            chunk, self.buffer = self.buffer[: self.batch], self.buffer[self.batch :]
            try:
                self._post({"run": self.run, "samples": chunk})
            except TooLarge as exc:
                if exc.metrics is not None and exc.metrics > 0:
                    split = _split_metrics(chunk, exc.metrics)
                    if len(split) > len(chunk):
                        self.buffer = split + self.buffer
                        continue
                self.buffer = chunk + self.buffer
                smaller = exc.fits if exc.fits is not None else len(chunk) // 2
                if not 0 < smaller < len(chunk):
                    raise
                self.batch = smaller  # the server's limit (push.burst): send that many at a time from now
            except PushFailed:
                self.buffer = chunk + self.buffer  # kept: a later flush tries again
                raise

    def started(self) -> None:
        self._post({"run": self.run, "events": [{"kind": "started", "t": time.time()}]})

    def alert(
        self,
        title: str,
        text: str = "",
        level: str = "INFO",
        wait_duration: float | timedelta | None = None,
    ) -> None:
        """A custom alert, as W&B's ``run.alert``: ``title`` (at most 64 characters) names it, ``level``
        INFO (recorded, never notifies), WARN or ERROR (pages); a repeat of the title within
        ``wait_duration`` seconds (default 60) of the last one herowatch took is dropped."""
        event: dict[str, Any] = {"kind": "alert", "t": time.time(), "title": title, "text": text}
        event["level"] = str(getattr(level, "value", level)).lower()  # a W&B AlertLevel works too
        if wait_duration is not None:
            wait = wait_duration.total_seconds() if isinstance(wait_duration, timedelta) else wait_duration
            event["wait"] = float(wait)
        self._post({"run": self.run, "events": [event]})

    def resolve(self, title: str) -> None:
        """The alert of this title is over: it resolves now rather than an hour after its last send."""
        self._post({"run": self.run, "events": [{"kind": "resolve", "t": time.time(), "title": title}]})

    def exit(self, code: int | None, cause: str = "exit") -> None:
        """The job ended: ``code`` as the process returned it, ``cause`` ``exit``, ``oom-killed`` or
        ``signal N``. Samples still buffered go first."""
        self.flush()
        event = {"kind": "exit", "t": time.time(), "exit_code": code, "cause": cause}
        self._post({"run": self.run, "events": [event]})

    def _post(self, body: dict[str, Any]) -> None:
        end = time.monotonic() + self.deadline
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = json.dumps(body).encode()
        wait, reason = 0.5, ""
        while True:
            self.requests += 1
            try:
                r = self.post(f"{self.url}/api/ingest", data, headers)
            except (OSError, http.client.HTTPException, ValueError) as exc:  # refused, reset, timed out
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if r.status < 300:
                    return
                reason = f"HTTP {r.status}: {_error(r)}"
                if r.status == 429:
                    wait = _retry_after(r, wait)
                elif r.status == 413:
                    raise TooLarge(
                        f"herowatch at {self.url} refused the push: {reason}",
                        _header_int(r, MAX_SAMPLES_HEADER),
                        _header_int(r, MAX_METRICS_HEADER),
                    )
                elif r.status < 500:
                    raise PushFailed(f"herowatch at {self.url} refused the push: {reason}")
            if time.monotonic() + wait > end:
                raise PushFailed(
                    f"could not push to herowatch at {self.url} for {self.deadline:.0f}s: {reason}"
                )
            self.sleep(wait)
            wait = min(wait * 2, 10.0)

    def close(self) -> None:
        """Nothing held between requests (each is its own connection); kept for callers that close."""


def _header_int(r: Reply, name: str) -> int | None:
    value = r.headers.get(name.lower(), "")  # a Reply's header names are in lower case
    return int(value) if value.isdigit() else None


def _split_metrics(rows: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """Each row with more than ``most`` metrics as several rows of the same time and step."""
    out = []
    for row in rows:
        items = list(row.get("metrics", {}).items())
        if len(items) <= most:
            out.append(row)
            continue
        for i in range(0, len(items), most):
            out.append({**row, "metrics": dict(items[i : i + most])})
    return out


def _error(r: Reply) -> str:
    try:
        answer = json.loads(r.text)
    except ValueError:
        return r.text[:200]
    return str((answer.get("error") if isinstance(answer, dict) else None) or r.text[:200])


def _retry_after(r: Reply, default: float) -> float:
    try:
        return max(0.1, float(r.headers.get("retry-after", default)))
    except ValueError:
        return default
