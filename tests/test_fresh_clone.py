"""The README's first command on a fresh clone: `make demo` installs herowatch into a new .venv, serves
the dashboard and shows the first alert. A clone of this commit (git clone, so no .venv and nothing
untracked) in a temporary folder; pip reuses its download cache, so the install takes well under a
minute on a machine that has installed herowatch before.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_demo import free_port


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status, r.read()


def _readme_command() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("```sh", 1)[1].split("```", 1)[0].strip()
    return block.splitlines()[0]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)  # the group this test started: make and its herowatch
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_make_demo_on_a_fresh_clone_serves_the_dashboard_and_the_first_alert(tmp_path: Path):
    command = _readme_command()
    assert command == "make demo", f"the README's first command changed: {command!r}"
    clone = tmp_path / "herowatch"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=60)
    assert not (clone / ".venv").exists() and (clone / "monitor").is_dir()
    port = free_port()
    log = tmp_path / "make-demo.log"
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and "HEROWATCH" not in k
    }
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["make", "demo", f"PORT={port}"],
            cwd=clone,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = time.monotonic()
        page = b""
        # The server may answer a moment before the demo's first poll has found its runs.
        while time.monotonic() - started < 300 and b"hero-demo" not in page:
            assert proc.poll() is None, f"make demo exited {proc.returncode}:\n{log.read_text()}"
            try:
                status, page = _get(f"http://127.0.0.1:{port}/")
                assert status == 200
            except OSError:
                pass
            if b"hero-demo" not in page:
                time.sleep(1)
        assert b"hero-demo" in page, f"the dashboard did not answer within 5 minutes:\n{log.read_text()}"
        up = time.monotonic() - started
        firing = []
        while time.monotonic() - started < 400 and not firing:
            _, body = _get(f"http://127.0.0.1:{port}/api/alerts?state=firing")
            firing = json.loads(body)
            if not firing:
                time.sleep(1)
        assert firing, f"no alert fired within {time.monotonic() - started:.0f}s:\n{log.read_text()}"
        print(f"dashboard after {up:.0f}s, first alert after {time.monotonic() - started:.0f}s")
        while time.monotonic() - started < 420 and "FIRING" not in log.read_text():
            time.sleep(0.5)  # printed once the group's wait is over
        assert (clone / ".venv" / "bin" / "herowatch").exists()
    finally:
        _stop(proc)
    text = log.read_text()
    assert "FIRING" in text and "Traceback" not in text, text
    # A second `make demo` does not install again: the stamp says it is done.
    quick = subprocess.run(["make", "venv"], cwd=clone, env=env, capture_output=True, text=True, timeout=60)
    assert quick.returncode == 0 and "installing" not in quick.stdout, quick.stdout + quick.stderr
