"""The watch config's typed schema (pydantic). ``monitor/config/example.yaml`` documents it by example."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from monitor.durations import Duration
from monitor.sources.prometheus_config import PrometheusTarget
from monitor.sources.sim_config import SimTarget
from monitor.sources.wandb_config import WandbTarget

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RulesConfig(Strict):
    packs: list[str] = Field(default_factory=lambda: ["hero"], description="built-in rule packs")
    files: list[str] = Field(default_factory=list, description="rule files, relative to the config file")
    overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="rule name -> parameters to change for every run"
    )
    disabled: list[str] = Field(default_factory=list, description="rule names to switch off")


class WatchRules(Strict):
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    disabled: list[str] = Field(default_factory=list)


class Watch(Strict):
    """One thing to watch: a simulated run, or (with the pollers) a W&B project selector."""

    name: str
    poll_interval: Duration = 15.0
    labels: dict[str, str] = Field(default_factory=dict)
    target_step: int | None = Field(default=None, ge=1, description="the run's last step, for an ETA")
    unavailable_after: Duration = Field(
        default=120.0,
        description="a source failing this long raises source_unavailable (its rules pause at once)",
    )
    clock_skew_bound: Duration = Field(
        default=600.0, description="warn when new rows arrive this long after their own timestamps"
    )
    rules: WatchRules = Field(default_factory=WatchRules)
    metrics_profile: str = Field(
        default="auto",
        description="the trainer whose metric names the runs log (megatron, huggingface, ...): mapped "
        "to the names the rules use; auto: detected from each run's keys; none: used as they are",
    )
    metrics: dict[str, str] = Field(
        default_factory=dict,
        description="run key -> the name the rules use, e.g. {objective: train/loss}: for keys no "
        "profile knows (applied before the profile's own mapping)",
    )
    sim: SimTarget | None = None
    wandb: WandbTarget | None = None
    prometheus: PrometheusTarget | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(
                "use letters, digits, '.', '_' or '-' (at most 128), starting with a letter or digit"
            )
        return v

    @field_validator("metrics_profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        from monitor.profiles import choices

        if v not in choices():
            raise ValueError(f"unknown metrics profile {v!r}; known: {', '.join(choices())}")
        return v

    @field_validator("poll_interval")
    @classmethod
    def _interval(cls, v: float) -> float:
        if v < 1:
            raise ValueError("poll_interval must be at least 1s")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> Watch:
        given = [k for k in self.source_kinds() if getattr(self, k) is not None]
        if not given:
            raise ValueError(f"say which source to watch: one of {', '.join(self.source_kinds())}")
        return self

    @model_validator(mode="after")
    def _read_mapped_keys(self) -> Watch:
        """A key mapped under ``metrics:`` is read from W&B even when no profile names it."""
        if self.wandb is not None and self.metrics:
            extra = [k for k in self.metrics if k not in self.wandb.keys]
            if extra:
                self.wandb = self.wandb.model_copy(update={"keys": [*self.wandb.keys, *extra]})
        return self

    @classmethod
    def source_kinds(cls) -> list[str]:
        return [name for name in ("sim", "wandb", "prometheus") if name in cls.model_fields]

    def targets(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.source_kinds() if getattr(self, k) is not None}


class ConsoleReceiver(Strict):
    name: str
    kind: Literal["console"] = "console"


class DashboardReceiver(Strict):
    """Recorded and shown on the dashboard, never sent (e.g. route warnings here)."""

    name: str
    kind: Literal["dashboard"]


class SlackReceiver(Strict):
    """A Slack channel, through a bot token from SLACK_BOT_TOKEN (never in this file)."""

    name: str
    kind: Literal["slack"]
    channel: str = Field(description="channel id, e.g. C0123456789 (the bot must be a member)")
    base_url: str | None = Field(default=None, description="Slack API base URL; only for tests and proxies")
    timeout: Duration = 10.0
    plots: bool = True
    actions: bool = Field(
        default=True, description="Acknowledge / Silence buttons (needs the interactivity URL)"
    )


class WebhookReceiver(Strict):
    """POSTs a JSON document per notification (Alertmanager-webhook-like) to ``url``."""

    name: str
    kind: Literal["webhook"]
    url: str
    timeout: Duration = 10.0


def _receiver_kind(v: Any) -> str:
    kind = v.get("kind", "console") if isinstance(v, dict) else getattr(v, "kind", "console")
    return kind if kind in ("console", "dashboard", "slack", "webhook") else "unknown"


class _UnknownReceiver(Strict):
    name: str
    kind: Literal["console", "dashboard", "slack", "webhook"]


Receiver = Annotated[
    Annotated[ConsoleReceiver, Tag("console")]
    | Annotated[DashboardReceiver, Tag("dashboard")]
    | Annotated[SlackReceiver, Tag("slack")]
    | Annotated[WebhookReceiver, Tag("webhook")]
    | Annotated[_UnknownReceiver, Tag("unknown")],
    Discriminator(_receiver_kind),
]


class RouteConfig(Strict):
    receiver: str = "console"
    matchers: list[str] = Field(default_factory=list)
    group_by: list[str] = Field(default_factory=lambda: ["run"])
    group_wait: Duration | None = Field(default=None, description="default 30s")
    group_interval: Duration | None = Field(default=None, description="default 5m")
    repeat_interval: Duration | None = Field(default=None, description="default 4h")
    send_resolved: bool | None = Field(default=None, description="default true")
    continue_: bool = Field(default=False, alias="continue")
    routes: list[RouteConfig] = Field(default_factory=list)


class InhibitRuleConfig(Strict):
    source_matchers: list[str]
    target_matchers: list[str]
    equal: list[str] = Field(default_factory=lambda: ["run"])


def _default_inhibit_rules() -> list[InhibitRuleConfig]:
    from alerts.inhibition import DEFAULT_INHIBIT_RULES

    return [
        InhibitRuleConfig(source_matchers=s, target_matchers=t, equal=e) for s, t, e in DEFAULT_INHIBIT_RULES
    ]


class WatchdogConfig(Strict):
    """A dead man's switch: herowatch sends a heartbeat here; the receiver pages when it stops."""

    receiver: str
    interval: Duration = 300.0


class ServerConfig(Strict):
    dashboard_title: str = "herowatch"
    external_url: str | None = Field(default=None, description="where people reach the dashboard, for links")
    runbooks_url: str | None = Field(
        default=None,
        description="where the rules' runbook links point (your wiki); default: herowatch's own /runbooks",
    )
    evaluation_interval: Annotated[Duration, Field(description="how often time-based rules are checked")] = (
        15.0
    )


class WatchConfig(Strict):
    watch: list[Watch] = Field(default_factory=list)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    receivers: list[Receiver] = Field(default_factory=lambda: [ConsoleReceiver(name="console")])
    route: RouteConfig = Field(default_factory=RouteConfig)
    inhibit_rules: list[InhibitRuleConfig] = Field(default_factory=_default_inhibit_rules)
    watchdog: WatchdogConfig | None = None
    server: ServerConfig = Field(default_factory=ServerConfig)
