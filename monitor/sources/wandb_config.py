"""Settings of a Weights & Biases watch target: which project, which runs in it, which metrics, how to ask.

The API key is not here: it comes from the environment (``WANDB_API_KEY``, see monitor.settings). The
W&B client's other standard variables are honoured as defaults the config can override:
``WANDB_BASE_URL`` (a dedicated or self-hosted server), ``WANDB_ENTITY`` and ``WANDB_PROJECT``.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from monitor.durations import Duration
from monitor.profiles import source_keys
from monitor.sources.registry import SourceTarget, register

WHOLE_HISTORY = 10**12  # steps: "all of it"
PUBLIC_API = "https://api.wandb.ai"
PUBLIC_WEB = "https://wandb.ai"

# W&B's names of run states, for the discovery filter (herowatch's own: monitor.samples.RunState)
WandbState = Literal[
    "running", "pending", "finished", "crashed", "failed", "killed", "preempting", "preempted"
]

# What a Levanter hero run logs, plus the W&B bookkeeping columns.
LEVANTER_KEYS: tuple[str, ...] = (
    "train/loss",
    "global_step",
    "throughput/tokens_per_second",
    "throughput/mfu",
    "throughput/duration",
    "grad/norm/total",
    "optim/learning_rate",
    "optim/skipped_step",
    "moe/drop_fraction",
    "train/router/routing_entropy_mean",
    "eval/loss",
    "eval/paloma/macro_loss",
    "_step",
    "_timestamp",
    "_runtime",
)
# By default a watch reads the keys of every trainer herowatch knows (monitor/profiles), so that a
# Megatron or Hugging Face run is watched, and its trainer detected, with no per-run config.
DEFAULT_KEYS: tuple[str, ...] = tuple(dict.fromkeys([*LEVANTER_KEYS, *source_keys()]))


class WandbTarget(SourceTarget):
    """Runs of one W&B project, chosen by a selector. All given criteria must hold (an empty one is not a
    criterion); runs already being watched stay watched when they stop matching (a crash must be seen)."""

    model_config = ConfigDict(extra="forbid")

    entity: str = Field(
        default_factory=lambda: os.environ.get("WANDB_ENTITY", ""),
        description="team or user that owns the project (default: $WANDB_ENTITY)",
    )
    project: str = Field(
        default_factory=lambda: os.environ.get("WANDB_PROJECT", ""), description="default: $WANDB_PROJECT"
    )
    run_ids: list[str] = Field(default_factory=list, description="run ids (the 8-character ids in run URLs)")
    tags: list[str] = Field(default_factory=list, description="runs having any of these tags, e.g. [hero]")
    name_pattern: str | None = Field(
        default=None, description="regular expression searched in the display name, e.g. ^hero-.*"
    )
    states: list[WandbState] = Field(default_factory=list, description="only discover runs in these states")
    keys: list[str] = Field(
        default_factory=lambda: list(DEFAULT_KEYS),
        description="history keys to read; '*' wildcards allowed, e.g. eval/*",
    )
    base_url: str = Field(
        default_factory=lambda: os.environ.get("WANDB_BASE_URL") or PUBLIC_API,
        description=f"API server (default: $WANDB_BASE_URL, else {PUBLIC_API}); a dedicated or self-hosted "
        "W&B server is its own host",
    )
    web_url: str | None = Field(
        default=None,
        description="web app, for run links (default: wandb.ai for the public API, else base_url)",
    )
    timeout: Duration = Field(default=10.0, description="per request, the client's own retries included")
    retries: int = Field(default=2, ge=0, le=10, description="further attempts after a timeout, 429 or 5xx")
    backoff: Duration = Field(default=1.0, description="first wait before a retry; doubles, with jitter")
    per_page: int = Field(default=100, ge=1, le=1000, description="runs per page of the run listing")
    history_page_size: int = Field(
        default=1000, ge=1, le=10_000, description="steps per history request (a wider range is sampled)"
    )
    warmup_steps: int = Field(
        default=2000,
        ge=1,
        description="on first sight of a run (or after a rewind), read this many last steps",
    )
    max_concurrency: int = Field(
        default=4, ge=1, le=64, description="requests in flight to this server (set by its first watch)"
    )
    rate_limit: int = Field(
        default=200,
        ge=1,
        le=1_000_000,
        description="requests herowatch may send to this server per rate_limit_window, for all its W&B "
        "watches together (the API key's quota: 200 a minute for new W&B accounts; set by its first watch)",
    )
    rate_limit_window: Duration = Field(default=60.0, description="the quota's window")
    priority_tags: list[str] = Field(
        default_factory=lambda: ["hero"],
        description="runs with any of these tags are read first and every poll; the others share what "
        "the quota leaves, oldest read first",
    )

    def promises(self) -> frozenset[str]:
        """What this source delivers for every run (coverage): the step counter and the run state."""
        from monitor.samples import STATE, STEP

        return frozenset({STEP, STATE})

    @field_validator("name_pattern")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"name_pattern is not a valid regular expression: {exc}") from None
        return v

    @field_validator("base_url", "web_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("expected an http(s) URL such as https://api.wandb.ai")
        return v.rstrip("/")

    @field_validator("entity", "project")
    @classmethod
    def _given(cls, v: str, info: ValidationInfo) -> str:
        if not v.strip():
            raise ValueError(
                f"say which {info.field_name} to watch (or set $WANDB_{info.field_name.upper()})"
            )
        return v.strip()

    @model_validator(mode="after")
    def _web(self) -> WandbTarget:
        if self.web_url is None:
            self.web_url = PUBLIC_WEB if self.base_url == PUBLIC_API else self.base_url
        return self

    @field_validator("run_ids", "tags", "keys", "priority_tags")
    @classmethod
    def _no_blanks(cls, v: list[str]) -> list[str]:
        if any(not x.strip() for x in v):
            raise ValueError("entries cannot be blank")
        return list(dict.fromkeys(v))  # de-duplicated, order kept

    @field_validator("timeout", "rate_limit_window")
    @classmethod
    def _timeout(cls, v: float, info: ValidationInfo) -> float:
        if v <= 0:
            raise ValueError(f"{info.field_name} must be positive")
        return v

    def run_url(self, run_id: str) -> str:
        return f"{self.web_url}/{self.entity}/{self.project}/runs/{run_id}"

    def for_backfill(self, run: str | None = None) -> WandbTarget:
        """Everything on first sight (and only ``run``, if given)."""
        return self.model_copy(update={"warmup_steps": WHOLE_HISTORY, **({"run_ids": [run]} if run else {})})

    def for_discovery(self) -> WandbTarget:
        return self.model_copy(update={"warmup_steps": 1})

    def reading(self, keys: list[str]) -> WandbTarget:
        extra = [k for k in keys if k not in self.keys]
        return self.model_copy(update={"keys": [*self.keys, *extra]}) if extra else self


register(
    "wandb",
    WandbTarget,
    "monitor.sources.wandb_source:WandbSource",
    "a Weights & Biases project selector (full-resolution history, state, heartbeat)",
)
