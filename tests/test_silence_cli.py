"""`herowatch silence` against a real running server (uvicorn on loopback), as on-call uses it at 3 a.m.:
a silence made on the command line is applied by the server at once, the dashboard's silences are the
ones listed, export and import round-trip, and every failure says what to do. Output at 80 columns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from typer.testing import CliRunner

from monitor.cli.main import app
from tests.conftest import REPO
from tests.dashboard.conftest import free_port, live  # noqa: F401 - the running server fixture

runner = CliRunner()


def cli(live, *args: str, token: str | None = "set", url: str | None = None):  # noqa: ANN001, F811
    env = {"COLUMNS": "80", "HEROWATCH_URL": url or live.url, "HEROWATCH_API_TOKEN": None}
    if token is not None:
        env["HEROWATCH_API_TOKEN"] = live.token if token == "set" else token
    return runner.invoke(app, ["silence", *args], env=env)


def firing(live) -> list[dict]:  # noqa: ANN001, F811
    return live.api("/api/alerts", state="firing")


def test_a_silence_added_on_the_command_line_mutes_the_alert_at_once(live):  # noqa: F811
    live.tick(30 * 60)  # hero-a has been stalled for 20 minutes: progress_stalled fires
    (alert,) = [a for a in firing(live) if a["rule"] == "progress_stalled"]
    assert not alert["silenced"]
    r = cli(live, "add", "run=hero-a", 'alertname="progress_stalled"', "-d", "2h", "-c", "rank 17 hung")
    assert r.exit_code == 0, r.output
    assert re.fullmatch(r"silence 1 active until \S+:\d\dZ \(2h\), mutes 1 alert now\n", r.output), r.output
    assert "demo clock" not in r.output, "a real clock is not called simulated"
    (alert,) = [a for a in firing(live) if a["rule"] == "progress_stalled"]
    assert alert["silenced"] and alert["silenced_by"] == 1, "the server applies it without a restart"
    (row,) = live.api("/api/silences")
    # the run's display name, as typed, is stored as its id (what the alert's run label holds)
    assert row["matchers"] == ['run="sim:hero-a/hero-a"', 'alertname="progress_stalled"']
    assert row["comment"] == "rank 17 hung" and row["state"] == "active"


def test_query_lists_the_dashboards_silences_with_filters_and_expire_ends_them(live):  # noqa: F811
    live.tick(5 * 60)
    for matchers in (['run="hero-a"'], ['run="hero-b"', 'alertname=~"loss_.*"'], ['team="pretrain"']):
        live.http.post(
            live.url + "/api/silences",
            headers={"Authorization": f"Bearer {live.token}"},
            json={
                "matchers": matchers,
                "duration": "3h",
                "created_by": "dashboard",
                "comment": "from the UI",
            },
        ).raise_for_status()
    r = cli(live, "query")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert [ln.split()[:2] for ln in lines[::3]] == [["1", "active"], ["2", "active"], ["3", "active"]]
    assert lines[0].endswith(" UTC  by dashboard") and lines[0].split()[2] == "until"
    assert lines[4].strip() == 'run="sim:hero-b/hero-b"  alertname=~"loss_.*"', "whole matchers, on one line"
    assert lines[5].strip() == "# from the UI"
    assert all(len(ln) <= 80 for ln in lines), "fits 80 columns"

    r = cli(live, "query", "-q", "run=hero-b")
    assert r.output.split() == ["2"], r.output
    r = cli(live, "query", "-q", 'alertname=~"loss.*"')
    assert r.output.split() == ["2"], "filters match the silences' matchers, as amtool's do"

    r = cli(live, "expire", "1", "3")
    assert r.exit_code == 0 and r.output.splitlines() == ["silence 1 expired", "silence 3 expired"]
    assert cli(live, "query", "-q").output.split() == ["2"]
    assert cli(live, "query", "-q", "--expired").output.split() == ["1", "3"]
    live.tick(2 * 60)  # the engine reads the expired rows without complaint
    assert {s["state"] for s in live.api("/api/silences")} == {"active", "expired"}


def test_export_and_import_round_trip_and_expired_ones_are_skipped(live, tmp_path: Path):  # noqa: F811
    live.tick(5 * 60)
    assert cli(live, "add", "run=hero-a", "-d", "1h").exit_code == 0
    assert cli(live, "add", 'run=~"hero-(a|b)",alertname="loss_spike"', "-d", "4h").exit_code == 0
    assert cli(live, "expire", "1").exit_code == 0
    exported = cli(live, "query", "-o", "json").output
    exported_all = json.loads(exported) + json.loads(cli(live, "query", "-o", "json", "--expired").output)
    assert [s["matchers"] for s in json.loads(exported)] == [['run=~"hero-(a|b)"', 'alertname="loss_spike"']]
    f = tmp_path / "silences.json"
    f.write_text(json.dumps(exported_all))
    r = cli(live, "import", str(f))
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "imported 1 silence (ids 3); skipped 1 already expired"
    (new,) = [s for s in live.api("/api/silences") if s["id"] == 3]
    assert new["matchers"] == ['run=~"hero-(a|b)"', 'alertname="loss_spike"'] and new["state"] == "active"


def test_every_failure_says_what_to_do(live):  # noqa: F811
    live.tick(60)
    r = cli(live, "add", "run=hero-a", token=None)
    assert r.exit_code == 1 and "needs its API token: export HEROWATCH_API_TOKEN" in r.output
    r = cli(live, "add", "run=hero-a", token="wrong-token")
    assert r.exit_code == 1 and "refused (401)" in r.output
    assert "the API token sent is not this server's" in r.output and "needs the API token" not in r.output
    r = cli(live, "add", "run hero-a")
    assert r.exit_code == 2 and "bad matcher 'run hero-a'" in r.output
    r = cli(live, "add", "run=hero-a", "-d", "soon")
    assert r.exit_code == 2 and r.output.startswith("--duration: ")
    r = cli(live, "expire", "99")
    assert r.exit_code == 2 and "no silence with id 99" in r.output
    other = ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)  # some other web server
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        r = cli(live, "query", url=f"http://127.0.0.1:{other.server_address[1]}")
    finally:
        other.shutdown()
        other.server_close()
    assert r.exit_code == 1 and "answered 404 File not found" in r.output
    assert "is --url the address of herowatch?" in r.output
    assert live.api("/api/silences") == [], "nothing was created by the refused attempts"


def test_a_simulated_clock_is_said_to_be_one(live):  # noqa: F811
    live.tick(60)
    live.clock.speed = 30.0  # as the demo's ScaledClock says of itself
    r = cli(live, "add", "run=hero-a", "-d", "2h")
    assert r.exit_code == 0, r.output
    assert "(herowatch's demo clock runs 30x: simulated time; 4m of real time)" in r.output


def test_no_server_is_a_clear_error_not_a_new_database(tmp_path: Path):
    port = free_port()
    env = {**os.environ, "COLUMNS": "80", "XDG_DATA_HOME": str(tmp_path), "HEROWATCH_API_TOKEN": "x" * 32}
    env.pop("HEROWATCH_URL", None)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "silence",
            "add",
            "run=hero-demo-7b",
            "--url",
            f"http://127.0.0.1:{port}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"no herowatch answers at http://127.0.0.1:{port} (connection refused). Is `herowatch serve` or "
        "`herowatch demo` running there? Give its address with --url or HEROWATCH_URL."
    )
    assert list(tmp_path.rglob("*.db")) == [], "no database file was created"


def test_matchers_split_the_same_way_in_the_dashboard_box_and_on_the_command_line():
    from alerts.silences import split_matchers

    assert split_matchers('{run="a",alertname=~"loss_.*"}') == ['run="a"', 'alertname=~"loss_.*"']
    assert split_matchers('run=~"hero-a{1,3}", team=x\nseverity!="info"') == [
        'run=~"hero-a{1,3}"',
        "team=x",
        'severity!="info"',
    ], "a comma inside quotes belongs to the value"
    assert split_matchers('comment="a \\"quoted, word\\""') == ['comment="a \\"quoted, word\\""']


def test_a_silence_on_a_run_nobody_watches_is_made_with_a_note(live):  # noqa: F811
    live.tick(60)
    r = cli(live, "add", "run=no-such-run", "-d", "1h")
    assert r.exit_code == 0, r.output
    assert "mutes 0 alerts now" in r.output
    assert "note: no watched run is called 'no-such-run'" in " ".join(r.output.split()), r.output
    r = cli(live, "add", "run=hero-a", "-d", "1h")
    assert "note:" not in r.output, "a known run is silenced without a note"
