"""What the Prometheus source tests share: the runs, the backfilled history (and what run A must read
at each of its points), and helpers to build a target and read a poll's result.

The runs ``llama-70b`` and ``llama.70b`` are chosen so that an unescaped regex (``pod=~"llama.70b-.*"``)
would also match the other run's pods.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from monitor.sources.base import PollResult, Target
from monitor.sources.prometheus_config import DEFAULT_QUERIES, PrometheusTarget
from tests.prometheus_server import openmetrics

A, B, ODD, LIVE = "llama-70b", "llama.70b", "odd-run", "live-run"
ODD_JOB = 'odd "q" \\ x'
STEP = 30.0
T0 = (int(time.time()) // 3600 - 4) * 3600  # history: 120 points, 30 s apart, starting 4 h ago
N = 120


def at(i: int) -> float:
    return T0 + STEP * i


def pts(fn: Callable[[int], float | None]) -> list[tuple[float, float]]:
    return [(at(i), v) for i in range(N) if (v := fn(i)) is not None]


def history() -> str:
    w0, w1, w1x, b0 = f"{A}-worker-0", f"{A}-worker-1", f"{A}-worker-1x", f"{B}-worker-0"
    weird = [math.nan, math.inf, -math.inf]
    return openmetrics(
        [
            (
                "container_oom_events",
                "counter",
                [
                    # 0, 1, 3 kills, then at i=80 the counter resets to 0 (same labels), then 1 at i=90.
                    (
                        {"pod": w0, "container": "trainer"},
                        pts(lambda i: 0 if i < 20 else 1 if i < 40 else 3 if i < 80 else 0 if i < 90 else 1),
                    ),
                    ({"pod": w1, "container": "trainer"}, pts(lambda i: 0 if i < 95 else 1)),
                    ({"pod": b0, "container": "trainer"}, pts(lambda i: 2)),
                ],
            ),
            (
                "kube_pod_container_status_restarts",
                "counter",
                [
                    ({"pod": w0, "container": "trainer"}, pts(lambda i: 5 if i < 60 else 6)),
                    # worker-1 is replaced at i=40 by worker-1x: the old series ends, a new one starts at 0.
                    ({"pod": w1, "container": "trainer"}, pts(lambda i: 2 if i < 40 else None)),
                    ({"pod": w1x, "container": "trainer"}, pts(lambda i: 0 if i >= 40 else None)),
                    ({"pod": b0, "container": "trainer"}, pts(lambda i: 0)),
                ],
            ),
            (
                "DCGM_FI_PROF_SM_ACTIVE",
                "gauge",
                [
                    ({"pod": w0, "gpu": "0"}, pts(lambda i: 0.8)),
                    ({"pod": w0, "gpu": "1"}, pts(lambda i: 0.6)),
                    ({"pod": b0, "gpu": "0"}, pts(lambda i: 0.25)),
                ],
            ),
            (
                "DCGM_FI_DEV_XID_ERRORS",
                "gauge",
                [
                    ({"pod": w0, "gpu": "0"}, pts(lambda i: 0 if i < 30 else 79 if i < 100 else 48)),
                    ({"pod": w0, "gpu": "1"}, pts(lambda i: 0)),
                    ({"pod": b0, "gpu": "0"}, pts(lambda i: 0)),
                ],
            ),
            (
                "node_memory_MemAvailable_bytes",
                "gauge",
                [
                    ({"job": "train-a", "instance": "n1"}, pts(lambda i: 100e9)),
                    ({"job": "train-a", "instance": "n2"}, pts(lambda i: 50e9 - i * 1e8)),
                    ({"job": B, "instance": "n3"}, pts(lambda i: 7e9)),
                    ({"job": ODD_JOB, "instance": "n9"}, pts(lambda i: 1234.0)),
                ],
            ),
            ("test_weird", "gauge", [({"job": B}, pts(lambda i: weird[i % 3]))]),
        ]
    )


# What the aliases of run A must read at history point i.
def oom_a(i: int) -> float:
    w0 = 0 if i < 20 else 1 if i < 40 else 3 if i < 90 else 4  # the reset at 80 (to 0) adds nothing
    return w0 + (1 if i >= 95 else 0)


def restarts_a(i: int) -> float:
    return 7.0 if i < 60 else 8.0  # 5 + 2 (worker-1, gone at 40, still counts) + 0, then worker-0's 6th


def xid_a(i: int) -> float:
    return 0.0 if i < 30 else 1.0 if i < 100 else 2.0


def qid(name: str) -> str:
    """The id of a run another source (W&B) of the watch found: ``name`` is its id there."""
    return f"wandb:team/llm/{name}"


def pid(name: str) -> str:
    """The id of a run the Prometheus config itself names (``runs``)."""
    return f"prometheus:w/{name}"


def target(url: str, known: dict[str, dict[str, str]] | None = None, **cfg: Any) -> Target:
    """``known``: runs found by another source, by their name there (the templates get the name, never
    herowatch's source-qualified id)."""
    cfg.setdefault("step", "30s")
    cfg.setdefault("lookback", "20m")
    known = known or {}
    return Target(
        watch="w",
        config=PrometheusTarget(url=url, **cfg),
        known_runs={qid(k): v for k, v in known.items()},
        names={qid(k): k for k in known},
    )


def ok(result: PollResult) -> PollResult:
    assert result.error is None, result.error
    return result


def series_of(result: PollResult, run: str, alias: str) -> dict[float, float]:
    """The values of the run named ``run`` (known, or named by the config)."""
    ids = (qid(run), pid(run))
    return {s.t: s.metrics[alias] for s in result.samples if s.run in ids and alias in s.metrics}


def roundtrip(cursors: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(cursors, allow_nan=False))  # cursors are stored as JSON


def only(**queries: str) -> dict[str, str | None]:
    return {**{alias: None for alias in DEFAULT_QUERIES}, **queries}
