"""Repeated log lines are counted, not repeated: a flood of one message (a socket error on every
``accept()``, a source failing on every poll) cannot grow the log without bound.

Per logger, level and message template, at most ``BURST`` records are written in a window of ``WINDOW``
seconds; the rest are counted, and the first record after the window says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time

BURST = 10
WINDOW = 60.0
MAX_KEYS = 10_000


class RepeatLimit(logging.Filter):
    def __init__(self, burst: int = BURST, window: float = WINDOW, clock=time.monotonic) -> None:  # noqa: ANN001
        super().__init__()
        self.burst, self.window, self.clock = burst, window, clock
        self._seen: dict[tuple, list] = {}  # key -> [window start, written, left out]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg)[:200])
        now = self.clock()
        with self._lock:
            st = self._seen.get(key)
            if st is None or now - st[0] >= self.window:
                left_out = st[2] if st is not None else 0
                if len(self._seen) >= MAX_KEYS:
                    self._seen.clear()
                self._seen[key] = [now, 1, 0]
                if left_out:
                    record.msg = (
                        f"{record.msg} [{left_out} more like this in the last {self.window:g}s not written]"
                    )
                return True
            if st[1] < self.burst:
                st[1] += 1
                return True
            st[2] += 1
            return False
