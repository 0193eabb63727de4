"""Silences: label matchers with a time window. A silenced alert is still recorded and shown, not sent.

A new silence's matchers are checked whole (:meth:`SilenceSpec.parse`: syntax, RE2, and a budget on
their compiled size, naming the matcher that passes it). Stored silences are compiled once each and
kept while they are in force (:class:`CompiledSilences`): every page, API read and delivery cycle
reuses them, and a silence's compiled matchers are dropped when it ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from alerts.routing import Matcher, over_budget

log = logging.getLogger(__name__)


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
        if (too_costly := over_budget(ms)) is not None:
            raise ValueError(too_costly)
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


@dataclass(frozen=True)
class StoredSilence:
    """A silence as stored: its matchers as text (checked when it was created)."""

    id: int
    matchers: tuple[str, ...]
    starts_at: float
    ends_at: float
    created_by: str = ""
    comment: str = ""


class CompiledSilences:
    """Stored silences' matchers, compiled once per silence and kept while the silence is in force.

    :meth:`in_force` takes every silence in force now (as storage reads them) and answers their specs,
    compiling only those it has not seen (or whose matchers changed); a silence that ended, was expired
    or is gone is dropped. :meth:`spec` answers one silence, kept only while it is in force. Thread-safe
    (the engine's delivery and the web's readers share one). Unreadable stored matchers (a row edited by
    hand) are logged once and ignored, not retried on every read.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[int, tuple[tuple[str, ...], tuple[Matcher, ...] | None]] = {}
        self.compiled = 0  # silences compiled so far (for tests and /metrics)

    def __len__(self) -> int:
        return len(self._kept)

    def _matchers(self, row: StoredSilence, keep: bool) -> tuple[Matcher, ...] | None:
        # Compiled under the lock: the delivery threads and the web's readers that meet a new silence at
        # the same moment compile it once between them (a budgeted silence compiles in about a millisecond).
        with self._lock:
            known = self._kept.get(row.id)
            if known is not None and known[0] == row.matchers:
                return known[1]
            try:
                compiled = tuple(Matcher.parse(m) for m in row.matchers) or None
            except ValueError as exc:
                log.warning("silence %s has unreadable matchers %r: ignored (%s)", row.id, row.matchers, exc)
                compiled = None
            self.compiled += 1
            if keep:
                self._kept[row.id] = (row.matchers, compiled)
            return compiled

    def spec(self, row: StoredSilence, now: float) -> SilenceSpec | None:
        """``row``'s spec (None if its matchers do not parse); kept for later only while in force."""
        matchers = self._matchers(row, keep=row.starts_at <= now < row.ends_at)
        if matchers is None:
            return None
        return SilenceSpec(row.id, matchers, row.starts_at, row.ends_at, row.created_by, row.comment)

    def in_force(self, rows: Iterable[StoredSilence], now: float) -> list[SilenceSpec]:
        """The specs of ``rows``, every silence in force at ``now``; any other kept silence is dropped."""
        rows = [r for r in rows if r.starts_at <= now < r.ends_at]
        with self._lock:
            live = {r.id for r in rows}
            for gone in [i for i in self._kept if i not in live]:
                del self._kept[gone]
        return [spec for r in rows if (spec := self.spec(r, now)) is not None]


def matches_filter(silence_matchers: Iterable[str], filters: Iterable[Matcher]) -> bool:
    """Whether a silence passes a query's filters, as ``amtool silence query`` does: each filter must
    hold for the value the silence matches its label with (``run=hero-a`` finds the silences with a
    ``run`` matcher for ``hero-a``; ``alertname=~"progress_.*"`` those for any progress rule)."""
    values: dict[str, str] = {}
    for text in silence_matchers:
        try:
            name, _, value = Matcher.split(text)  # the value is what counts: nothing to compile
        except ValueError:
            continue
        values[name] = value
    return all(f.matches(values) for f in filters)
