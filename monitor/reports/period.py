"""Report periods: the last full week, ``--since 7d``, ``--from DATE --to DATE``, a week picker's week.

Weeks start on Monday 00:00 in the report's time zone (a day boundary of any zone is a quarter hour, the
goodput ledger's slot). Dates are ISO: ``2026-11-23`` or ``2026-11-23T09:00``; a date without a zone
is in the report's zone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from alerts.durations import parse_duration
from monitor import times
from monitor.reports.model import Period

WEEK = 7 * 86400.0
MAX_SPAN = 92 * 86400.0  # a quarter: longer periods are refused (the ledger sums stay quick)


class PeriodError(ValueError):
    """A period that cannot be reported: the message says why, for a 4xx or a CLI error."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise PeriodError(
            f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Berlin)"
        ) from e


def _fmt(t: float, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(t, tz).strftime("%Y-%m-%d %H:%M")


def make(start: float, end: float, tz: ZoneInfo, what: str | None = None) -> Period:
    if end <= start:
        raise PeriodError("the period must end after it starts")
    if end - start > MAX_SPAN:
        raise PeriodError("a report covers at most 92 days")
    label = what or f"{_fmt(start, tz)} to {_fmt(end, tz)} {tz.key}"
    return Period(start=start, end=end, label=label)


def week_of(t: float, tz: ZoneInfo) -> Period:
    """The week (Monday 00:00 to Monday 00:00 in ``tz``) that holds ``t``."""
    d = datetime.fromtimestamp(t, tz)
    monday = datetime(d.year, d.month, d.day, tzinfo=tz) - timedelta(days=d.weekday())
    start = monday.timestamp()
    end = (monday + timedelta(days=7)).timestamp()
    return make(start, end, tz, f"week of {monday:%Y-%m-%d} (Mon 00:00 {tz.key})")


def last_full_week(now: float, tz: ZoneInfo) -> Period:
    return week_of(week_of(now, tz).start - 1, tz)


def _midnight(d: datetime) -> bool:
    return (d.hour, d.minute, d.second, d.microsecond) == (0, 0, 0, 0)


def previous(p: Period, tz: ZoneInfo) -> Period:
    """The period just before ``p``. Whole days of ``tz`` (a week, a day: midnight to midnight) step
    back on the calendar, so across a daylight-saving change the week before is still Monday 00:00 to
    Monday 00:00 (167 or 169 hours long); any other period steps back by its length in seconds."""
    a, b = datetime.fromtimestamp(p.start, tz), datetime.fromtimestamp(p.end, tz)
    if not (_midnight(a) and _midnight(b)):
        return make(p.start - (p.end - p.start), p.start, tz)
    days = (b.date() - a.date()).days
    if days == 7 and a.weekday() == 0:
        return week_of(p.start - 1, tz)
    first = a.date() - timedelta(days=days)
    return make(datetime(first.year, first.month, first.day, tzinfo=tz).timestamp(), p.start, tz)


def parse_time(text: str, tz: ZoneInfo) -> float:
    """A typed date or time (in ``tz`` without an offset), between 2000 and 2100 like every time the
    API takes (``monitor.times``): the weeks and days computed from it stay within what dates can hold."""
    try:
        return times.parse_iso(text, tz)
    except times.NotATime as e:
        raise PeriodError(f"{text!r} is not a date (use 2026-11-23 or 2026-11-23T09:00)") from e
    except ValueError as e:
        raise PeriodError(str(e)) from e


def choose(
    now: float,
    tz: ZoneInfo,
    *,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    week: str | None = None,
) -> Period:
    """The period asked for: ``week`` (any date in it), ``start``/``end``, ``since`` (up to now), or by
    default the last full week."""
    if sum(x is not None for x in (since, week)) + (start is not None or end is not None) > 1:
        raise PeriodError("give one of: since, from/to, week")
    if week is not None:
        return week_of(parse_time(week, tz), tz)
    if since is not None:
        try:
            span = parse_duration(since)
        except ValueError as e:
            raise PeriodError(f"since: {e}") from e
        return make(now - span, now, tz)
    if start is not None or end is not None:
        if start is None:
            raise PeriodError("from is missing (to alone is not a period)")
        t0 = parse_time(start, tz)
        t1 = parse_time(end, tz) if end is not None else now
        return make(t0, t1, tz)
    return last_full_week(now, tz)
