"""Where a poll's time goes: wall and CPU time per phase of the cycle (lease, read, sources, persist,
commit), summed over every poll. Cheap enough to stay on (two clock reads per phase); the scale bench
prints it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class PhaseTotal:
    count: int = 0
    wall: float = 0.0  # seconds
    cpu: float = 0.0  # seconds of this thread's CPU time


class Phases:
    def __init__(self) -> None:
        self._totals: dict[str, PhaseTotal] = {}
        self._lock = threading.Lock()

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - w0, time.thread_time() - c0)

    def add(self, name: str, wall: float, cpu: float, count: int = 1) -> None:
        with self._lock:
            t = self._totals.setdefault(name, PhaseTotal())
            t.count += count
            t.wall += wall
            t.cpu += cpu

    def snapshot(self) -> dict[str, PhaseTotal]:
        with self._lock:
            return {k: PhaseTotal(v.count, v.wall, v.cpu) for k, v in self._totals.items()}

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()
