"""The overview's refresh asks what changed since the version of the list it shows, and gets only that.

After one run's state changes (its firing alert silenced), the refresh carrying the old version gets
that run's row (and the head, whose counts changed), a fraction of the whole list, and applying it to
the list it had gives exactly the list a full reload shows. A version the server does not remember
(too old, from before a restart, from another replica) gets the whole list; a version that is not one
gets 422 with a message, never a 5xx.
"""

from __future__ import annotations

import html
import re
import secrets

from monitor.storage.models import Run
from monitor.web.dashboard.overview_changes import KEEP
from tests.dashboard.support import bearer, build, client
from tests.helpers import sim_id, tick

FILLERS = 15  # runs that keep training, beside hero-a, whose progress stalls and fires an alert
CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      incidents:
        - {kind: stall, at: 10m, duration: 60m}
""" + "".join(
    f"  - name: run-{i:02d}\n    poll_interval: 60s\n    sim: {{seed: {10 + i}, step_time: {8 + i % 5}s}}\n"
    for i in range(FILLERS)
)
A = sim_id("hero-a")
ROW = re.compile(r'(<li class="run [^"]*" data-run="([^"]*)".*?</li>)\n', re.S)


Listed = tuple[str, list[tuple[str, str]], str]  # head, rows as (run id, HTML) in order, version


def parse(section: str) -> Listed:
    """A live section as (its head, its rows as (run id, HTML) in order, its version)."""
    head = re.search(r'<div class="overview-head">.*?\n</div>', section, re.S).group(0)
    rows = [(html.unescape(rid), row) for row, rid in ROW.findall(section)]
    version = re.search(r'data-version="([0-9a-f]{24})"', section).group(1)
    return head, rows, version


def apply(
    held: tuple[str, list[tuple[str, str]], str], delta: dict
) -> tuple[str, list[tuple[str, str]], str]:
    """What the page's script does with a delta (static/overview_refresh.js), on the parsed list."""
    head, rows, _ = held
    if delta["head"] is not None:
        head = delta["head"]
    by_id = {rid: row for rid, row in rows if rid not in delta["removed"]}
    order = [rid for rid, _ in rows if rid in by_id]
    for r in delta["rows"]:
        if r["id"] not in by_id:
            order.append(r["id"])
        by_id[r["id"]] = r["html"]
    if delta["order"] is not None:
        order = delta["order"]
    assert len(order) == delta["n"]
    return head, [(rid, by_id[rid]) for rid in order], delta["version"]


def changes(api, since: str, **params):  # noqa: ANN001, ANN003, ANN201
    return api.get("/fragments/overview/changes", params={"since": since, **params})


def test_one_run_changed_the_refresh_gets_its_row_and_applying_it_is_a_full_reload(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, CONFIG)
    tick(service, clock, 30 * 60, every=120)  # hero-a's stall alert fires
    api = client(service)
    page = api.get("/")
    held = parse(page.text)
    assert len(held[1]) == FILLERS + 1 and held[1][0][0] == A, "hero-a first: its alert fires"
    full = api.get("/fragments/overview")
    assert parse(full.text) == held
    assert changes(api, held[2]).status_code == 304, "nothing changed: no body"

    made = api.post(
        "/api/silences",
        json={"matchers": [f"run={A}"], "duration": "2h", "created_by": "alice", "comment": "known"},
        headers=bearer(),
    )
    assert made.status_code == 201, made.text
    got = changes(api, held[2])
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    assert got.headers["cache-control"] == "no-store"
    delta = got.json()
    assert [r["id"] for r in delta["rows"]] == [A], "only the run that changed"
    assert "silenced" in delta["rows"][0]["html"] and delta["removed"] == []
    assert delta["head"] is not None, "its alert moved from firing to silenced: the counts changed"

    reload = api.get("/fragments/overview")
    assert reload.headers["etag"] == got.headers["etag"] == f'W/"{delta["version"]}"'
    assert apply(held, delta) == parse(reload.text), "the list a full reload shows"
    assert len(got.content) * 4 < len(reload.content), "a fraction of the whole list"
    assert changes(api, delta["version"]).status_code == 304

    held = parse(reload.text)  # a run crashes: critical, it moves above the silenced hero-a
    with service.sessions.begin() as s:
        s.get(Run, sim_id("run-00")).state = "crashed"
    delta = changes(api, held[2]).json()
    assert [r["id"] for r in delta["rows"]] == [sim_id("run-00")] and delta["order"] is not None
    assert [rid for rid, _ in held[1]][:2] == [A, sim_id("run-00")]
    assert delta["order"][:2] == [sim_id("run-00"), A]
    assert apply(held, delta) == parse(api.get("/fragments/overview").text)
    service.stop()


def test_an_unknown_or_forgotten_version_gets_the_whole_list(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, CONFIG)
    tick(service, clock, 5 * 60)
    api = client(service)
    first = parse(api.get("/fragments/overview").text)[2]

    unknown = changes(api, secrets.token_hex(12))
    assert unknown.status_code == 200 and unknown.headers["content-type"].startswith("text/html")
    assert parse(unknown.text) == parse(api.get("/fragments/overview").text)

    tick(service, clock, 60)
    restarted = client(service)  # a restarted replica (or another one): it remembers no version
    assert changes(restarted, first).headers["content-type"].startswith("text/html")

    for _ in range(KEEP):  # KEEP newer lists: the first is forgotten, memory stays bounded
        tick(service, clock, 60)
        api.get("/fragments/overview")
    assert len(api.app.state.overview_generations) == KEEP
    old = changes(api, first)
    assert old.status_code == 200 and old.headers["content-type"].startswith("text/html")
    assert parse(old.text) == parse(api.get("/fragments/overview").text)
    service.stop()


def test_a_version_that_is_not_one_gets_422_with_a_message(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, CONFIG)
    tick(service, clock, 2 * 60)
    api = client(service)
    for bad in ("", "0", "zz" * 12, "A" * 24, "0" * 25, "../" * 8, "é" * 24, "0" * 30_000):
        got = changes(api, bad)
        assert got.status_code == 422, (bad[:30], got.status_code)
        assert "since" in got.json()["error"] and "24 hexadecimal digits" in got.json()["error"]
        assert len(got.content) < 300, "the message does not echo a long input back"
    assert api.get("/fragments/overview/changes").status_code == 422
    assert changes(api, "0" * 24, kind="x" * 5000).status_code == 200, "a kind no run has: every run"
    service.stop()
