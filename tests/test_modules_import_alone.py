"""Every module of herowatch imports on its own, first thing in a fresh interpreter: an import cycle
that only bites when a module is imported before its partner (``people_models`` before ``models``)
breaks a tool, a migration or a test that happens to import it first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules() -> list[str]:
    out = []
    for top in ("alerts", "monitor"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out.append(".".join(parts))
    return out


def test_every_module_imports_first_in_a_fresh_interpreter():
    names = modules()
    assert len(names) > 100
    # one interpreter per module would take minutes; a fork per module from a bare interpreter that has
    # imported only the third-party libraries does the same check in seconds
    script = (
        "import os, sys, importlib\n"
        "import sqlalchemy, sqlalchemy.orm, fastapi, pydantic\n"
        "bad = []\n"
        "for name in sys.argv[1:]:\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "        except BaseException as e:\n"
        "            print(f'{name}: {type(e).__name__}: {e}', flush=True)\n"
        "            os._exit(1)\n"
        "        os._exit(0)\n"
        "    _, status = os.waitpid(pid, 0)\n"
        "    if status:\n"
        "        bad.append(name)\n"
        "print('FAILED', bad)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, *names], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("FAILED []"), r.stdout[-3000:]
