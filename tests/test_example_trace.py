"""The examples shipped with the docs work as docs/examples/README.md says: `herowatch replay` over the
real llm.c trace records its one-step spike as info (never paged) and pages the hang; the example rule
tests pass; the trace is what scripts/example_trace.py writes from the real log."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

TRACE = REPO / "docs/examples/llmc-gpt2-124m.jsonl"


def herowatch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
    )


def test_replaying_the_example_trace_records_the_spike_and_pages_the_hang():
    out = herowatch("replay", "--trace", str(TRACE), "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    fired = {(e["rule"], e["severity"], e["step"]) for e in events if e["state"] == "firing"}
    assert ("grad_norm_spike", "info", 7435) in fired and ("loss_jump", "info", 7435) in fired, fired
    assert ("progress_stalled", "critical", 7700) in fired, fired
    loud = {e["rule"] for e in events if e["state"] == "firing" and e["severity"] == "critical"}
    assert loud == {"progress_stalled"}, "only the hang pages"
    table = herowatch("replay", "--trace", str(TRACE))
    assert table.returncode == 0 and "progress_stalled" in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines()), table.stdout


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
