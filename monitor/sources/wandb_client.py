"""Requests to a W&B server through the official ``wandb`` client, with timeouts, retries and a limit.

Two GraphQL operations are all a poll needs, both sent through the client's own transport (the
``wandb-core`` sidecar: auth, proxies, its own 429/5xx retries within the timeout):

- ``Runs``: one page of a project's runs with state, heartbeat, history length and summary.
- ``HistoryPage``: the full-resolution rows of one run for a step range; the very query the client's
  ``Run.scan_history()`` pages with. ``scan_history`` itself first asks ``RunHistoryKeys`` and
  ``RunParquetHistory`` (three requests a run instead of one), so it is not used; ``Run.history()``
  samples (it can miss a one-step spike), so it is never used.

wandb 0.31 has no public raw-GraphQL call: ``execute_graphql`` of the Api's service handle is used, in
this module only.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from monitor.sources.quota import Quota
from monitor.sources.retry import retry_call

log = logging.getLogger(__name__)

RUNS_QUERY = """query Runs($project: String!, $entity: String!, $cursor: String, $perPage: Int = 50, \
$order: String, $filters: JSONString) {
  project(name: $project, entityName: $entity) {
    runs(filters: $filters, after: $cursor, first: $perPage, order: $order) {
      edges { node { name displayName state tags heartbeatAt historyLineCount summaryMetrics } cursor }
      pageInfo { endCursor hasNextPage }
    }
  }
}"""

HISTORY_PAGE_QUERY = """query HistoryPage ($entity: String!, $project: String!, $run: String!, \
$minStep: Int64!, $maxStep: Int64!, $pageSize: Int!) {
  project(name: $project, entityName: $entity) {
    run(name: $run) {
      history(minStep: $minStep, maxStep: $maxStep, samples: $pageSize)
    }
  }
}"""

_RETRY_STATUSES = {408, 429, 500, 502, 503, 504}
_env_lock = threading.Lock()
_env_ready = False


class WandbUnavailable(Exception):
    """The server could not be read. The message names what failed and never holds credentials."""


class OverQuota(Exception):
    """No place in the server's quota in time: the request was not sent."""


def prepare_environment() -> None:
    """Before the first ``wandb.Api``: the client's folders go to a private temporary folder (so it writes
    nothing under $HOME), error reporting off, console quiet. Values the operator already set win."""
    global _env_ready
    with _env_lock:
        if _env_ready:
            return
        base = tempfile.mkdtemp(prefix="herowatch-wandb-")
        for name in (
            "WANDB_DIR",
            "WANDB_CACHE_DIR",
            "WANDB_CONFIG_DIR",
            "WANDB_DATA_DIR",
            "WANDB_ARTIFACT_DIR",
        ):
            path = os.path.join(base, name.removeprefix("WANDB_").lower())
            os.makedirs(path, exist_ok=True)
            os.environ.setdefault(name, path)
        os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
        os.environ.setdefault("WANDB_SILENT", "true")
        _env_ready = True


def classify(exc: BaseException) -> tuple[bool, str]:
    """(worth retrying, what happened) for an exception of a client call."""
    response = getattr(exc, "response", None)
    if type(exc).__name__ == "WandbApiFailedError":
        status = getattr(response, "http_status", 0) if response is not None else None
        if status is None:
            return True, f"no answer in time ({exc})"
        if status in (401, 403):
            return False, f"HTTP {status}: the API key was refused"
        if status in _RETRY_STATUSES:
            return True, f"HTTP {status}"
        if status:
            return False, f"HTTP {status}: {exc}"
        return False, f"GraphQL error: {exc}"
    if isinstance(exc, TimeoutError | ConnectionError):
        return True, f"{type(exc).__name__}: {exc}"
    return False, f"{type(exc).__name__}: {exc}"


class RequestCount:
    """GraphQL calls made, by operation (each attempt counts; the client's own internal retries are not
    seen here). Shared by the threads of one poll."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_operation: Counter[str] = Counter()

    def add(self, operation: str) -> None:
        with self._lock:
            self.by_operation[operation] += 1

    @property
    def total(self) -> int:
        return sum(self.by_operation.values())


class WandbClient:
    """One signed-in ``wandb.Api`` for one server, the limit on requests in flight to it and its quota
    (``quota``: every request sent takes a place in it first, the sign-in's ``Viewer`` included)."""

    def __init__(
        self, base_url: str, api_key: str, timeout: float, max_concurrency: int, quota: Quota
    ) -> None:
        self.base_url = base_url
        self._secret = api_key
        self.limit = threading.BoundedSemaphore(max_concurrency)
        self.quota = quota
        if not quota.take(1, wait=timeout):
            raise WandbUnavailable(f"no place in the W&B quota to sign in to {base_url} within {timeout:g}s")
        prepare_environment()
        import wandb  # here: after the environment is set, and only when W&B is watched

        try:
            self.api = wandb.Api(overrides={"base_url": base_url}, api_key=api_key, timeout=timeout)
        except Exception as exc:  # AuthenticationError for a refused key and for an unreachable server
            raise WandbUnavailable(self.redact(f"cannot sign in to W&B at {base_url}: {exc}")) from None

    def redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def execute(
        self,
        operation: str,
        query: str,
        variables: Mapping[str, Any],
        *,
        timeout: float,
        attempts: int,
        backoff: float,
        count: RequestCount,
        sleep: Callable[[float], None],
        admit: Callable[[], None],
    ) -> dict[str, Any]:
        """One operation, retried; ``admit()`` before each attempt takes its place in the quota (or raises
        ``OverQuota``). A 429 the client gave up on pauses the quota (no request leaves for a window) and is
        not retried. The client waits out a ``Retry-After`` inside the call, so one longer than the
        time-out comes back as no answer in time: that pauses the quota for the time-out before any retry.
        """

        def once() -> dict[str, Any]:
            admit()
            with self.limit:
                count.add(operation)
                try:
                    return self.api._service_api.execute_graphql(query, dict(variables), timeout=timeout)
                except Exception as exc:
                    self._slow_down(exc, timeout)
                    raise

        def on_retry(attempt: int, exc: BaseException, delay: float) -> None:
            log.info(
                "W&B %s at %s: %s; retry %d in %.1fs",
                operation,
                self.base_url,
                self.redact(classify(exc)[1]),
                attempt + 1,
                delay,
            )

        try:
            return retry_call(
                once,
                attempts,
                backoff,
                max_delay=max(backoff, 30.0),
                jitter=0.5,
                is_retryable=lambda e: classify(e)[0] and not _rate_limited(e),
                sleep=sleep,
                on_retry=on_retry,
            )
        except OverQuota:
            raise
        except Exception as exc:
            what = self.redact(classify(exc)[1])
            raise WandbUnavailable(f"W&B {operation} at {self.base_url} failed: {what}") from None

    def _slow_down(self, exc: BaseException, timeout: float) -> None:
        if _rate_limited(exc):
            log.warning("W&B at %s answered 429: no request for %gs", self.base_url, self.quota.window)
            self.quota.pause(self.quota.window)
        elif type(exc).__name__ == "WandbApiFailedError" and getattr(exc, "response", None) is None:
            self.quota.pause(timeout)  # no answer in time: perhaps a Retry-After the client is waiting out


def _rate_limited(exc: BaseException) -> bool:
    """A 429 the client gave up on (its status, or its words when it gave up retrying): sending again
    now is what the server asked not to."""
    if type(exc).__name__ != "WandbApiFailedError":
        return False
    response = getattr(exc, "response", None)
    return getattr(response, "http_status", 0) == 429 or "HTTP 429" in str(exc)
