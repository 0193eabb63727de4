"""Settings of a push watch: runs that report themselves (``POST /api/ingest``, ``herowatch emit``).

The ingest token is not here: the config names the environment variable that holds it
(``token_env``), one token per watch, never the API token. A job holding it can push samples for this
watch's runs and nothing else.
"""

from __future__ import annotations

import re

from pydantic import ConfigDict, Field, field_validator

from monitor.sources.registry import SourceTarget, register

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")


class PushTarget(SourceTarget):
    """What jobs push for this watch: each run they name is a run (``push:<watch>/<run>``)."""

    model_config = ConfigDict(extra="forbid")

    token_env: str = Field(
        default="HEROWATCH_INGEST_TOKEN",
        description="environment variable holding this watch's ingest token (at least 32 characters)",
    )
    rate: float = Field(default=1000.0, gt=0, le=1e6, description="samples per second a watch may push")
    burst: int = Field(
        default=20_000, ge=1, le=1_000_000, description="samples a watch may push at once above the rate"
    )
    max_runs: int = Field(default=1000, ge=1, le=100_000, description="runs a watch may push for")
    read_bytes: int = Field(
        default=8 << 20, ge=1 << 16, le=1 << 30, description="most bytes read per run and poll"
    )
    max_metrics: int = Field(
        default=1000, ge=1, le=2000, description="metric names one pushed sample may hold (413 beyond)"
    )
    max_name: int = Field(default=128, ge=8, le=200, description="characters of one metric name (422 beyond)")
    rate_bytes: int = Field(
        default=1 << 20, ge=1 << 10, le=1 << 30, description="spool bytes per second a watch may push"
    )
    burst_bytes: int = Field(
        default=32 << 20,
        ge=1 << 20,
        le=1 << 34,
        description="spool bytes pushed at once above the rate",
    )
    spool_bytes: int = Field(
        default=64 << 20,
        ge=1 << 20,
        le=1 << 40,
        description="bytes accepted but not yet read by the watch's poller (429 beyond, until it catches up)",
    )

    @field_validator("token_env")
    @classmethod
    def _env(cls, v: str) -> str:
        if not _ENV_NAME.match(v):
            raise ValueError("expected an environment variable name such as HERO_INGEST_TOKEN")
        return v

    def promises(self) -> frozenset[str]:
        """A pushed run says its steps. Its state only if the job reports it (``herowatch emit run``,
        ``started``/``exit``): a job that never does is shown without a state, never paged as blind."""
        from monitor.samples import STEP

        return frozenset({STEP})


register(
    "push",
    PushTarget,
    "monitor.sources.push_source:PushSource",
    "runs that push their own samples (POST /api/ingest, `herowatch emit`) with a per-watch token",
)
