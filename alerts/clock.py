"""Injectable clocks. Everything that needs the time takes a Clock; tests pass a ManualClock."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (UTC)."""
        ...


class SystemClock:
    """The wall clock."""

    def time(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to. For tests and replays."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._t = float(start)
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self._t

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a ManualClock never goes backwards")
        with self._lock:
            self._t += seconds
            return self._t

    def set(self, t: float) -> None:
        with self._lock:
            if t < self._t:
                raise ValueError("a ManualClock never goes backwards")
            self._t = float(t)


class ScaledClock:
    """Wall time sped up by ``speed`` from the moment the clock is made (the demo runs at 30x).

    Starts at the real current time, so timestamps stay plausible.
    """

    def __init__(self, speed: float, base: Clock | None = None) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self._base = base or SystemClock()
        self._origin = self._base.time()
        self.speed = float(speed)

    def time(self) -> float:
        real = self._base.time()
        return self._origin + (real - self._origin) * self.speed


def to_datetime(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def isoformat(t: float | None) -> str | None:
    if t is None:
        return None
    return to_datetime(t).isoformat().replace("+00:00", "Z")
