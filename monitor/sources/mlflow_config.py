"""Settings of an MLflow watch: runs of one experiment of a tracking server, chosen by a search filter.

Credentials are MLflow's own environment variables (``MLFLOW_TRACKING_TOKEN``, or
``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``; ``MLFLOW_TRACKING_INSECURE_TLS``,
``MLFLOW_TRACKING_SERVER_CERT_PATH``), never this file. ``tracking_uri`` defaults to
``$MLFLOW_TRACKING_URI``.
"""

from __future__ import annotations

import importlib.util
import os
import re

from pydantic import ConfigDict, Field, field_validator

from monitor.durations import Duration
from monitor.samples import RunState
from monitor.sources.bounded import answer_limit_field
from monitor.sources.registry import SourceTarget, register

WHOLE_HISTORY = 10**12  # steps: "all of it"

# MLflow's run statuses, as herowatch names run states.
STATES = {
    "RUNNING": RunState.RUNNING,
    "SCHEDULED": RunState.PENDING,
    "FINISHED": RunState.FINISHED,
    "FAILED": RunState.FAILED,
    "KILLED": RunState.KILLED,
}


class MlflowTarget(SourceTarget):
    """Runs of one experiment that match ``filter`` (an MLflow search filter); runs already followed stay
    followed when they stop matching (a run leaving ``attributes.status = 'RUNNING'`` by failing)."""

    model_config = ConfigDict(extra="forbid")

    tracking_uri: str = Field(
        default_factory=lambda: os.environ.get("MLFLOW_TRACKING_URI", ""),
        description="the tracking server, e.g. http://mlflow.internal:5000 (default: $MLFLOW_TRACKING_URI)",
    )
    experiment: str = Field(description="the experiment's name")
    filter: str = Field(
        default="", max_length=4000, description="an MLflow search filter, e.g. tags.hero = 'true'"
    )
    keys: list[str] = Field(
        default_factory=lambda: ["*"],
        description="metric keys to read; '*' wildcards; MLflow's system metrics are system/*",
    )
    timeout: Duration = Field(default=10.0, description="per request")
    retries: int = Field(default=2, ge=0, le=10, description="further attempts after a timeout, 429 or 5xx")
    warmup_steps: int = Field(
        default=2000, ge=1, description="on first sight of a run, read this many last steps"
    )
    page_steps: int = Field(
        default=1000,
        ge=1,
        le=2000,
        description="steps per history request (MLflow answers 2500 values at most)",
    )
    max_runs: int = Field(default=1000, ge=1, le=50_000, description="runs watched at most")
    max_answer_bytes: int = answer_limit_field(32 << 20)  # a runs/search page of 1000 runs is large
    rewind_probe: Duration = Field(
        default=60.0,
        description="a running run whose steps have not moved is checked this often for steps logged "
        "again below its highest (resumed from a checkpoint into the same run)",
    )

    @field_validator("tracking_uri")
    @classmethod
    def _uri(cls, v: str) -> str:
        v = v.strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("expected the tracking server's http(s) URL (or set $MLFLOW_TRACKING_URI)")
        if importlib.util.find_spec("mlflow") is None:
            raise ValueError("reading MLflow needs its client: pip install 'herowatch[mlflow]'")
        return v

    @field_validator("experiment")
    @classmethod
    def _experiment(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("say which experiment to watch")
        return v.strip()

    @field_validator("keys")
    @classmethod
    def _keys(cls, v: list[str]) -> list[str]:
        if not v or any(not k.strip() for k in v):
            raise ValueError("keys cannot be empty or blank")
        return list(dict.fromkeys(v))

    def promises(self) -> frozenset[str]:
        from monitor.samples import STATE, STEP

        return frozenset({STEP, STATE})

    def run_url(self, experiment_id: str, run_id: str) -> str:
        return f"{self.tracking_uri}/#/experiments/{experiment_id}/runs/{run_id}"

    def for_backfill(self, run: str | None = None) -> MlflowTarget:
        update: dict[str, object] = {"warmup_steps": WHOLE_HISTORY}
        if run:
            if not re.fullmatch(r"[A-Za-z0-9_\-]{1,64}", run):
                raise ValueError(f"{run!r} is not an MLflow run id")
            update["filter"] = f"attributes.run_id = '{run}'"
        return self.model_copy(update=update)

    def for_discovery(self) -> MlflowTarget:
        return self.model_copy(update={"warmup_steps": 1})

    def reading(self, keys: list[str]) -> MlflowTarget:
        extra = [k for k in keys if k not in self.keys]
        return (
            self.model_copy(update={"keys": [*self.keys, *extra]}) if extra and "*" not in self.keys else self
        )


register(
    "mlflow",
    MlflowTarget,
    "monitor.sources.mlflow_source:MlflowSource",
    "runs of an MLflow experiment matching a search filter (state, metric history, system metrics)",
)
