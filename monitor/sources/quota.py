"""A server's request quota, kept on herowatch's side: at most ``limit`` requests in any ``window``.

W&B limits the requests of an API key (and IP) per minute (200 a minute for new accounts) and answers
429 beyond it, with ``Retry-After`` and ``RateLimit-Remaining`` / ``RateLimit-Reset`` headers. The
``wandb`` client honours those itself by waiting inside the call, so a call herowatch made over the quota
comes back as a time-out with nothing to read; a retry then is one more request over the quota. So
herowatch never sends one: each request takes a place in a sliding-window log of the requests sent
(the same test the server applies, with a margin), and after a 429 (or a call that got no answer in time,
which is what a long ``Retry-After`` looks like through the client) nothing is sent until the pause ends.

``take(n, wait)`` takes ``n`` places now, or waits up to ``wait`` seconds for them; ``reserve`` places
are kept for what must not wait (a watch's listing and its priority runs) when a caller asks with
``keep``. The clock and the sleep are injected (tests and the bench move a simulated one).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

MARGIN = 0.95  # of the quota herowatch uses: the server's window and ours do not start at the same instant


class Quota:
    def __init__(
        self,
        limit: int,
        window: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.quota, self.window = limit, window
        self.limit = max(1, int(limit * MARGIN))
        self.clock, self.sleep = clock, sleep
        self._sent: deque[float] = deque()  # when each request of the last window was taken
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self.taken = 0  # every place ever taken (what a bench counts)
        self.pauses = 0  # 429s and unanswered calls that paused it

    def _expire(self, now: float) -> None:
        while self._sent and self._sent[0] <= now - self.window:
            self._sent.popleft()

    def _wait_for(self, n: int, keep: int, now: float) -> float:
        """Seconds until ``n`` places are free with ``keep`` left over (inf: never, the quota is smaller)."""
        room = self.limit - keep
        if n > room:
            return float("inf")
        over = len(self._sent) + n - room
        free_at = self._sent[over - 1] + self.window if over > 0 else now
        return max(free_at, self._paused_until) - now

    def take(self, n: int = 1, wait: float = 0.0, keep: int = 0) -> bool:
        """Take ``n`` places, waiting up to ``wait`` seconds for them; False (nothing taken) if they are not
        free by then. ``keep``: places that must stay free after this take (reserved for others)."""
        deadline = self.clock() + wait
        while True:
            with self._lock:
                now = self.clock()
                self._expire(now)
                delay = self._wait_for(n, keep, now)
                if delay <= 0:
                    self._sent.extend([now] * n)
                    self.taken += n
                    return True
                if now + delay > deadline:
                    return False
            self.sleep(delay)

    def give_back(self, n: int) -> None:
        """``n`` places taken and not used (a read that stopped early)."""
        with self._lock:
            for _ in range(min(n, len(self._sent))):
                self._sent.pop()
            self.taken -= n

    def pause(self, seconds: float) -> None:
        """The server said "slow down" (a 429), or a call got no answer in time: send nothing for
        ``seconds``."""
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + seconds)
            self.pauses += 1

    def paused_for(self) -> float:
        with self._lock:
            return max(0.0, self._paused_until - self.clock())

    def free(self) -> int:
        """Places free now."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            return 0 if self._paused_until > now else max(0, self.limit - len(self._sent))

    def per_window(self) -> int:
        """Requests in the last window."""
        with self._lock:
            self._expire(self.clock())
            return len(self._sent)
