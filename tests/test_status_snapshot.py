"""The status readers answer from a snapshot with an ETag: what a client that sends it back gets.

A conditional GET (``If-None-Match``) gets ``304`` and no body while nothing has changed, and the new
body as soon as a poll, an acknowledgement or a silence changed what it shows; filters keep working,
each with its own ETag; protected reads stay protected; a write by another process (a replica, a
shell) shows within one poll interval.
"""

from __future__ import annotations

import re

from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Silence
from tests.dashboard.support import bearer, build, client
from tests.helpers import sim_id, tick

A, B = sim_id("hero-a"), sim_id("hero-b")


def steps(response) -> dict[str, int]:  # noqa: ANN001
    return {r["id"]: r["step"] for r in response.json()}


def test_unchanged_runs_get_304_and_a_poll_brings_the_new_body(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 10 * 60)
    api = client(service)
    first = api.get("/api/runs")
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag and set(steps(first)) == {A, B}

    same = api.get("/api/runs", headers={"If-None-Match": etag})
    assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == etag
    assert api.get("/api/runs", headers={"If-None-Match": f'"other", {etag}'}).status_code == 304

    tick(service, clock, 120)  # two polls: hero-b made progress
    changed = api.get("/api/runs", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert steps(changed)[B] > steps(first)[B]
    assert changed.json() == api.get("/api/runs").json()
    service.stop()


def test_an_ack_and_a_silence_show_at_once_to_a_conditional_get(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)  # hero-a's stall alert fires
    api = client(service)
    firing = api.get("/api/alerts", params={"state": "firing"})
    (alert,) = firing.json()
    assert alert["acknowledged"] is False
    etag = firing.headers["etag"]
    assert (
        api.get("/api/alerts", params={"state": "firing"}, headers={"If-None-Match": etag}).status_code == 304
    )

    api.post(f"/api/alerts/{alert['id']}/ack", json={"by": "alice"}, headers=bearer()).raise_for_status()
    acked = api.get("/api/alerts", params={"state": "firing"}, headers={"If-None-Match": etag})
    assert acked.status_code == 200 and acked.json()[0]["acked_by"] == "automation (alice)"

    runs = api.get("/api/runs")
    made = api.post(
        "/api/silences",
        json={"matchers": [f"run={A}"], "duration": "2h", "created_by": "alice", "comment": "known"},
        headers=bearer(),
    )
    assert made.status_code == 201, made.text
    muted = api.get("/api/runs", headers={"If-None-Match": runs.headers["etag"]})
    assert muted.status_code == 200
    run = {r["id"]: r for r in muted.json()}[A]
    assert run["silenced_alerts"] == 1 and run["problem"].endswith("silenced")
    resolved = api.get("/api/alerts", params={"state": "resolved"})  # the history: read from the database
    assert resolved.status_code == 200 and resolved.json() == [] and resolved.headers["etag"]
    service.stop()


def test_filters_keep_working_each_with_its_own_etag(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)
    api = client(service)
    plain = api.get("/api/runs")
    assert [r["id"] for r in plain.json()] == [A, B]
    urgent = api.get(
        "/api/runs", params={"order": "urgency"}, headers={"If-None-Match": plain.headers["etag"]}
    )
    assert urgent.status_code == 200 and [r["id"] for r in urgent.json()] == [A, B]
    assert urgent.headers["etag"] != plain.headers["etag"]
    kind = plain.json()[0]["kind"]
    mine = api.get("/api/runs", params={"kind": kind})
    assert {r["id"] for r in mine.json()} == {A, B}
    none = api.get("/api/runs", params={"kind": "rl"} if kind != "rl" else {"kind": "sft"})
    assert none.json() == [] and none.headers["etag"] != mine.headers["etag"]
    again = api.get("/api/runs", params={"kind": kind}, headers={"If-None-Match": mine.headers["etag"]})
    assert again.status_code == 304
    assert api.get("/api/runs", params={"kind": "Bad!"}).status_code == 422

    def alert_ids(**params) -> list[int]:  # noqa: ANN003
        return [a["id"] for a in api.get("/api/alerts", params=params).json()]

    (aid,) = alert_ids(state="active")
    assert alert_ids(state="firing", severity="critical", run="hero-a") == [aid] == alert_ids(run=A)
    assert alert_ids(state="pending") == [] and alert_ids(state="active", run="hero-b") == []
    assert alert_ids(silenced=True) == [] and alert_ids(state="active", acknowledged=True) == []
    assert alert_ids(state="active", limit=1) == [aid] and alert_ids() == [aid]
    service.stop()


def test_protected_reads_stay_protected_with_an_etag(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, protect_reads=True)
    tick(service, clock, 5 * 60)
    api = client(service)
    ok = api.get("/api/runs", headers=bearer())
    assert ok.status_code == 200
    etag = ok.headers["etag"]
    assert api.get("/api/runs", headers={**bearer(), "If-None-Match": etag}).status_code == 304
    stranger = api.get("/api/runs", headers={"If-None-Match": etag})
    assert stranger.status_code == 401 and "etag" not in stranger.headers
    assert api.get("/fragments/overview", headers={"If-None-Match": etag}).status_code == 401
    assert api.get("/fragments/overview/changes", params={"since": "0" * 24}).status_code == 401
    service.stop()


def test_a_write_by_another_process_shows_within_one_poll_interval(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)
    api = client(service)
    assert api.get("/api/alerts", params={"state": "firing"}).json()[0]["silenced"] is False
    other = make_engine(db_url)  # another replica, or `herowatch` in a shell: not this process's engine
    with make_sessionmaker(other).begin() as s:
        now = clock.time()
        s.add(
            Silence(
                matchers={"matchers": [f"run={A}"]},
                starts_at=now - 1,
                ends_at=now + 3600,
                created_by="bob",
                comment="",
                created_at=now - 1,
            )
        )
    other.dispose()
    clock.advance(60)  # the shortest poll interval of the watches: no poll happened
    assert api.get("/api/alerts", params={"state": "firing"}).json()[0]["silenced"] is True
    service.stop()


def test_the_overview_shows_every_run_and_its_refresh_gets_304(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 20 * 60)
    api = client(service)
    page = api.get("/")
    assert page.status_code == 200
    html = page.text
    assert re.findall(r'<li class="run [^"]*" data-run="([^"]+)"', html) == [A, B]
    assert len(re.findall(r'data-spark="[A-Za-z0-9+/]{8,}"', html)) == 2, "each run's loss sparkline"
    fragment = api.get("/fragments/overview")
    etag = fragment.headers["etag"]
    (version,) = re.findall(r'data-version="([0-9a-f]{24})"', html)
    assert etag == f'W/"{version}"', "the page's refresh sends the version of the list it shows"
    assert api.get("/fragments/overview", headers={"If-None-Match": etag}).status_code == 304
    assert api.get("/fragments/overview/changes", params={"since": version}).status_code == 304
    assert api.get("/", headers={"If-None-Match": page.headers["etag"]}).status_code == 304
    tick(service, clock, 60)
    fresh = api.get("/fragments/overview", headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["etag"] != etag
    assert fresh.headers["etag"] == 'W/"{}"'.format(*re.findall(r'data-version="(\w+)"', fresh.text))
    service.stop()
