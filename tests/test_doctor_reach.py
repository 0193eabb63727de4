"""`herowatch doctor` never says "ready" when it could not look: every source and receiver given is
reported as ok, a problem, or "could not check" with its cause, never a traceback, never exit 0 then.

Run as the real command (a subprocess: a traceback or a library's log line would show in its output)
against a real Prometheus, the W&B stand-in (real wandb client) and the Slack stand-in (real slack-sdk).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.prometheus_server import PrometheusServer, free_port
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, PROJECT

READY = "ready, everything the watched runs need is there"


def doctor(tmp_path: Path, config: str, env: dict[str, str] | None = None, *args: str):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(config)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "WANDB_", "HEROWATCH_"))}
    base.update(
        COLUMNS="80",
        HEROWATCH_DATABASE_URL=f"sqlite:///{tmp_path / 'hw.db'}",
        WANDB_DIR=str(tmp_path),
        WANDB_CACHE_DIR=str(tmp_path),
        WANDB_CONFIG_DIR=str(tmp_path),
        WANDB_ERROR_REPORTING="false",
    )
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "doctor", "--config", str(cfg), *args],
        cwd=REPO,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out.seconds = time.monotonic() - started  # type: ignore[attr-defined]
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def assert_clean(out) -> None:  # noqa: ANN001
    """Only doctor's own words: no traceback, no library log line, on either stream; 80 columns."""
    both = out.stdout + out.stderr
    assert "Traceback" not in both, both
    for line in out.stderr.splitlines():
        assert line.startswith("doctor: ") or not line.strip(), f"a stray line on stderr: {line!r}"
    for line in out.stdout.splitlines():
        assert len(line) <= 80, line
        assert line.startswith(("ok   ", "warn ", "FAIL ", "???? ", "     ")) or "problem" in line, line


CONSOLE = "receivers:\n  - {name: console, kind: console}\nroute: {receiver: console}\n"


def prometheus_only(url: str, runs: str = "") -> str:
    listed = f", runs: [{runs}]" if runs else ""
    return f"watch:\n  - name: infra\n    prometheus: {{url: '{url}'{listed}}}\n{CONSOLE}"


@pytest.mark.parametrize("runs", ["", "hero-1"])
def test_an_unreachable_prometheus_is_never_ready(tmp_path, runs):
    url = f"http://127.0.0.1:{free_port()}"
    out = doctor(tmp_path, prometheus_only(url, runs))
    assert_clean(out)
    text = flat(out.stdout)
    assert out.returncode == 3, out.stdout
    assert f"???? watch infra: prometheus: could not check (connection refused): Prometheus at {url}" in text
    assert "nothing accepts connections at 127.0.0.1" in text and "network" in text
    assert "1 could not be checked: readiness unknown" in text and READY not in text
    doc = json.loads(doctor(tmp_path, prometheus_only(url, runs), None, "--json").stdout)
    assert doc["ok"] is False and doc["exit"] == 3 and doc["unchecked"] == 1
    [item] = [i for i in doc["items"] if i["subject"] == "watch infra: prometheus"]
    assert item["level"] == "unchecked" and item["cause"] == "connection refused"


def test_a_reachable_prometheus_is_reported_and_its_runs_queried(tmp_path):
    with PrometheusServer(tmp_path / "prom") as prom:
        out = doctor(tmp_path, prometheus_only(prom.url, "hero-1"))
        assert_clean(out)
        text = flat(out.stdout)
        assert "ok watch infra: prometheus: Prometheus at" in text and "answers (version 2." in text, text
        assert "1 run(s) this watch reads: hero-1" in text, text
        # no run to query: said, not passed over in silence
        out = doctor(tmp_path, prometheus_only(prom.url))
        assert "warn watch infra: prometheus:" in out.stdout and "no run matches" in flat(out.stdout)
        assert "fix: list the runs under prometheus.runs" in flat(out.stdout)


def test_wandb_and_prometheus_together_both_are_reported(tmp_path):
    """W&B refuses connections: W&B is "could not check", and Prometheus says its per-run queries were
    not checked (no run is known), not nothing at all."""
    wandb_url = f"http://127.0.0.1:{free_port()}"
    with PrometheusServer(tmp_path / "prom") as prom:
        config = (
            "watch:\n  - name: hero\n"
            f"    wandb: {{entity: {ENTITY}, project: {PROJECT}, base_url: '{wandb_url}', timeout: 3s}}\n"
            f"    prometheus: {{url: '{prom.url}'}}\n{CONSOLE}"
        )
        out = doctor(tmp_path, config, {"WANDB_API_KEY": KEY})
    assert_clean(out)
    text = flat(out.stdout)
    assert out.returncode == 3, out.stdout
    assert f"???? watch hero: wandb: could not check (connection refused): W&B at {wandb_url}" in text
    assert "???? watch hero: prometheus: could not check (no run to check):" in text, text
    assert "its per-run queries were not checked: no run is known, since wandb could not be read" in text
    assert out.seconds < 20, f"doctor took {out.seconds:.0f}s to find W&B unreachable"


def _silent_server() -> tuple[socket.socket, str]:
    """Accepts connections and never answers (a firewall that swallows packets, a hung proxy)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(sock.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def wandb_config(url: str) -> str:
    return (
        f"watch:\n  - name: hero\n    wandb: {{entity: {ENTITY}, project: {PROJECT}, base_url: '{url}', "
        f"timeout: 2s, retries: 0}}\n{CONSOLE}"
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_wandb_names_the_network_and_answers_fast(tmp_path):
    sock, url = _silent_server()
    try:
        out = doctor(tmp_path, wandb_config(url), {"WANDB_API_KEY": KEY})
    finally:
        sock.close()
    assert_clean(out)
    text = flat(out.stdout)
    assert out.returncode == 3, out.stdout
    assert "???? watch hero: wandb: could not check (timeout): W&B at" in text, text
    assert f"fix: no answer from {url.removeprefix('http://')} within 2s: check the network path" in text
    assert "service process is busy" not in text
    # Against the same doctor on a port that refuses at once (its start-up and imports, on a machine
    # that may be loaded): the silent server costs its 2 s timeout, not minutes.
    refused = doctor(tmp_path, wandb_config(f"http://127.0.0.1:{_closed_port()}"), {"WANDB_API_KEY": KEY})
    waited = out.seconds - refused.seconds
    print(f"\nsilent W&B: doctor took {out.seconds:.1f}s, {waited:.1f}s more than against a refusing port")
    assert waited < 10, f"{out.seconds:.0f}s against {refused.seconds:.0f}s"


def test_wandb_without_a_key_and_with_a_refused_key(tmp_path):
    with WandbStandin(KEY, entity=ENTITY) as server:
        server.add_run(PROJECT, "run1", tags=["hero"])
        out = doctor(tmp_path, wandb_config(server.url))
        assert_clean(out)
        assert out.returncode == 3
        assert "could not check (missing secret): WANDB_API_KEY is not set" in flat(out.stdout)
        out = doctor(tmp_path, wandb_config(server.url), {"WANDB_API_KEY": "x" * 40})
        assert_clean(out)
        assert out.returncode == 3
        text = flat(out.stdout)
        assert "could not check (auth): W&B at" in text and "refuses the credentials (HTTP 401)" in text
        assert "check WANDB_API_KEY" in text
        out = doctor(tmp_path, wandb_config(server.url), {"WANDB_API_KEY": KEY})
        assert_clean(out)
        assert "ok   watch hero: wandb: W&B at" in out.stdout and "run1" in out.stdout, out.stdout


def slack_config(url: str) -> str:
    return (
        "watch:\n  - {name: hero-a, sim: {}}\n"
        "receivers:\n  - {name: oncall, kind: slack, channel: C0ALERTS, actions: false, "
        f"base_url: '{url}'}}\n"
        "route: {receiver: oncall}\n"
    )


def test_a_slack_receiver_without_its_token_is_could_not_check_not_a_traceback(tmp_path):
    with SlackStandin() as slack:
        out = doctor(tmp_path, slack_config(slack.api_url))
        assert_clean(out)
        text = flat(out.stdout)
        assert out.returncode == 3, out.stdout + out.stderr
        assert "???? receiver oncall (slack): could not check (missing secret):" in text
        assert "fix: set SLACK_BOT_TOKEN in herowatch's environment" in text
        good = doctor(tmp_path, slack_config(slack.api_url), {"SLACK_BOT_TOKEN": DEFAULT_TOKEN})
        assert "ok   receiver oncall (slack): token of @" in good.stdout, good.stdout
        refused = doctor(tmp_path, slack_config(slack.api_url), {"SLACK_BOT_TOKEN": "xoxb-wrong"})
        assert refused.returncode == 3 and "could not check (auth): Slack refuses" in flat(refused.stdout)


def test_an_unreachable_slack_leaks_no_library_log(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/api/"
    out = doctor(tmp_path, slack_config(url), {"SLACK_BOT_TOKEN": DEFAULT_TOKEN})
    assert_clean(out)
    text = flat(out.stdout)
    assert out.returncode == 3
    assert "???? receiver oncall (slack): could not check (connection refused):" in text, text
    doc = json.loads(doctor(tmp_path, slack_config(url), {"SLACK_BOT_TOKEN": DEFAULT_TOKEN}, "--json").stdout)
    assert doc["exit"] == 3 and isinstance(doc["library_log"], list)


def test_check_config_notes_a_receivers_secret_this_environment_lacks(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(slack_config("http://127.0.0.1:9/api/"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    run = [sys.executable, "-m", "monitor.cli", "check-config", str(cfg)]
    out = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "note: receiver oncall: SLACK_BOT_TOKEN is not set here" in out.stdout
    assert all(len(line) <= 80 for line in out.stdout.splitlines()[1:]), out.stdout
    env["SLACK_BOT_TOKEN"] = DEFAULT_TOKEN
    out = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert "note:" not in out.stdout
