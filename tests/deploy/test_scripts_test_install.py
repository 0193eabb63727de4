"""scripts/test sets up a developer's .venv: when pip fails it stops with pip's words and leaves the
.venv unstamped, so the next run tries again instead of running the suite on a broken install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BROKEN_LOCK = "file:///nonexistent/herowatch_missing-1.0-py3-none-any.whl --hash=sha256:" + "0" * 64 + "\n"


def checkout_with_broken_lock(tmp: Path) -> Path:
    root = tmp / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "requirements").mkdir()
    shutil.copy(REPO / "scripts" / "test", root / "scripts" / "test")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "requirements" / "dev.lock").write_text(BROKEN_LOCK)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    # the real pip, as the fresh .venv would have it (without downloading anything)
    pip_dir = Path(
        subprocess.check_output(
            [sys.executable, "-c", "import pip, os; print(os.path.dirname(pip.__file__))"], text=True
        ).strip()
    )
    site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    shutil.copytree(pip_dir, site / "pip")
    return root


def run_scripts_test(root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    return subprocess.run(
        ["bash", str(root / "scripts" / "test"), "--co"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_pip_failure_stops_scripts_test_and_leaves_no_stamp(tmp_path: Path) -> None:
    root = checkout_with_broken_lock(tmp_path)
    stamp = root / ".venv" / ".herowatch-installed"
    stamp.write_text("an older install's hash\n")  # a stamp from before must not survive a failed install

    first = run_scripts_test(root)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "pip install --require-hashes -r requirements/dev.lock failed" in first.stderr
    assert "herowatch_missing" in first.stderr  # pip's own words, not swallowed
    assert "ruff" not in first.stdout and "pytest" not in first.stdout  # the suite never ran
    assert not stamp.exists()

    again = run_scripts_test(root)  # the next run tries the install again and fails the same way
    assert again.returncode == 1 and "installing herowatch" in again.stdout
    assert not stamp.exists()
