"""The CLI starts light (issue 40): `herowatch --help` and `herowatch emit` (called once a step by some
jobs) import none of the heavy packages, and `check-config` / `rules test` none of the server's. What
a user notices is the wait; what a test can check without timing is what got imported, in a fresh
process as the `herowatch` command runs. The times themselves are bench/cli_startup.py's."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from monitor.cli.lazy import load
from monitor.cli.main import LAZY

ROOT = Path(__file__).resolve().parents[1]
SERVER_SIDE = ["wandb", "matplotlib", "sqlalchemy", "fastapi", "starlette", "uvicorn", "alembic"]
SERVER_SIDE += ["apscheduler"]
LIGHT = [*SERVER_SIDE, "httpx", "numpy", "slack_sdk", "yaml", "jinja2"]

# Runs the command as the `herowatch` entry point does, then writes which modules it imported.
RUNNER = """
import json, sys
from monitor.cli.main import app
try:
    app(sys.argv[1:], prog_name="herowatch")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(sys.argv[0] + ".modules", "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def herowatch(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, set[str], str]:
    script = tmp_path / "run_herowatch.py"
    script.write_text(RUNNER)
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    seen = json.loads(Path(f"{script}.modules").read_text())
    return seen["code"], {m.split(".")[0] for m in seen["modules"]}, done.stdout + done.stderr


class Ingest(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        length = int(self.headers["Content-Length"])
        Ingest.bodies.append(
            {
                "path": self.path,
                "auth": self.headers["Authorization"],
                "body": json.loads(self.rfile.read(length)),
            }
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"accepted": 1}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ingest():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ingest)
    Ingest.bodies = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_top_listing_shows_each_lazy_commands_own_first_paragraph():
    for entry in LAZY:
        command = load(entry)
        first = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].replace("\n", " ")
        assert entry.summary == first.strip(), f"herowatch --help would list {entry.name} with a stale line"


def test_help_imports_no_heavy_package_and_lists_every_command(tmp_path):
    code, modules, out = herowatch(tmp_path, "--help")
    assert code == 0, out
    assert "emit" in out and "check-config" in out and "replay" in out
    assert not modules & set(LIGHT), f"--help imported {sorted(modules & set(LIGHT))}"


def test_emit_sends_the_sample_without_importing_a_heavy_package(tmp_path, ingest):
    code, modules, out = herowatch(
        tmp_path,
        "emit",
        "log",
        "--run",
        "job-1",
        "--url",
        ingest,
        "--step",
        "7",
        "train/loss=2.5",
        env={"HEROWATCH_INGEST_TOKEN": "tok-123"},
    )
    assert code == 0, out
    assert Ingest.bodies == [
        {
            "path": "/api/ingest",
            "auth": "Bearer tok-123",
            "body": {
                "run": "job-1",
                "samples": [
                    {
                        "t": Ingest.bodies[0]["body"]["samples"][0]["t"],
                        "step": 7,
                        "metrics": {"train/loss": 2.5},
                    }
                ],
            },
        }
    ]
    assert not modules & set(LIGHT), f"emit imported {sorted(modules & set(LIGHT))}"


def test_emit_help_imports_no_heavy_package(tmp_path):
    code, modules, out = herowatch(tmp_path, "emit", "--help")
    assert code == 0 and "herowatch emit log" in out, out
    assert not modules & set(LIGHT), f"emit --help imported {sorted(modules & set(LIGHT))}"


def test_check_config_and_rules_test_import_nothing_of_the_server(tmp_path):
    config = tmp_path / "herowatch.yaml"
    config.write_text((ROOT / "monitor/config/example.yaml").read_text())
    code, modules, out = herowatch(tmp_path, "check-config", str(config))
    assert code == 0 and "OK" in out, out
    assert not modules & set(SERVER_SIDE), f"check-config imported {sorted(modules & set(SERVER_SIDE))}"

    code, modules, out = herowatch(tmp_path, "rules", "test", "docs/examples/rules_test.yaml")
    assert code == 0 and "SUCCESS" in out, out
    assert not modules & set(SERVER_SIDE), f"rules test imported {sorted(modules & set(SERVER_SIDE))}"


def test_a_bad_config_still_says_where(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("watch: 3\n")
    code, _, out = herowatch(tmp_path, "check-config", str(config))
    assert code == 2 and "bad.yaml" in out and "watch" in out, out
