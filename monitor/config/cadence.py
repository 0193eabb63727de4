"""When a scheduled report is sent: ``"mon 09:00"`` (weekly, on that day at that time) or ``"09:00"``
(daily). Parsed once here, at the config boundary; ``monitor.reports.cadence`` computes the times."""

from __future__ import annotations

import re
from dataclasses import dataclass

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_EVERY = re.compile(r"^(?:([a-z]{3})[a-z]*\s+)?([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True)
class Every:
    weekday: int | None  # 0 = Monday; None: every day
    hour: int
    minute: int


def parse_every(text: str) -> Every:
    m = _EVERY.match(text.strip().lower())
    if not m or (m.group(1) and m.group(1) not in DAYS):
        raise ValueError(f'{text!r}: use "mon 09:00" (weekly, a day and a 24-hour time) or "09:00" (daily)')
    day = DAYS.index(m.group(1)) if m.group(1) else None
    return Every(day, int(m.group(2)), int(m.group(3)))
