"""The one interface every notifier implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Notification:
    """What the outbox hands a notifier: one alert state change for one receiver."""

    idempotency_key: str
    receiver: str
    status: str  # "firing" or "resolved"
    alertname: str
    severity: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    started_at: float
    ended_at: float | None = None
    value: float | None = None
    step: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        return self.annotations.get("summary") or self.alertname


@dataclass(frozen=True)
class SendResult:
    ok: bool
    retry: bool = False  # worth trying again later
    retry_after: float | None = None  # seconds, when the receiver said so (HTTP Retry-After)
    ref: str | None = None  # the receiver's id for what was sent (Slack message ts, ...)
    error: str | None = None

    @classmethod
    def sent(cls, ref: str | None = None) -> SendResult:
        return cls(ok=True, ref=ref)

    @classmethod
    def transient(cls, error: str, retry_after: float | None = None) -> SendResult:
        return cls(ok=False, retry=True, retry_after=retry_after, error=error)

    @classmethod
    def permanent(cls, error: str) -> SendResult:
        return cls(ok=False, retry=False, error=error)


class Notifier(Protocol):
    def send(self, notification: Notification) -> SendResult: ...
