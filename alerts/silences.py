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


def split_matchers(text: str) -> list[str]:
    """Matchers as a person types them, in the dashboard's box or on the command line: one per line or
    comma-separated, optionally in braces as Alertmanager prints them (``{run="a",alertname="b"}``).
    A comma inside double quotes belongs to the value (``run=~"a{1,3}"``)."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    parts, current, quoted, escaped = [], [], False, False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch in ",\n" and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def matches_filter(silence_matchers: Iterable[str], filters: Iterable[Matcher]) -> bool:
    """Whether a silence passes a query's filters, as ``amtool silence query`` does: each filter must
    hold for the value the silence matches its label with (``run=hero-a`` finds the silences with a
    ``run`` matcher for ``hero-a``; ``alertname=~"progress_.*"`` those for any progress rule)."""
    values: dict[str, str] = {}
    for text in silence_matchers:
        try:
            m = Matcher.parse(text)
        except ValueError:
            continue
        values[m.name] = m.value
    return all(f.matches(values) for f in filters)
