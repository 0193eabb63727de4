"""The watch config's typed schema (pydantic). ``monitor/config/example.yaml`` documents it by example."""

from __future__ import annotations

import re
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from alerts.notifiers.console import ConsoleReceiver
from alerts.notifiers.registry import ReceiverConfig, validate_receiver
from monitor.config.cadence import parse_every
from monitor.config.joins import JoinConfig
from monitor.durations import Duration
from monitor.sources.registry import SourceTarget
from monitor.sources.registry import kinds as source_kinds

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RulesConfig(Strict):
    packs: list[str] = Field(default_factory=lambda: ["hero"], description="built-in rule packs")
    files: list[str] = Field(default_factory=list, description="rule files, relative to the config file")
    files_outside: bool = Field(
        default=False, description="rule files may be outside the config file's folder (off: refused)"
    )
    overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="rule name -> parameters to change for every run"
    )
    disabled: list[str] = Field(default_factory=list, description="rule names to switch off")


class WatchRules(Strict):
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    disabled: list[str] = Field(default_factory=list)


class WatchBase(Strict):
    """One thing to watch: a simulated run, or (with the pollers) a W&B project selector."""

    name: str
    poll_interval: Duration = 15.0
    labels: dict[str, str] = Field(default_factory=dict)
    target_step: int | None = Field(default=None, ge=1, description="the run's last step, for an ETA")
    gpus: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="GPUs per run, for the report's GPU-hours",
    )
    run_gpus: dict[str, Annotated[int, Field(ge=1, le=10_000_000)]] = Field(
        default_factory=dict, description="run id or name -> its GPUs, where runs of the watch differ"
    )
    unavailable_after: Duration = Field(
        default=120.0,
        description="a source failing this long raises source_unavailable (its rules pause at once)",
    )
    unavailable_page_after: Duration = Field(
        default=600.0,
        description="a source failing (or never read) this long raises source_down, critical: it pages",
    )
    clock_skew_bound: Duration = Field(
        default=600.0, description="warn when new rows arrive this long after their own timestamps"
    )
    rules: WatchRules = Field(default_factory=WatchRules)
    kind: str | None = Field(
        default=None,
        description="what the runs are: pretraining, sft, rl (a kind the packs in force declare), or "
        "other; default: inferred per run from the metrics it logs",
    )
    references: dict[str, float] = Field(
        default_factory=dict,
        description="values the run page draws as reference lines, by the name a panel asks for "
        "(e.g. kl_budget: 0.05, max_response_length: 1024)",
    )
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
    join: JoinConfig | None = Field(
        default=None, description="how runs the watch's sources find apart are one run (docs/sources.md)"
    )

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
    def _one_source(self) -> WatchBase:
        if not self.targets():
            raise ValueError(f"say which source to watch: one of {', '.join(self.source_kinds())}")
        return self

    @model_validator(mode="after")
    def _join_sources(self) -> WatchBase:
        if self.join is not None:
            for kind in self.join.by:
                if kind not in self.targets():
                    raise ValueError(f"join.by names {kind!r}, not a source of this watch")
                if not getattr(self.targets()[kind], "finds_runs", True):
                    raise ValueError(f"join.by: {kind} reads the runs the others find; it needs no key")
        return self

    @model_validator(mode="after")
    def _read_mapped_keys(self) -> WatchBase:
        """A key mapped under ``metrics:`` is read by the sources even when no profile names it."""
        if self.metrics:
            for kind, target in self.targets().items():
                setattr(self, kind, target.reading(list(self.metrics)))
        return self

    @classmethod
    def source_kinds(cls) -> list[str]:
        return [name for name in source_kinds() if name in cls.model_fields]

    def targets(self) -> dict[str, SourceTarget]:
        """Source kind -> its settings, for the sources this watch reads."""
        return {k: getattr(self, k) for k in self.source_kinds() if getattr(self, k) is not None}

    def rule_settings(self) -> dict[str, Any]:
        """The watch's settings that fill rule parameters of the same name (RuleSet.for_run)."""
        return {"target_step": self.target_step}


# One key per registered source kind (monitor/sources/*_config.py): adding a source edits nothing here.
Watch = create_model(
    "Watch",
    __base__=WatchBase,
    __module__=__name__,
    **{
        kind: (sk.config | None, Field(default=None, description=sk.doc or None))
        for kind, sk in source_kinds().items()
    },
)


def _receiver(value: Any, info: ValidationInfo) -> ReceiverConfig:
    return validate_receiver(value, info.context)


# A receiver entry is validated by the config model its kind registered (``alerts.notifiers.registry``):
# this file names no receiver kind, so a kind registered later is accepted as soon as it is registered.
Receiver = Annotated[ReceiverConfig, PlainValidator(_receiver)]


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


class WatchdogConfig(Strict):
    """A dead man's switch: herowatch sends a heartbeat here; the receiver pages when it stops."""

    receiver: str
    interval: Duration = 300.0


class ServerConfig(Strict):
    external_url: str | None = Field(default=None, description="where people reach the dashboard, for links")
    runbooks_url: str | None = Field(
        default=None,
        description="where the rules' runbook links point (your wiki); default: herowatch's own /runbooks",
    )


# Receiver kinds a scheduled report can go to (``monitor.reports.schedule`` sends to each): the others
# (a pager, Alertmanager, the dashboard) take alerts, not a report.
REPORT_RECEIVER_KINDS = ("slack", "webhook", "console")


class ReportSchedule(Strict):
    """A report sent on a schedule: ``every: "mon 09:00"`` (weekly) or ``"09:00"`` (daily)."""

    every: str = Field(description='"mon 09:00" (a week, sent at that time) or "09:00" (a day)')
    timezone: str = "UTC"
    receiver: str
    watch: str | None = Field(default=None, description="only this watch's runs (default: all)")
    name: str | None = Field(default=None, description="default: receiver, every and watch")

    @field_validator("every")
    @classmethod
    def _every(cls, v: str) -> str:
        parse_every(v)
        return v

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {v!r} (use an IANA name such as UTC or Europe/Berlin)"
            ) from None
        return v

    def key(self) -> str:
        return self.name or f"{self.receiver}|{self.every}|{self.timezone}|{self.watch or '*'}"


class WatchConfig(Strict):
    watch: list[Watch] = Field(default_factory=list)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    receivers: list[Receiver] = Field(default_factory=lambda: [ConsoleReceiver(name="console")])
    route: RouteConfig = Field(default_factory=RouteConfig)
    inhibit_rules: list[InhibitRuleConfig] | None = Field(
        default=None, description="default: the inhibit rules of the packs in force (rules.packs)"
    )
    watchdog: WatchdogConfig | None = None
    server: ServerConfig = Field(default_factory=ServerConfig)
    reports: list[ReportSchedule] = Field(default_factory=list, description="reports sent on a schedule")
