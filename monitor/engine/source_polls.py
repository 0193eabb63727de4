"""What the last poll of each source of each watch said, for the status API (``/readyz``, ``/metrics``).

Kept per watch AND source: two watches on W&B are two entries, so that one watch's failing poll is
not hidden by another's success (nor the other way round). The outage model that pauses rules and
raises ``source_unavailable`` is ``source_health``; this is only what the probes read.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from monitor.sources.base import Throttle


@dataclass(frozen=True)
class LastPoll:
    at: float  # the last poll, failed or not
    ok_at: float | None  # the last poll that succeeded
    error: str | None  # what the last poll failed with (None: it succeeded)
    throttle: Throttle | None = None  # reads the server's quota put off at the last poll


class SourcePolls:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], LastPoll] = {}  # (watch, source kind) -> its last poll

    def polled(
        self, watch: str, kind: str, now: float, error: str | None, throttle: Throttle | None = None
    ) -> None:
        """A poll of the watch's ``kind`` source was written, at ``now``: with ``error``, or fine (and
        with what its server's quota put off)."""
        with self._lock:
            before = self._last.get((watch, kind))
            ok_at = now if not error else (before.ok_at if before is not None else None)
            self._last[(watch, kind)] = LastPoll(now, ok_at, error or None, throttle)

    def forget(self, watch: str) -> None:
        """Another replica polls this watch now: its entries are not this one's to report."""
        with self._lock:
            for key in [k for k in self._last if k[0] == watch]:
                del self._last[key]

    def of(self, watch: str, kind: str) -> LastPoll | None:
        return self._last.get((watch, kind))

    def _of_kind(self, kind: str) -> list[tuple[str, LastPoll]]:
        with self._lock:
            return sorted((w, p) for (w, k), p in self._last.items() if k == kind)

    def throttled(self) -> list[tuple[str, str, Throttle | None]]:
        """(watch, source kind, what its last poll's quota put off or None), for every entry."""
        with self._lock:
            return sorted((w, k, p.throttle) for (w, k), p in self._last.items())

    def throttle_lines(self, kind: str) -> list[str]:
        """One line per watch whose last poll of this kind of source put reads off."""
        return [f"watch {w}: {p.throttle.line()}" for w, p in self._of_kind(kind) if p.throttle is not None]

    def last_poll_at(self, kind: str) -> float | None:
        """When a watch last polled this kind of source (the poll loop runs), whatever it answered."""
        return max((p.at for _, p in self._of_kind(kind)), default=None)

    def last_ok(self, kind: str) -> float | None:
        """When this kind of source last answered a watch's poll."""
        return max((p.ok_at for _, p in self._of_kind(kind) if p.ok_at is not None), default=None)

    def error(self, kind: str) -> str | None:
        """What the watches whose last poll of this kind of source failed were told (None: none failed)."""
        failed = [(w, p.error) for w, p in self._of_kind(kind) if p.error]
        if not failed:
            return None
        if len({e for _, e in failed}) == 1:  # one outage, seen by every watch that failed
            return failed[0][1]
        return "; ".join(f"watch {w}: {e}" for w, e in failed)
