"""Response models of the status API (they make the OpenAPI document)."""

from __future__ import annotations

from pydantic import BaseModel


class RunOut(BaseModel):
    id: str
    watch: str
    source: str
    display_name: str | None
    url: str | None
    labels: dict[str, str]
    state: str | None
    step: int | None
    last_step_at: str | None
    last_seen_at: str | None
    last_polled_at: str | None
    source_error: str | None
    restarts: int
    health: str  # ok | warning | critical | unknown
    active_alerts: dict[str, int]


class AlertOut(BaseModel):
    id: int
    fingerprint: str
    rule: str
    kind: str
    run: str
    metric: str | None
    severity: str
    state: str
    labels: dict[str, str]
    summary: str
    description: str | None
    runbook_url: str | None
    value: float | None
    threshold: float | None
    step: int | None
    active_at: str
    fired_at: str | None
    resolved_at: str | None


class Health(BaseModel):
    status: str
    version: str
