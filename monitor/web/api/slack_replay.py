"""Replay protection: each signed request is acted on once.

Slack's signature only proves who made a request and that it is less than five minutes old; within
those five minutes anyone who captured it (a proxy log, a TLS-terminating middlebox) could send it
again. So the key of each accepted request (its verified signature) is remembered until the request
could no longer pass the signature check anyway (its own timestamp plus the window): a second request
with the same key is a replay.

Only keys of verified requests are remembered, each until a time that is at most ten minutes ahead (a
finite, checked timestamp plus five minutes), so the memory cannot be filled by anyone without the
signing secret, and every entry leaves by time. It is bounded anyway (``max_entries``): when full, the
entry that expires first is dropped (a log line says so) rather than a valid click refused; only genuine
Slack traffic of more than ``max_entries`` clicks within minutes can reach the bound.

Generic over the key and its expiry (Socket Mode's envelope ids can use it). Per process: with several
replicas behind one Slack URL, route Slack to one of them (docs/security.md). Time is passed in
(``now``), never read here.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading

from alerts.notifiers.slack.interactions import MAX_AGE_SECONDS, Signed

log = logging.getLogger(__name__)


class ReplayMemory:
    def __init__(self, max_entries: int = 20_000) -> None:
        self.max_entries = max_entries
        self._expiry: dict[str, float] = {}  # key -> when it may be forgotten
        self._order: list[tuple[float, str]] = []  # the same, as a heap: the first to expire on top
        self._lock = threading.Lock()
        self.dropped_early = 0  # entries dropped before their time because the memory was full

    def __len__(self) -> int:
        return len(self._expiry)

    def _forget_expired(self, now: float) -> None:
        while self._order and self._order[0][0] < now:  # at its expiry itself still remembered
            _, key = heapq.heappop(self._order)
            del self._expiry[key]

    def first_time(self, key: str, expires_at: float, now: float) -> bool:
        """Remember ``key`` until ``expires_at`` (inclusive): True if it is new, False if it was seen (a
        replay)."""
        if not math.isfinite(expires_at):
            raise ValueError(f"a replay key must expire: {expires_at!r}")
        with self._lock:
            self._forget_expired(now)
            if key in self._expiry:
                return False
            if len(self._expiry) >= self.max_entries:
                _, oldest = heapq.heappop(self._order)
                del self._expiry[oldest]
                self.dropped_early += 1
                if self.dropped_early == 1 or self.dropped_early % 1000 == 0:
                    log.warning(
                        "the replay memory is full (%d requests within minutes): dropped the entry that "
                        "expires first (%d so far)",
                        self.max_entries,
                        self.dropped_early,
                    )
            self._expiry[key] = expires_at
            heapq.heappush(self._order, (expires_at, key))
            return True


class SlackReplays:
    """Slack's signed requests in a :class:`ReplayMemory`: each verified signature, until its timestamp
    is out of the five-minute window (the check compares whole seconds: a second more, to be sure)."""

    def __init__(self, max_entries: int = 20_000) -> None:
        self.memory = ReplayMemory(max_entries)

    def __len__(self) -> int:
        return len(self.memory)

    def first_time(self, signed: Signed, now: float) -> bool:
        return self.memory.first_time(signed.signature, signed.timestamp + MAX_AGE_SECONDS + 1, now)
