"""The watch config's typed schema (pydantic). ``monitor/config/example.yaml`` documents it by example."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from monitor.durations import Duration
from monitor.sources.prometheus_config import PrometheusTarget
from monitor.sources.sim_config import SimTarget

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
    rules: WatchRules = Field(default_factory=WatchRules)
    sim: SimTarget | None = None
    prometheus: PrometheusTarget | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(
                "use letters, digits, '.', '_' or '-' (at most 128), starting with a letter or digit"
            )
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

    @classmethod
    def source_kinds(cls) -> list[str]:
        return [name for name in ("sim", "wandb", "prometheus") if name in cls.model_fields]

    def targets(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.source_kinds() if getattr(self, k) is not None}


class Receiver(Strict):
    name: str
    kind: Literal["console"] = "console"


class RouteConfig(Strict):
    receiver: str = "console"
    matchers: list[str] = Field(default_factory=list)
    group_by: list[str] = Field(default_factory=lambda: ["run"])
    continue_: bool = Field(default=False, alias="continue")
    routes: list[RouteConfig] = Field(default_factory=list)


class ServerConfig(Strict):
    dashboard_title: str = "herowatch"
    evaluation_interval: Annotated[Duration, Field(description="how often time-based rules are checked")] = (
        15.0
    )


class WatchConfig(Strict):
    watch: list[Watch] = Field(default_factory=list)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    receivers: list[Receiver] = Field(default_factory=lambda: [Receiver(name="console")])
    route: RouteConfig = Field(default_factory=RouteConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

    @model_validator(mode="after")
    def _references(self) -> WatchConfig:
        names = [w.name for w in self.watch]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"watch names must be unique; repeated: {', '.join(dupes)}")
        known = {r.name for r in self.receivers}

        def check(route: RouteConfig, where: str) -> None:
            if route.receiver not in known:
                raise ValueError(
                    f"{where}.receiver {route.receiver!r} is not a receiver; "
                    f"known: {', '.join(sorted(known))}"
                )
            for i, child in enumerate(route.routes):
                check(child, f"{where}.routes[{i}]")

        check(self.route, "route")
        return self
