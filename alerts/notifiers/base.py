"""The one interface every notifier implements: send a rendered view of an alert group, and say
whether a failure is worth retrying. Muting, deduplication, grouping and throttling happen before
(``monitor.delivery``); retries after (``alerts.outbox``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from alerts.views import GroupView


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
    def send(self, view: GroupView) -> SendResult: ...


@dataclass(frozen=True)
class CheckProblem:
    """Something that keeps a receiver from delivering (``fatal``), or from being verified."""

    what: str
    fix: str
    fatal: bool = True


@dataclass
class CheckReport:
    """What ``herowatch doctor`` learned of one receiver without sending anything: facts verified and
    problems, each with its fix."""

    facts: list[str] = field(default_factory=list)
    problems: list[CheckProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)


class Checkable(Protocol):
    """A notifier that can say whether it could deliver, without creating a message or an incident
    (optional: ``herowatch doctor`` asks every receiver whose notifier has ``check``)."""

    def check(self) -> CheckReport: ...
