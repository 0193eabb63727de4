"""Login throttling: after ``limit`` wrong tokens from one client address within ``window`` seconds,
further logins from it are refused (429, with Retry-After) until the oldest failure leaves the window.

Bounded memory: at most ``max_clients`` addresses are remembered; when full, the one whose last
failure is oldest is forgotten. The clock is injected (``now``), monotonic by default; behind a
reverse proxy the client address is the one from a trusted ``X-Forwarded-For`` (monitor/web/proxy.py).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable


class LoginThrottle:
    def __init__(
        self,
        limit: int = 10,
        window: float = 600.0,
        max_clients: int = 10_000,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.max_clients, self.now = limit, window, max_clients, now
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client)
        if times is None:
            return deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again, or None if it may now."""
        now = self.now()
        times = self._recent(client, now)
        if len(times) < self.limit:
            return None
        return max(1.0, self.window - (now - times[0]))

    def failed(self, client: str) -> None:
        now = self.now()
        times = self._recent(client, now)
        if client not in self._failures:
            if len(self._failures) >= self.max_clients:
                self._failures.popitem(last=False)
            self._failures[client] = times
        times.append(now)
        self._failures.move_to_end(client)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)
