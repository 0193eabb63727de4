"""Row 7: a 497-byte YAML config with nested aliases ("billion laughs") kept ``check-config`` busy for
more than 60 s at 3.2 GB. Row 11: a second ``herowatch demo`` was refused as "in use" only after
deleting the running demo's database; and the demo printed whatever token was configured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.dashboard.conftest import free_port

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

LAUGHS = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def herowatch(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# The CLI, saying at exit the peak resident memory of its own program (VmHWM): the kernel's ru_maxrss of a
# child also counts the image it was forked from (a test worker of hundreds of MB), kept across exec.
MEASURED = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    with open('/proc/self/status') as f:\n"
    "        sys.stderr.write(next(l for l in f if l.startswith('VmHWM:')))\n"
    "atexit.register(peak)\n"
    "sys.argv = ['herowatch', *sys.argv[1:]]\n"
    "runpy.run_module('monitor.cli', run_name='__main__')\n"
)


def herowatch_measured(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", MEASURED, *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def test_a_billion_laughs_config_is_refused_quickly_with_file_and_line(tmp_path):
    cfg = tmp_path / "laughs.yaml"
    cfg.write_text(LAUGHS + "\nwatch: *i\n")
    assert len(cfg.read_bytes()) < 500
    t0 = time.monotonic()
    done = herowatch_measured("check-config", str(cfg))
    seconds = time.monotonic() - t0
    out = done.stdout + done.stderr
    peak_mb = int(re.search(r"VmHWM:\s+(\d+) kB", out).group(1)) / 1024
    print(f"\nbillion laughs: refused in {seconds:.2f} s, its process peaked at {peak_mb:.0f} MB")
    assert done.returncode == 2, out
    assert re.search(rf"{re.escape(str(cfg))}:\d+: aliases expand this document", out)
    assert seconds < 20 and peak_mb < 500


def test_a_billion_laughs_rule_file_is_refused_too(tmp_path):
    (tmp_path / "rules.yaml").write_text(LAUGHS + "\nrules: *i\n")
    cfg = tmp_path / "hw.yaml"
    cfg.write_text("watch:\n  - name: a\n    sim: {seed: 1}\nrules:\n  files: [rules.yaml]\n")
    done = herowatch("check-config", str(cfg))
    assert done.returncode == 2
    assert re.search(r"rules\.yaml:\d+: aliases expand this document", done.stdout + done.stderr), done.stdout


def test_a_few_aliases_still_work(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        "watch:\n  - name: a\n    sim: &sim {seed: 1, step_time: 10s}\n  - name: b\n    sim: *sim\n"
    )
    done = herowatch("check-config", str(cfg))
    assert done.returncode == 0, done.stdout + done.stderr


def _start_demo(data: Path, port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "demo", "--port", str(port)],
        cwd=REPO,
        env={**os.environ, "XDG_DATA_HOME": str(data), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_serving(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the demo did not start within 60 s"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)


def _run_ids(port: int) -> set[str]:
    """The demo's live runs (last week's, played in the background for /reports, come and go meanwhile)."""
    runs = httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=10).json()
    return {r["id"] for r in runs if not r["id"].endswith("-lastweek")}


def _demo_runs(port: int) -> set[str]:
    """The demo's three live runs once its first polls have found them (serving starts before they land)."""
    deadline = time.monotonic() + 60
    while len(runs := _run_ids(port)) < 3:
        assert time.monotonic() < deadline, f"the demo showed {len(runs)} of its 3 runs within 60 s"
        time.sleep(0.2)
    return runs


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=5)
    return err


def test_a_second_demo_is_refused_before_it_touches_the_running_ones_files(tmp_path):
    first_port, second_port = free_port(), free_port()
    first = _start_demo(tmp_path, first_port)
    try:
        _wait_serving(first, first_port)
        db = tmp_path / "herowatch" / "demo.db"
        runs = _demo_runs(first_port)
        inode = db.stat().st_ino
        second = _start_demo(tmp_path, second_port)
        _, err = second.communicate(timeout=60)
        assert second.returncode != 0 and "is using the SQLite database" in err, err
        assert db.exists() and db.stat().st_ino == inode, "the running demo's database is untouched"
        assert _run_ids(first_port) == runs, "the running demo still shows its runs"
    finally:
        out = _stop(first)
    token = re.search(r"one-time token\s+(\S+)\s", out)
    assert token and len(token.group(1)) >= 32, out


def test_the_demo_never_prints_a_token_it_did_not_make(tmp_path):
    mine = "operator-token-do-not-print-0123456789abcdef"
    port = free_port()
    demo = _start_demo(tmp_path, port, {"HEROWATCH_API_TOKEN": mine})
    try:
        _wait_serving(demo, port)
    finally:
        err = _stop(demo)
    assert "your HEROWATCH_API_TOKEN" in err and mine not in err, err


def test_a_short_api_token_stops_the_server_and_says_how_to_make_one(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text("watch:\n  - name: a\n    sim: {seed: 1}\n")
    done = herowatch("serve", "--config", str(cfg), env={"HEROWATCH_API_TOKEN": "abc123"}, timeout=60)
    assert done.returncode == 2
    assert "at least 32" in done.stderr and "secrets.token_urlsafe(32)" in done.stderr, done.stderr
    assert "abc123" not in done.stdout + done.stderr, "never echo a secret"
