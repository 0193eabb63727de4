"""The garbage collector for a long-running monitor: full collections that do not stop the process
for seconds.

The engine holds every run's rule state (windows, baselines, chart tails): hundreds of thousands of
objects per thousand runs, nearly all of them alive for as long as their run. CPython's full (gen-2)
collection examines every one of them each time, so at 10,000 runs a full collection stops every
thread, polls and API included, for a second or more, several times a minute.

The policy: after every collection, young ones included, its survivors are frozen (``gc.freeze``:
out of later collections' way; they are still freed by reference counting when they die). Most of
what outlives a young collection lives for minutes or for the run (rule state, chart tails, a run's
stats until its next poll): left in the middle generation, each middle collection examined it again,
~0.7 s a pause at 10,000 runs (and a full collection, never reached in a steady state of minutes,
would have examined all of it). Frozen, each object is examined by one young collection at most, and
the middle and full ones find next to nothing. The price: a reference cycle alive at a young
collection that becomes garbage afterwards stays until the next thaw: every ``thaw_every`` seconds
(``full_collection``) the frozen objects are thawed, collected once and frozen again, so such garbage
is bounded by what ``thaw_every`` makes (measured at 3,000 runs: the thaw after a minute found 54
objects; docs/deploy.md "Sizing"). At 10,000 runs in real time (bench/scale.py, a loaded box) the
pauses went from ~26 s of 120 s (young, middle and full) to ~13 s (young ones only).
``pauses`` and ``seconds`` count the pauses for /metrics.

The young generation is collected every 200,000 net allocations (``THRESHOLDS[0]``) rather than
CPython's 700: the writer makes and drops many short-lived containers a poll (rows, snapshots,
coverage, a run's stats replacing the last poll's), and a young collection examines whatever of them
is alive at that moment. The count is allocations less deallocations, so the more a poll frees of what
the one before made, the fewer collections: in the real-time service at 3,000 runs (bench/scale.py,
60 s) 15 young collections a minute at 50,000 (2.0 s of pauses), one at 200,000 (0.4 s). Measured
before, at 1,000 runs (bench/scale_memory.py): 700 -> 50,000 took the collector's CPU from 0.19-0.28
to 0.11 ms a run and poll.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

THAW_EVERY = 6 * 3600.0  # seconds between full collections of everything (frozen objects included)
THRESHOLDS = (200_000, 20, 10)  # gc.set_threshold while installed: allocations a young collection, ...


class GcPolicy:
    def __init__(self, thaw_every: float = THAW_EVERY, thresholds: tuple[int, ...] = THRESHOLDS) -> None:
        self.thaw_every = thaw_every
        self.thresholds = thresholds
        self._before: tuple[int, ...] | None = None  # the thresholds to restore at uninstall
        self.pauses = [0, 0, 0]  # collections per generation since installed
        self.seconds = [0.0, 0.0, 0.0]  # their total pause
        self._t0 = 0.0
        self._installed = False
        self._lock = threading.Lock()

    def install(self) -> None:
        with self._lock:
            if not self._installed:
                gc.callbacks.append(self._on_gc)
                self._before = gc.get_threshold()
                gc.set_threshold(*self.thresholds)
                self._installed = True

    def uninstall(self) -> None:
        with self._lock:
            if self._installed:
                gc.callbacks.remove(self._on_gc)
                if self._before is not None:
                    gc.set_threshold(*self._before)
                self._installed = False
        gc.unfreeze()

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        generation = info["generation"]
        self.pauses[generation] += 1
        self.seconds[generation] += time.perf_counter() - self._t0
        # what survived a collection is long-lived, mostly: out of the next ones' way (cyclic garbage
        # among it waits for ``full_collection``)
        gc.freeze()  # O(1): the generations' lists are moved (counting them is not: not here)

    def full_collection(self) -> int:
        """Thaw, collect everything once (a cycle that died while frozen included), freeze again;
        returns the objects collected. The scheduler runs it every ``thaw_every`` seconds."""
        gc.unfreeze()
        found = gc.collect()  # the callback freezes the survivors
        return found
