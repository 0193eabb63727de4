"""A run's coverage as the API shows it: which rules can see, per input when a value last arrived,
from what the engine stored with the run's stats at its last poll (``engine.coverage``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from alerts.clock import isoformat
from monitor.engine.coverage_stored import expand
from monitor.storage.models import Run

CoverageState = Literal["covered", "warming", "blind", "unknown", "unused", "ended"]


class InputCoverageOut(BaseModel):
    name: str = Field(description="a metric name, or @step (the step counter), @state, @any (any data)")
    state: CoverageState
    last_at: str | None = Field(description="when its last value arrived; null: never")
    count: int = Field(description="distinct times a value arrived")
    why: str = Field(description="the state in words")


class RuleCoverageOut(BaseModel):
    rule: str
    kind: str
    severity: str
    state: CoverageState = Field(description="the worst of its inputs'")
    inputs: list[InputCoverageOut]


class CoverageOut(BaseModel):
    """Which of a run's rules can see: per rule and input, when a value last arrived (docs/rules.md)."""

    run: str
    state: CoverageState | None = Field(description="the worst over its rules; null before the first poll")
    at: str | None = Field(description="when it was judged (the run's last poll)")
    summary: str | None = Field(description="the watching_blind text while any rule is blind")
    keys: list[str] = Field(description="metric keys the run logs, as logged (the first 40)")
    gaps: dict[str, str] = Field(description="input -> why its source found nothing (a query with no series)")
    rules: list[RuleCoverageOut]


STATES = ("covered", "warming", "blind", "unknown", "unused", "ended")


def _state(v: Any) -> str:
    return v if v in STATES else "unknown"


def coverage_out(run: Run) -> CoverageOut:
    cov = expand((run.stats or {}).get("coverage"))
    if not isinstance(cov, dict):
        return CoverageOut(run=run.id, state=None, at=None, summary=None, keys=[], gaps={}, rules=[])
    rules = []
    for r in cov.get("rules") or ():
        inputs = [
            InputCoverageOut(
                name=str(i.get("name")),
                state=_state(i.get("state")),
                last_at=isoformat(i["last_at"]) if isinstance(i.get("last_at"), int | float) else None,
                count=int(i.get("count") or 0),
                why=str(i.get("why") or ""),
            )
            for i in r.get("inputs") or ()
        ]
        rules.append(
            RuleCoverageOut(
                rule=str(r.get("rule")),
                kind=str(r.get("kind")),
                severity=str(r.get("severity")),
                state=_state(r.get("state")),
                inputs=inputs,
            )
        )
    at = cov.get("at")
    return CoverageOut(
        run=run.id,
        state=_state(cov.get("state")),
        at=isoformat(at) if isinstance(at, int | float) else None,
        summary=cov.get("summary"),
        keys=[str(k) for k in cov.get("keys") or ()],
        gaps={str(k): str(v) for k, v in (cov.get("gaps") or {}).items()},
        rules=rules,
    )
