"""Silences: label matchers with a time window. A silenced alert is still recorded and shown, not sent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from alerts.routing import Matcher


@dataclass(frozen=True)
class SilenceSpec:
    id: int
    matchers: Sequence[Matcher]
    starts_at: float
    ends_at: float
    created_by: str = ""
    comment: str = ""

    @classmethod
    def parse(
        cls,
        id: int,
        matchers: Iterable[str],
        starts_at: float,
        ends_at: float,
        created_by: str = "",
        comment: str = "",
    ) -> SilenceSpec:
        ms = tuple(Matcher.parse(m) for m in matchers)
        if not ms:
            raise ValueError("a silence needs at least one matcher")
        if ends_at <= starts_at:
            raise ValueError("a silence must end after it starts")
        return cls(id, ms, starts_at, ends_at, created_by, comment)

    def active(self, now: float) -> bool:
        return self.starts_at <= now < self.ends_at

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)


def silenced_by(labels: Mapping[str, str], silences: Iterable[SilenceSpec], now: float) -> SilenceSpec | None:
    """The first active silence that mutes an alert with ``labels``, or None."""
    for s in silences:
        if s.active(now) and s.matches(labels):
            return s
    return None
