"""The examples shipped with herowatch work as docs/examples/README.md says: `herowatch replay --example
llmc` (the real llm.c trace, package data found wherever herowatch is installed) records its one-step
spike as info (never paged) and pages the made-up hang while the trace goes on, never the trace's end;
the example rule tests pass; the trace is what scripts/example_trace.py writes from the real log."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

TRACE = REPO / "monitor/traces/examples/llmc-gpt2-124m.jsonl"


def herowatch(*args: str, cwd: Path = REPO, path: str | None = None) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", **({"PYTHONPATH": path} if path else {})}
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_replaying_the_example_trace_records_the_spike_and_pages_the_hang():
    out = herowatch("replay", "--example", "llmc", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    assert str(TRACE) in out.stderr, "the example's path is said, to copy or open"
    events = [json.loads(line) for line in out.stdout.splitlines()]
    fired = {(e["rule"], e["severity"], e["step"]) for e in events if e["state"] == "firing"}
    assert ("grad_norm_spike", "info", 7435) in fired and ("loss_jump", "info", 7435) in fired, fired
    assert ("progress_stalled", "critical", 7700) in fired, fired
    loud = {e["rule"] for e in events if e["state"] == "firing" and e["severity"] == "critical"}
    assert loud == {"progress_stalled"}, "only the hang pages"
    table = herowatch("replay", "--example", "llmc")
    assert table.returncode == 0 and "progress_stalled" in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines()), table.stdout
    text = " ".join(table.stdout.split())
    assert "12:16:40 last step 7,700; the trace goes on 40m with no new step" in text, table.stdout
    assert "still open when the replay stopped: progress_stalled (critical, firing since 12:31:45)" in text


def test_the_stall_page_is_the_traces_hang_not_its_end(tmp_path):
    """The page comes 15 minutes into the trace's own hang (the run says `running`, no step), 25 minutes
    before its last line; the same real steps without the made-up hang end with no page at all: the end
    of a trace is the end of the run, the clock does not run on into a stall."""
    lines = [json.loads(x) for x in TRACE.read_text().splitlines()]
    end = lines[-1]["t"]
    out = herowatch("replay", "--example", "llmc", "--format", "jsonl")
    (stall,) = [json.loads(x) for x in out.stdout.splitlines() if '"progress_stalled"' in x]
    assert stall["state"] == "firing" and end - stall["t"] >= 20 * 60, (stall, end)
    assert [x for x in lines if x["t"] > stall["t"]], "the trace goes on after the page"

    steps_only = tmp_path / "steps.jsonl"
    steps_only.write_text("".join(json.dumps(x) + "\n" for x in lines if "step" in x))
    quiet = herowatch("replay", "-t", str(steps_only), "--format", "jsonl", "--fail-on", "warning")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "progress_stalled" not in quiet.stdout and "telemetry_gone" not in quiet.stdout


def test_the_example_is_found_where_herowatch_is_installed(tmp_path):
    """Installed as setuptools installs it (package data from pyproject.toml), run from another folder
    with no checkout in sight: `--example llmc` finds the trace inside the package."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for pkg in ("monitor", "alerts"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    site = tmp_path / "site-packages"
    setup = [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py"]
    built = subprocess.run([*setup, "--build-lib", str(site)], cwd=src, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    shutil.rmtree(src)  # nothing left of a checkout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = herowatch("replay", "--example", "llmc", "--format", "jsonl", cwd=elsewhere, path=str(site))
    assert out.returncode == 0, out.stderr
    installed = site / "monitor/traces/examples/llmc-gpt2-124m.jsonl"
    assert str(installed) in out.stderr, out.stderr
    assert any('"progress_stalled"' in line for line in out.stdout.splitlines())
    helped = herowatch("replay", "--help", cwd=elsewhere, path=str(site))
    assert "--example llmc" in helped.stdout and "docs/examples" not in helped.stdout


def test_the_example_rule_tests_pass():
    out = herowatch("rules", "test", str(REPO / "docs/examples/rules_test.yaml"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 2 tests, 4 checks in 1 file" in out.stdout


def test_the_example_trace_holds_the_real_values(tmp_path):
    lines = [json.loads(x) for x in TRACE.read_text().splitlines()]
    by_step = {x["step"]: x["metrics"] for x in lines if "step" in x}
    assert by_step[7435] == {"train/loss": 3.7819, "optim/learning_rate": 0.00043, "grad/norm/total": 1.44}
    assert by_step[7434]["grad/norm/total"] == 0.27  # as in the published log
    hang = [x for x in lines if "step" not in x]
    assert len(hang) == 40 and all(x["labels"] == {"example": "made-up hang"} for x in hang)
