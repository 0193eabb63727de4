"""`herowatch rules list|check|test` and `herowatch replay`: exit codes, diffs, output formats."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from monitor.cli.rules import replay_command, rules_app
from monitor.samples import Sample
from monitor.traces.trace import TraceWriter
from tests.rules.helpers_rules import T0, steps

runner = CliRunner()
replay_app = typer.Typer()
replay_app.command("replay")(replay_command)
replay_app.command("noop")(lambda: None)  # two commands: `replay` stays a subcommand


def rules(*args: str):
    return runner.invoke(rules_app, list(args))


def replay(*args: str):
    return runner.invoke(replay_app, ["replay", *args])


# ---- rules test --------------------------------------------------------------------------------
def test_the_hero_pack_tests_pass_with_exit_0_and_a_summary():
    r = rules("test", "hero")
    assert r.exit_code == 0, r.output
    assert "SUCCESS" in r.output and "tests" in r.output and "checks" in r.output


FAILING = """\
rule_files: [hero]
tests:
  - name: expects a page that never comes
    interval: 10s
    input_series:
      - series: train/loss
        values: 2x30
    alert_rule_test:
      - eval_time: 4m
        alertname: loss_nonfinite
        exp_alerts:
          - exp_labels: {severity: critical}
      - eval_time: 4m
        alertname: loss_nonfinite
        exp_alerts: []
"""


def test_a_failing_check_prints_a_diff_and_exits_1(tmp_path: Path):
    f = tmp_path / "t.yaml"
    f.write_text(FAILING)
    r = rules("test", str(f))
    assert r.exit_code == 1
    assert f'{f}:3: FAILED test "expects a page that never comes"' in r.output
    assert "loss_nonfinite at 4m:" in r.output
    assert 'expected: firing {severity="critical"}' in r.output
    assert "got:      nothing pending or firing" in r.output
    assert "the rule says: train/loss is finite (2)" in r.output
    assert "1 failure (1 tests, 2 checks)" in r.output


def test_an_unexpected_alert_is_a_failure_too(tmp_path: Path):
    f = tmp_path / "t.yaml"
    f.write_text(FAILING.replace("values: 2x30", "values: 2x10 NaN 2x19"))
    r = rules("test", str(f))
    assert r.exit_code == 1
    assert "expected: nothing" in r.output and 'got:      firing {alertname="loss_nonfinite"' in r.output


def test_broken_test_files_fail_with_file_line_and_field(tmp_path: Path):
    bad_field = tmp_path / "a.yaml"
    bad_field.write_text("rule_files: [hero]\ntests:\n  - name: x\n    intervall: 10s\n")
    bad_rules = tmp_path / "b.yaml"
    bad_rules.write_text("rule_files: [no_such_pack]\ntests: []\n")
    bad_values = tmp_path / "c.yaml"
    bad_values.write_text(FAILING.replace("values: 2x30", "values: 2x30 lots"))
    r = rules("test", str(bad_field), str(bad_rules), str(bad_values))
    assert r.exit_code == 1
    assert f"{bad_field}:4: tests[0].intervall: unknown field" in r.output
    assert "no built-in pack 'no_such_pack'" in r.output
    assert "'lots' is not a number" in r.output


def test_rule_files_are_found_relative_to_the_test_file(tmp_path: Path):
    (tmp_path / "mine.yaml").write_text(
        "rules:\n  - name: loss_high\n    kind: threshold\n    metric: train/loss\n    above: 5\n"
    )
    (tmp_path / "mine_test.yaml").write_text(
        "rule_files: [mine.yaml]\ntests:\n  - interval: 1m\n    input_series:\n"
        "      - series: train/loss\n        values: 1 9\n    alert_rule_test:\n"
        "      - eval_time: 1m\n        alertname: loss_high\n        exp_alerts:\n"
        "          - exp_labels: {severity: warning}\n"
        "            exp_annotations: {summary: 'test: loss_high: train/loss 9 at step 1 above 5'}\n"
    )
    r = rules("test", str(tmp_path / "mine_test.yaml"))
    assert r.exit_code == 0, r.output


# ---- rules list / check ------------------------------------------------------------------------
def test_list_packs_and_rules():
    r = rules("list")
    assert r.exit_code == 0 and "hero" in r.output and "hero_test" not in r.output
    r = rules("list", "hero")
    assert r.exit_code == 0 and "progress_stalled" in r.output and "loss_jump" in r.output


def test_check_rule_files(tmp_path: Path):
    good = tmp_path / "good.yaml"
    good.write_text("rules:\n  - name: a\n    kind: non_finite\n    metric: train/loss\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - name: a\n    kind: spike\n    metric: train/loss\n"
        "    mode: point\n    severity: critical\n"
    )
    assert rules("check", str(good)).exit_code == 0
    r = rules("check", str(good), str(bad))
    assert r.exit_code == 1 and f"{bad}:2: rules[0]" in r.output and "must be info" in r.output


# ---- replay ---------------------------------------------------------------------------------------
def write(path: Path, samples) -> Path:
    with TraceWriter(path) as w:
        w.write_all(samples)
    return path


def test_replay_jsonl_prints_one_transition_per_line(tmp_path: Path):
    trace = write(tmp_path / "t.jsonl", steps([2.0] * 20 + [float("nan")] + [2.0] * 100))
    r = replay("--trace", str(trace), "--format", "jsonl")
    assert r.exit_code == 0, r.output
    docs = [json.loads(line) for line in r.output.splitlines()]
    assert [(d["rule"], d["state"], d["step"]) for d in docs] == [
        ("loss_nonfinite", "firing", 20),
        ("loss_nonfinite", "resolved", 110),
    ]
    assert set(docs[0]) >= {
        "t",
        "run",
        "rule",
        "kind",
        "metric",
        "severity",
        "state",
        "step",
        "value",
        "summary",
    }
    assert "replaying" not in r.output  # no progress bar when not on a terminal


def test_replay_table_ends_with_a_summary_per_run(tmp_path: Path):
    trace = write(tmp_path / "t.jsonl", steps([2.0] * 50, run="a") + [Sample(T0 + 600, "b", state="failed")])
    r = runner.invoke(replay_app, ["replay", "--trace", str(trace)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    summary = r.output[r.output.index("per run") :]
    assert "a " in summary and "nothing" in summary and "b " in summary and "1 critical" in summary
    assert "run_crashed" in r.output


def test_replay_fail_on_and_overrides(tmp_path: Path):
    trace = write(tmp_path / "t.jsonl", steps([3e5] * 200, metric="throughput/tokens_per_second"))
    assert replay("--trace", str(trace), "--fail-on", "warning").exit_code == 0  # the floor is off
    r = replay("--trace", str(trace), "--fail-on", "warning", "--set", "tokens_per_second_low.below=350000")
    assert (
        r.exit_code == 1 and "tokens_per_second_low" in r.output and "at warning or worse fired" in r.output
    )
    r = replay("--trace", str(trace), "--set", "tokens_per_second_low.belo=1")
    assert r.exit_code == 2 and "belo" in r.output


def test_replay_with_a_rule_file(tmp_path: Path):
    rules_file = tmp_path / "r.yaml"
    rules_file.write_text(
        "rules:\n  - name: loss_high\n    kind: threshold\n    metric: train/loss\n    above: 5\n"
    )
    trace = write(tmp_path / "t.jsonl", steps([2.0, 9.0]))
    r = replay("--trace", str(trace), "--rules", str(rules_file), "--format", "jsonl")
    assert r.exit_code == 0 and [json.loads(x)["rule"] for x in r.output.splitlines()] == ["loss_high"]


def test_replay_bad_trace_names_the_line_and_exits_2(tmp_path: Path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"t": 1, "run": "r"}\n{"t": 2, "run": "r"}\n{"t": 3, "run": "r", "metrics": {"x": "big"}}\n'
    )
    r = replay("--trace", str(trace))
    assert r.exit_code == 2 and f"{trace}:3: metrics.x: expected a number" in r.output
    assert "Traceback" not in r.output
    r = replay("--trace", str(trace), "--skip-bad", "--format", "jsonl")
    assert r.exit_code == 0 and f"skipped {trace}:3:" in r.output


def test_replay_unknown_pack_and_format(tmp_path: Path):
    trace = write(tmp_path / "t.jsonl", steps([2.0]))
    r = replay("--trace", str(trace), "--rules", "nope")
    assert r.exit_code == 2 and "no built-in pack 'nope'" in r.output
    assert replay("--trace", str(trace), "--format", "xml").exit_code == 2


def test_the_progress_bar_passes_every_line_through(tmp_path: Path):
    from monitor.cli.rules import _lines_with_progress

    trace = write(tmp_path / "t.jsonl", steps([2.0] * 40000))
    assert list(_lines_with_progress(trace, show=True)) == trace.read_bytes().splitlines(keepends=True)
