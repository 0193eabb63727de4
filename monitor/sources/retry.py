"""Retry a call with exponential backoff and jitter: generic, for any source's client calls."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def backoff_delay(
    attempt: int, base: float, max_delay: float, jitter: float, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (0-based): ``base * 2**attempt`` capped at
    ``max_delay``, less a random share of up to ``jitter`` (0..1), so clients do not retry in step."""
    delay = min(max_delay, base * (2**attempt))
    return max(0.0, delay * (1.0 - jitter * rand()))


def retry_call(
    fn: Callable[[], T],
    attempts: int,
    base: float,
    max_delay: float,
    jitter: float,
    is_retryable: Callable[[BaseException], bool],
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
) -> T:
    """Call ``fn`` up to ``attempts`` times (at least once). An exception for which ``is_retryable`` is false,
    or the last attempt's exception, propagates unchanged. ``on_retry(attempt, exc, delay)`` is told of each
    retry before its wait (for logging)."""
    attempts = max(1, attempts)
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:
            if attempt + 1 >= attempts or not is_retryable(exc):
                raise
            delay = backoff_delay(attempt, base, max_delay, jitter)
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
