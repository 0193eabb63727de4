"""The one interface every notifier implements: send a rendered view of an alert group, and say
whether a failure is worth retrying. Muting, deduplication, grouping and throttling happen before
(``monitor.delivery``); retries after (``alerts.outbox``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from alerts.reachability import Cause
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
    """``send`` is the whole interface. A notifier whose receiver forgets what it was told unless it
    hears it again (Alertmanager resolves an alert it has not heard of for a while) also has a
    ``refresh_every`` attribute (seconds): the pipeline then re-sends each group's firing alerts that
    often, as a view of kind ``refresh`` (``monitor.delivery.reminders``). No notifier runs its own timer."""

    def send(self, view: GroupView) -> SendResult: ...


def refresh_every(notifier: object) -> float | None:
    """How often the pipeline must re-tell this notifier's receiver what fires (None: never)."""
    every = getattr(notifier, "refresh_every", None)
    return float(every) if isinstance(every, int | float) and every > 0 else None


def retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds from an HTTP ``Retry-After`` header (in seconds), None when absent or not a number."""
    for k, v in (headers or {}).items():
        if str(k).lower() == "retry-after":
            v = v[0] if isinstance(v, list | tuple) else v
            try:
                return max(0.0, float(v))
            except (TypeError, ValueError):
                return None
    return None


@dataclass(frozen=True)
class CheckProblem:
    """Something that keeps a receiver from delivering (``fatal``), or from being verified."""

    what: str
    fix: str
    fatal: bool = True
    cause: Cause | None = None  # set when the receiver could not be looked at (the network, the token)


class MissingSecret(ValueError):
    """A receiver cannot be built: the environment variable holding its secret is not set."""

    def __init__(self, env: str, message: str) -> None:
        super().__init__(message)
        self.env = env


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
