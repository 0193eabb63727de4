"""Times people type (API query parameters, report periods): ISO 8601, bounded to 2000-2100.

The one place for the bound and the ISO parsing behind it: the API's ``epoch_seconds`` and the report
periods (``monitor.reports.period``) both use it. The bound keeps every date computed from a typed time
(a week's Monday, the week before, a day's midnight) inside what ``datetime`` can hold, so a request for
the week of 9999-12-31 is a clear 4xx instead of an overflow.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, tzinfo

EARLIEST, LATEST = 946_684_800.0, 4_102_444_800.0  # 2000-01-01 and 2100-01-01, UTC


class NotATime(ValueError):
    """The text is no ISO 8601 date or time at all (callers say which forms they take)."""


def bounded(t: float, shown: object) -> float:
    """``t`` when it is a finite time between 2000 and 2100; else ``ValueError`` quoting ``shown``."""
    if not math.isfinite(t) or not EARLIEST <= t <= LATEST:
        raise ValueError(f"a time between 2000-01-01 and 2100-01-01, please (got {str(shown)[:40]!r})")
    return t


def parse_iso(text: str, default_tz: tzinfo = UTC) -> float:
    """Epoch seconds of an ISO 8601 date or time (``Z`` for UTC); without an offset it is in
    ``default_tz``. ``NotATime`` when it is not ISO 8601, ``ValueError`` when outside 2000-2100."""
    text = text.strip()
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as e:
        raise NotATime(f"{text[:60]!r} is not ISO 8601") from e
    try:
        t = (dt if dt.tzinfo else dt.replace(tzinfo=default_tz)).timestamp()
    except (OverflowError, ValueError):  # year 1 or 9999 moved by a zone's offset
        t = math.inf
    return bounded(t, text)
