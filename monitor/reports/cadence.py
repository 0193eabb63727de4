"""When a scheduled report is due, and which period it reports.

``"mon 09:00"`` (weekly) reports the last full week (Monday 00:00 to Monday 00:00 in the schedule's
zone) before that time; ``"09:00"`` (daily) the calendar day before. The period due at ``now`` is the
one of the latest send time at or before ``now``: a send time that passed while herowatch was down is
caught up once it is back (only the latest: an older report that was never sent stays unsent).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from monitor.config.cadence import Every
from monitor.reports.model import Period
from monitor.reports.period import last_full_week, make


def latest_fire(every: Every, tz: ZoneInfo, now: float) -> float:
    """The latest send time at or before ``now``."""
    d = datetime.fromtimestamp(now, tz)
    at = d.replace(hour=every.hour, minute=every.minute, second=0, microsecond=0)
    if every.weekday is not None:
        at -= timedelta(days=(at.weekday() - every.weekday) % 7)
    while at.timestamp() > now:  # later today (or this weekday): the one before
        at -= timedelta(days=7 if every.weekday is not None else 1)
    return at.timestamp()  # aware arithmetic is on the wall clock: 09:00 stays 09:00 across DST


def period_of(every: Every, tz: ZoneInfo, fire: float) -> Period:
    if every.weekday is not None:
        return last_full_week(fire, tz)
    d = datetime.fromtimestamp(fire, tz)
    day = datetime(d.year, d.month, d.day, tzinfo=tz)
    before = day - timedelta(days=1)
    start = datetime(before.year, before.month, before.day, tzinfo=tz)
    return make(start.timestamp(), day.timestamp(), tz, f"{start:%a %Y-%m-%d} ({tz.key})")
