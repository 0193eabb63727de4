"""`herowatch demo` as a newcomer runs it: a real process, real HTTP, the stall alert printed and resolved."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

from monitor.cli.demo_people import person_name
from tests.conftest import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def ack_as_person(port: int, alert_id: int, token: str) -> str:
    """Acknowledge with the demo person's token, as `herowatch alert ack` does; who the server says."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/alerts/{alert_id}/ack",
        data=json.dumps({"comment": "on it"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())["acked_by"]


def test_demo_prints_the_stall_alert_and_serves_it(tmp_path):
    port = free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path)}
    # the week the demo plays its past into (the demo's 90x clock may cross into the next week)
    last_week = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 7 * 86400))
    # 90x instead of the default 30x keeps the test short; the timeline is the same in simulated time.
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "demo", "--port", str(port), "--speed", "90"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        intro = ""
        while "HEROWATCH_API_TOKEN=" not in intro and time.monotonic() < deadline:
            intro += proc.stderr.readline()
        person_token = re.search(r"HEROWATCH_API_TOKEN=(hwp_\S+)", intro).group(1)
        seen, acked, past = set(), None, set()
        page = ""
        while "Replaying the past" not in page and time.monotonic() < deadline:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
            except OSError:
                time.sleep(0.5)
        shown = page.split("Replaying the past of 3 watches")
        assert len(shown) == 2 and "lastweek" not in shown[0] + shown[1].split("</p>", 1)[1], (
            "while last week is played for /reports, its runs (a week old, 'running') are left out, said"
        )
        while time.monotonic() < deadline and "resolved" not in seen:
            try:
                active = get(f"http://127.0.0.1:{port}/api/alerts?state=active")
                past.update(a["run"] for a in active if "lastweek" in a["run"])
                for a in get(f"http://127.0.0.1:{port}/api/alerts"):
                    if a["rule"] == "progress_stalled" and a["run_title"] == "hero-demo-7b":
                        seen.add(a["state"])
                        if a["state"] == "firing" and acked is None:
                            acked = ack_as_person(port, a["id"], person_token)
            except OSError:
                pass
            time.sleep(0.5)
        assert "resolved" in seen, f"the stall alert did not resolve within 2 minutes: {seen}"
        assert not past, f"last week's runs, half played, showed as firing now: {past}"
        # The resolution is notified after the group's interval: wait until the outbox is empty.
        while time.monotonic() < deadline + 60:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                if "herowatch_outbox_backlog 0.0" in r.read().decode():
                    break
            time.sleep(0.5)
        assert acked == person_name(), f"the demo's ack carries the person's name: {acked}"
        story = get(f"http://127.0.0.1:{port}/api/runs/hero-demo-7b")["timeline"]
        assert any(f"acknowledged by {person_name()}" in (e.get("reason") or "") for e in story), story
        runs = {r["display_name"]: r for r in get(f"http://127.0.0.1:{port}/api/runs")}
        assert runs["hero-demo-healthy"]["health"] == "ok"
        assert (tmp_path / "herowatch" / "demo.db").exists(), "the demo keeps its data in the data folder"
        # /reports: last week's attempts of the demo's runs, played in the background, make a real report
        report: dict = {}
        until = time.monotonic() + 180
        while time.monotonic() < until:
            report = get(f"http://127.0.0.1:{port}/api/report?week={last_week}")
            if len(report["runs"]) == 3 and min(r["watched_hours"] for r in report["runs"]) > 24:
                break
            time.sleep(2)
        names = sorted(r["name"] for r in report["runs"])
        assert names == ["hero-demo-7b-lastweek", "hero-demo-healthy-lastweek", "qwen-7b-grpo-lastweek"], (
            report
        )
        assert min(r["watched_hours"] for r in report["runs"]) > 24 and report["gpu_totals"] is not None
        assert report["pages"] and report["incidents"] and report["recurring"] is not None
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert "FIRING CRITICAL progress_stalled run=hero-demo-7b at " in out, err
    firing = next(line for line in out.splitlines() if "FIRING CRITICAL progress_stalled" in line)
    assert re.search(r" at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(simulated time, 90x\)$", firing), (
        "every printed time says it is simulated, in whole seconds"
    )
    err = intro + err  # the intro was read while the demo ran
    assert "on a clock 90x faster than real time" in " ".join(err.split())
    assert "RESOLVED CRITICAL progress_stalled run=hero-demo-7b" in out
    resolved = out[out.index("RESOLVED CRITICAL progress_stalled") :].splitlines()
    assert resolved[1].startswith("  now: ") and "no new step" not in resolved[1], resolved[:3]
    assert resolved[2].startswith("  was: ") and "no new step for" in resolved[2], "the past, said as past"
    stamped = [line for line in err.splitlines() if re.match(r"\d{4}-\d\d-\d\d \d\d:", line)]
    assert all("(simulated time, 90x)" in line for line in stamped), f"a real-time log line: {stamped}"
    assert "hero-demo-healthy" not in out, "the healthy run raised nothing"
    assert "lastweek" not in out, "last week's pages, played for /reports, are not news: nothing printed"
    assert "Traceback" not in err


def test_the_demos_own_log_lines_carry_its_simulated_time():
    import io
    import logging

    from alerts.clock import ManualClock
    from monitor.cli.demo_text import simulated_log_times

    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    saved = root.handlers[:]
    root.handlers = [handler]
    try:
        simulated_log_times(ManualClock(1_780_000_000.0), 30)
        logging.getLogger("monitor.engine.scheduling").warning("job health is still running")
    finally:
        root.handlers = saved
    line = stream.getvalue().strip()
    assert line.startswith("2026-05-28 20:26:40 UTC (simulated time, 30x) WARNING"), line
