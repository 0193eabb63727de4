"""The alert history: `GET /api/alerts?from=&to=&rule=&run=&state=` pages through every alert active in
a time range (Link rel=next and X-Next-Cursor, no entry twice or missed), bad times are a 400 that says
the forms (tests/dashboard/test_alert_history_page.py: the page in Chromium)."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.dashboard.support import DASHBOARD_CONFIG, build, client
from tests.helpers import tick

T0 = 1_780_000_000.0


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scene(db_url, clock):  # noqa: ANN001, ANN201
    """An hour in: hero-a's stall fired and resolved; hero-b's spikes came and went, its restart fires."""
    service = build(db_url, clock, DASHBOARD_CONFIG)
    tick(service, clock, 60 * 60, every=60)
    return client(service)


def test_pages_through_the_history_without_repeats_or_gaps(db_url, clock):
    api = scene(db_url, clock)
    every = api.get("/api/alerts", params={"from": "2h", "limit": 100}).json()
    rules = sorted(a["rule"] for a in every)
    assert rules == ["grad_norm_spike", "loss_jump", "progress_stalled", "run_restarted"], rules
    starts = [a["active_at"] for a in every]
    assert starts == sorted(starts, reverse=True), "newest start first"
    seen, url, params, pages = [], "/api/alerts", {"from": "2h", "limit": 3}, 0
    while url:
        r = api.get(url, params=params)
        assert r.status_code == 200, r.text
        seen += [a["id"] for a in r.json()]
        pages += 1
        link = r.headers.get("link")
        if link:
            assert r.headers["x-next-cursor"] in link and 'rel="next"' in link
            url, params = link[1 : link.index(">")], None
        else:
            url = ""
    assert pages == 2 and seen == [a["id"] for a in every], "each alert once, in order"


def test_filters_by_time_rule_run_and_state(db_url, clock):
    api = scene(db_url, clock)

    def rules(**params) -> list[str]:  # noqa: ANN003
        r = api.get("/api/alerts", params=params)
        assert r.status_code == 200, r.text
        return sorted(a["rule"] for a in r.json())

    [stall] = api.get("/api/alerts", params={"from": "2h", "rule": "progress_stalled"}).json()
    assert stall["state"] == "resolved" and "within the limit" in stall["resolved_reason"]
    ended = stall["resolved_at"]
    after = datetime.fromisoformat(ended.replace("Z", "+00:00")).timestamp() + 60
    assert "progress_stalled" not in rules(**{"from": iso(after)}), "it ended before the range"
    assert "progress_stalled" in rules(**{"from": iso(after - 120), "to": iso(after)})
    assert "progress_stalled" not in rules(**{"from": str(T0 - 3600), "to": str(T0 + 60)}), "not yet begun"
    assert rules(**{"from": "2h", "run": "hero-a"}) == ["progress_stalled"]
    assert rules(**{"from": "2h", "state": "firing"}) == ["run_restarted"]
    assert rules(**{"from": "2h", "rule": "loss_jump,grad_norm_spike"}) == ["grad_norm_spike", "loss_jump"]


def test_bad_times_and_cursors_are_a_clear_400(db_url, clock):
    api = scene(db_url, clock)
    r = api.get("/api/alerts", params={"from": "yesterday"})
    assert r.status_code == 400 and "ISO 8601" in r.text and "from" in r.text
    r = api.get("/api/alerts", params={"from": "2026-05-28T20:00"})
    assert r.status_code == 400 and "time zone" in r.text
    r = api.get("/api/alerts", params={"from": "1h", "to": "2h"})
    assert r.status_code == 400 and "before from" in r.text
    r = api.get("/api/alerts", params={"cursor": "1' or 1=1"})
    assert r.status_code == 400 and "cursor" in r.text


def test_out_of_range_times_and_cursors_are_a_400_not_a_500(db_url, clock):
    api = scene(db_url, clock)
    for params in (
        {"from": "9" * 40},
        {"from": "-5"},
        {"to": "0001-01-01T00:00Z"},
        {"from": "9999-12-31T00:00Z"},
        {"from": "99999999999d"},
        {"from": "nan"},
        {"cursor": "999999999999_1"},
        {"cursor": "1780000000_999999999999"},
    ):
        r = api.get("/api/alerts", params=params)
        assert r.status_code == 400, (params, r.status_code, r.text)
