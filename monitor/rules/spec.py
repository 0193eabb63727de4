"""The rule spec every rule kind shares; each kind adds its own parameters in a subclass."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from alerts.model import Severity
from monitor.durations import Duration

OWN_KINDS: set[str] = set()  # the kinds of herowatch's own rules (``RuleSpec.own``)
Importance = Literal["essential", "queried"]


class RuleSpec(BaseModel):
    """One rule, as written in a rule file (close to a Prometheus alerting rule)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)
    kind_name: ClassVar[str] = ""
    # herowatch's own rules (source health, clock skew, watching blind): built by the engine, not read
    # from a rule file, and applied again at every poll (a subclass sets it; a rule file cannot)
    own: ClassVar[bool] = False

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.own:
            OWN_KINDS.add(cls.model_fields["kind"].default)

    name: str
    kind: str
    metric: str | None = None
    for_: Duration = Field(default=0.0, alias="for")
    keep_firing_for: Duration = 0.0
    severity: Severity = Severity.WARNING
    expect: Literal["always", "periodic", "optional"] | None = Field(
        default=None,
        description="whether every run must send the rule's inputs; unset (the default): as important as "
        "its pack or rule file declares them (inputs: essential), else optional. always (a run that never "
        "does is watched blind: watching_blind says so), periodic (at evals or saves: judged once it has "
        "come), optional (only runs that log it; judged once it has come)",
    )
    importance: dict[str, Importance] = Field(
        default_factory=dict,
        description="the declared importance of inputs (set from its pack's or rule file's inputs:): "
        "essential (every run its trainer's tracker feeds must send it) or queried (essential where a "
        "source of the watch queries it, e.g. Prometheus); any other input is optional",
    )
    for_kind: str | None = Field(
        default=None,
        description="the run kind whose metrics the rule watches (set from its pack's run_kind): a run of "
        "another kind is not expected to send them (an RL run logs no pretraining loss)",
    )
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "_-" for c in v):
            raise ValueError("rule names use letters, digits, '_' and '-'")
        return v

    @property
    def momentary(self) -> bool:
        """Its alert tells of one moment (a one-step blip), not of a condition that goes on: the text it
        fired with stays (re-rendering it would describe the next blip: step 130, 137, 143...)."""
        return False

    def raw(self) -> dict[str, Any]:
        """The rule as a plain dict again, for applying overrides and re-validating."""
        return self.model_dump(by_alias=True, exclude_unset=False, mode="json")

    def render(self, key: str, **values: Any) -> str:
        """An annotation with {run}, {metric}, {value}, {threshold}, {step} filled in."""
        template = self.annotations.get(key, "")
        fields = {"rule": self.name, "metric": self.metric or "", **{k: _fmt(v) for k, v in values.items()}}
        try:
            return template.format_map(_Default(fields))
        except (ValueError, IndexError):
            return template


class _Default(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if abs(v) >= 1e5 or (v != 0 and abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return "" if v is None else str(v)
