"""Report periods at the edges: dates outside 2000-2100 are a clear 4xx on the API and the page (not a
500 from an overflow), and across daylight-saving changes "the week before" (the page's link, the
report's period before) is the calendar week before, Monday 00:00 to Monday 00:00 in the report's zone."""

from __future__ import annotations

import re
from datetime import datetime
from html import unescape
from zoneinfo import ZoneInfo

import pytest

from alerts.clock import ManualClock
from monitor.config.cadence import parse_every
from monitor.reports.cadence import latest_fire, period_of
from monitor.reports.period import previous
from tests import report_week as rw
from tests.dashboard.support import build, client

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str) -> float:
    """A wall-clock time in Berlin."""
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN).timestamp()


@pytest.fixture
def api(db_url):
    config = "watch:\n  - {name: hero, sim: {run: hero-1}}\n"
    service = build(db_url, ManualClock(rw.WEEK0 + 8 * rw.DAY), config)
    yield client(service)
    service.db.dispose()


@pytest.mark.parametrize(
    "params",
    [
        {"week": "9999-12-31"},
        {"week": "0001-01-01"},
        {"from": "0001-01-01"},
        {"from": "0001-01-01", "tz": "Europe/Berlin"},
        {"from": "2026-11-23", "to": "9999-12-31"},
        {"week": "9999-12-31T23:59:59+14:00"},
    ],
)
def test_dates_out_of_range_are_a_clear_422_on_the_api(api, params):
    r = api.get("/api/report", params=params)
    assert r.status_code == 422, (params, r.status_code, r.text)
    assert "between 2000-01-01 and 2100-01-01" in r.json()["error"], r.text


def test_a_week_out_of_range_is_a_clear_422_on_the_page(api):
    r = api.get("/reports", params={"week": "9999-12-31"})
    assert r.status_code == 422, r.text
    assert "between 2000-01-01 and 2100-01-01" in unescape(r.text)
    edge = api.get("/reports", params={"week": "2099-12-31"})
    assert edge.status_code == 200 and 'name="week" value="2099-12-28"' in edge.text, "the last week is fine"


def week_before_link(api, week: str) -> str:
    page = api.get("/reports", params={"week": week, "tz": "Europe/Berlin"})
    assert page.status_code == 200, page.text
    (href,) = re.findall(r'<a href="([^"]+)" rel="prev">', page.text)
    return unescape(href)


@pytest.mark.parametrize(
    ("week", "before"),
    [
        ("2026-03-30", "2026-03-23"),  # the week after the spring change: its week before has 167 h
        ("2026-03-23", "2026-03-16"),
        ("2026-10-26", "2026-10-19"),  # after the autumn change: its week before has 169 h
        ("2026-10-19", "2026-10-12"),
    ],
)
def test_the_week_before_link_is_the_calendar_week_before_across_dst(api, week, before):
    shown = api.get(week_before_link(api, week))
    assert shown.status_code == 200
    assert f'name="week" value="{before}"' in shown.text, "the week before, none skipped"


@pytest.mark.parametrize(
    ("week", "start", "end"),
    [
        ("2026-03-30", "2026-03-23T00:00", "2026-03-30T00:00"),
        ("2026-03-23", "2026-03-16T00:00", "2026-03-23T00:00"),
        ("2026-10-26", "2026-10-19T00:00", "2026-10-26T00:00"),
        ("2026-10-19", "2026-10-12T00:00", "2026-10-19T00:00"),
    ],
)
def test_the_reports_period_before_is_monday_to_monday_across_dst(api, week, start, end):
    body = api.get("/api/report", params={"week": week, "tz": "Europe/Berlin"}).json()
    assert (body["previous"]["start"], body["previous"]["end"]) == (at(start), at(end))
    assert body["period"]["start"] == at(end), "the week before ends where the week begins"


@pytest.mark.parametrize(
    ("fire", "day", "before"),
    [
        ("2026-03-30T09:00", "2026-03-29", "2026-03-28"),  # a day of 23 h
        ("2026-03-31T09:00", "2026-03-30", "2026-03-29"),
        ("2026-10-26T09:00", "2026-10-25", "2026-10-24"),  # a day of 25 h
        ("2026-10-27T09:00", "2026-10-26", "2026-10-25"),
    ],
)
def test_a_daily_schedules_day_and_the_day_before_are_calendar_days_across_dst(fire, day, before):
    every = parse_every("09:00")
    p = period_of(every, BERLIN, latest_fire(every, BERLIN, at(fire)))
    assert (p.start, p.end) == (at(f"{day}T00:00"), at(f"{fire[:10]}T00:00"))
    prev = previous(p, BERLIN)
    assert (prev.start, prev.end) == (at(f"{before}T00:00"), at(f"{day}T00:00"))
