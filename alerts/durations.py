"""Durations, the one way herowatch reads and writes them: ``90s``, ``15m``, ``2h``, ``1d``, ``1h30m``
or a number of seconds in; ``1h30m`` (or its first ``units`` parts: ``1h30m``, ``2d4h``) out.
``Duration`` is the pydantic type for config files and API bodies (``monitor.durations`` re-exports it)."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_SIZES = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def parse_duration(value: object) -> float:
    """Seconds from ``15m``-style text or a number. Raises ValueError with a hint."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30s, 15m or 2h")
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:
            raise ValueError(f"{value!r} is far too long for a duration") from None
        if not math.isfinite(seconds):
            raise ValueError("a duration must be a finite number of seconds")
        if seconds < 0:
            raise ValueError("a duration cannot be negative")
        return seconds
    if not isinstance(value, str):
        raise ValueError("expected a duration such as 30s, 15m or 2h")
    text = value.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"{value!r} is not a duration: use a number of seconds or e.g. 30s, 15m, 2h, 1h30m")
    return total


def format_duration(seconds: float | None, units: int | None = None) -> str:
    """``5400`` -> ``1h30m``; with ``units=2``, ``93784`` -> ``1d2h`` (rounded down to those units).
    Below one second: ``0.5s``; None: ``-``."""
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if not math.isfinite(seconds):
        return "-"
    if seconds < 0:
        return "-" + format_duration(-seconds, units)
    if seconds < 1:
        return "0s" if seconds == 0 else f"{seconds:.2g}s"
    out, rest = [], int(round(seconds))
    for unit, size in _SIZES:
        if rest >= size:
            out.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(out[:units] if units else out)


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
