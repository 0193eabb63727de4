"""The MLflow tracking server's REST API, through the official client's HTTP layer
(``mlflow.utils.rest_utils``: its credentials, TLS settings and retry policy), with herowatch's bounded
timeout and retries instead of MLflow's defaults (two minutes, seven retries), and a request count.

Three calls: ``experiments/get-by-name``; ``runs/search`` (a page of up to 1000 runs, each with its
status and the latest value, step and time of every metric); and the history of one metric over a step
interval (``metrics/get-history-bulk-interval``, the call MLflow's own UI makes for its charts), so that
a run's new steps are read from its step cursor, never its whole history again. A server without that
call (404) gets ``metrics/get-history``, the whole history of the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mlflow.utils.credentials import get_default_host_creds
from mlflow.utils.rest_utils import http_request

from monitor.sources.bounded import AnswerTooLarge, read_requests

SEARCH_PAGE = 1000
MAX_VALUES = 2500  # MLflow's cap per run of one history request


class MlflowUnavailable(RuntimeError):
    pass


@dataclass
class MlflowApi:
    uri: str
    timeout: float
    retries: int
    requests: int = 0
    max_answer: int = 32 << 20  # bytes of one answer (max_answer_bytes); a larger one is an outage
    bulk_interval: bool = True  # the server answers get-history-bulk-interval
    _creds: Any = field(default=None, repr=False)

    def _call(self, method: str, endpoint: str, **kwargs: Any) -> dict[str, Any] | None:
        """The answer's JSON; None when the server says there is no such thing (MLflow's
        ``RESOURCE_DOES_NOT_EXIST``); LookupError for a 404 without it (no such endpoint)."""
        if self._creds is None:
            self._creds = get_default_host_creds(self.uri)
        self.requests += 1
        try:
            r = http_request(
                self._creds,
                endpoint,
                method,
                max_retries=self.retries,
                backoff_factor=1,
                timeout=self.timeout,
                raise_on_status=False,
                stream=True,
                **kwargs,
            )
            raw = read_requests(r, f"mlflow {endpoint}", self.max_answer)
        except AnswerTooLarge as exc:
            raise MlflowUnavailable(str(exc)) from None
        except Exception as exc:  # connection refused, timeouts, retries exhausted
            raise MlflowUnavailable(f"{type(exc).__name__}: {str(exc)[:300]}") from None
        text = raw[:4000].decode("utf-8", "replace")
        if r.status_code in (400, 404) and "RESOURCE_DOES_NOT_EXIST" in text:
            return None
        if r.status_code == 404:
            raise LookupError(endpoint)
        if r.status_code != 200:
            raise MlflowUnavailable(f"HTTP {r.status_code} from {endpoint}: {text[:300]}")
        try:
            return json.loads(raw)
        except ValueError:
            raise MlflowUnavailable(f"{endpoint} answered something that is not JSON") from None

    def experiment_id(self, name: str) -> str | None:
        got = self._call("GET", "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": name})
        return None if got is None else str(got["experiment"]["experiment_id"])

    def search(self, experiment_id: str, filter_string: str, limit: int) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = []
        token = None
        while len(runs) < limit:
            body: dict[str, Any] = {
                "experiment_ids": [experiment_id],
                "filter": filter_string,
                "run_view_type": "ACTIVE_ONLY",
                "max_results": min(SEARCH_PAGE, limit - len(runs)),
                "order_by": ["attributes.start_time DESC"],
            }
            if token:
                body["page_token"] = token
            page = self._call("POST", "/api/2.0/mlflow/runs/search", json=body) or {}
            runs.extend(page.get("runs") or [])
            token = page.get("next_page_token")
            if not token:
                break
        return runs

    def history(self, run_ids: tuple[str, ...], key: str, lo: int, hi: int) -> list[dict[str, Any]]:
        """Every value of ``key`` the runs logged at steps ``lo`` .. ``hi`` (inclusive), each with its
        ``run_id``."""
        if self.bulk_interval:
            params: Mapping[str, Any] = {
                "run_ids": list(run_ids),
                "metric_key": key,
                "start_step": lo,
                "end_step": hi,
                "max_results": MAX_VALUES,
            }
            try:
                got = self._call(
                    "GET", "/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval", params=params
                )
                return list((got or {}).get("metrics") or [])
            except LookupError:  # a server without it: each run's whole history of the key, then cut
                self.bulk_interval = False
        out = []
        for run_id in run_ids:
            got = self._call(
                "GET", "/api/2.0/mlflow/metrics/get-history", params={"run_id": run_id, "metric_key": key}
            )
            out += [
                {**m, "run_id": run_id}
                for m in (got or {}).get("metrics") or []
                if lo <= int(m.get("step", 0)) <= hi
            ]
        return out
