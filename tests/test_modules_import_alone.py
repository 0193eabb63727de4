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


def test_every_name_imported_inside_a_function_exists():
    """Imports inside functions (kept lazy for a fast CLI) run only when the command runs: a name moved
    elsewhere breaks ``herowatch db upgrade`` without any import at start-up failing."""
    import ast
    import importlib

    missing = []
    for top in ("alerts", "monitor"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if not node.module.startswith(("alerts", "monitor")):
                    continue
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if alias.name == "*" or hasattr(module, alias.name):
                        continue
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}")
    assert not missing, "imported names that do not exist:\n" + "\n".join(missing)
