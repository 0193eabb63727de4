"""`herowatch rules list|check|test` and `herowatch replay`: exit codes, diffs, output formats."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from monitor.cli.replay import replay_command
from monitor.cli.rules import rules_app
from monitor.samples import Sample
from monitor.traces.trace import TraceWriter
from tests.rules.helpers_rules import T0, steps, with_grad_norm

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
    assert r.exit_code == 2, "a test file that cannot be used is invalid input, as for check-config"
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
    assert r.exit_code == 2 and f"{bad}:2: rules[0]" in r.output and "must be info" in r.output


# ---- replay ---------------------------------------------------------------------------------------
def write(path: Path, samples) -> Path:
    with TraceWriter(path) as w:
        w.write_all(samples)
    return path


def test_replay_jsonl_prints_one_transition_per_line(tmp_path: Path):
    trace = write(tmp_path / "t.jsonl", with_grad_norm(steps([2.0] * 20 + [float("nan")] + [2.0] * 100)))
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


def test_replay_report_has_a_heading_per_run(tmp_path: Path):
    a = with_grad_norm(steps([2.0] * 50, run="a"))
    trace = write(tmp_path / "t.jsonl", a + [Sample(T0 + 600, "b", state="failed")])
    r = runner.invoke(replay_app, ["replay", "--trace", str(trace)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    heads = [line for line in r.output.splitlines() if line and not line.startswith(" ")]
    assert heads[0].startswith("a: 50 samples, steps ") and heads[0].endswith("fired: nothing")
    assert heads[1].startswith("b: 1 sample ") and heads[1].endswith("fired: 1 critical")
    assert "run_crashed" in r.output


def test_replay_fail_on_and_overrides(tmp_path: Path):
    rows = steps([3e5] * 200, metric="throughput/tokens_per_second")
    trace = write(tmp_path / "t.jsonl", rows)
    r = replay("--trace", str(trace), "--fail-on", "warning")  # the floor is off: only the loss is missed
    assert r.exit_code == 1 and "watching_blind" in r.output and "no value of train/loss" in r.output
    logged = [Sample(s.t, s.run, s.step, {**s.metrics, "train/loss": 2.0}, s.state) for s in rows]
    trace = write(tmp_path / "t.jsonl", with_grad_norm(logged))
    assert replay("--trace", str(trace), "--fail-on", "warning").exit_code == 0
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
    from monitor.cli.replay import _lines_with_progress

    trace = write(tmp_path / "t.jsonl", steps([2.0] * 40000))
    assert list(_lines_with_progress(trace, show=True)) == trace.read_bytes().splitlines(keepends=True)


# ---- at 80 columns, as on-call's terminal ---------------------------------------------------------
def _sim_trace(path: Path, run: str) -> Path:
    from monitor.sources.sim import SimRun
    from monitor.sources.sim_config import SimTarget

    cfg = SimTarget(
        seed=3,
        step_time=10,
        incidents=[{"kind": "stall", "at": "1h", "duration": "40m"}, {"kind": "loss_spike", "at": "2h30m"}],
    )
    return write(path, SimRun(cfg, run, T0).advance(T0 + 3.5 * 3600))


def test_replay_reads_whole_at_80_columns_with_units(tmp_path: Path):
    trace = _sim_trace(tmp_path / "t.jsonl", "hero-telemetry-gone-7b")
    r = runner.invoke(replay_app, ["replay", "--trace", str(trace)], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in r.output
    words = set(r.output.split())
    assert {"hero-telemetry-gone-7b:", "progress_stalled", "loss_jump"} <= words
    stall = next(line for line in lines if "firing" in line and "progress_stalled" in line)
    assert stall.rstrip().endswith("idle") and "step " in stall, "the value says what it measures"
    jump = next(line for line in lines if "firing" in line and "loss_jump" in line)
    assert jump.rstrip().endswith(" train/loss")
    said = lines[lines.index(stall) + 1].strip()
    assert said.startswith("no new step for 15m"), "what the rule said, beneath, without the run repeated"
    resumed = next(ln for ln in lines if "resolved" in ln and "progress_stalled" in ln)
    assert lines[lines.index(resumed) + 1].strip().startswith("last step ")
    assert "sigma below" not in r.output, "a resolution never reads like an alarm"


def test_one_step_spikes_are_counted_per_metric_not_per_rule_that_never_fired(tmp_path: Path):
    trace = _sim_trace(tmp_path / "t.jsonl", "hero-a")
    r = runner.invoke(replay_app, ["replay", "--trace", str(trace)], env={"COLUMNS": "80"})
    assert "one-step spikes seen (recorded, not paged): train/loss 1, grad/norm/total 1" in r.output
    assert "loss_spike" not in r.output, "the floor rule never fired: it is not named"


def test_rules_list_says_per_rule_what_it_catches_its_severity_and_key_settings():
    from monitor.rules.loader import load_pack

    r = runner.invoke(rules_app, ["list", "hero"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    lines = r.output.splitlines()
    specs = load_pack("hero")
    assert len(lines) <= 2 * len(specs), r.output  # a line per rule (its settings below when long)
    stall = next(line for line in lines if line.startswith("progress_stalled "))
    assert "critical" in stall and "step counter has not moved" in stall, stall
    assert "[stall; floor=15m k=10.0 startup=45m]" in stall, stall
    tps = lines.index(next(line for line in lines if line.startswith("tokens_per_second_low ")))
    assert "below=unset (off until set)" in " ".join(lines[tps : tps + 2]), lines[tps : tps + 2]
    assert "importance=" not in r.output and "expect=None" not in r.output
    narrow = runner.invoke(rules_app, ["list", "hero"], env={"COLUMNS": "80"}).output.splitlines()
    assert max(len(line) for line in narrow) <= 80 and len(narrow) <= 2 * len(specs), narrow
    assert all(any(line.startswith(f"{s.name} ") for line in narrow) for s in specs)


def test_rules_list_verbose_shows_every_parameter_at_80_columns():
    from monitor.rules.loader import load_pack

    r = runner.invoke(rules_app, ["list", "hero", "--verbose"], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    assert max(len(line) for line in r.output.splitlines()) <= 80 and "…" not in r.output
    words = set(r.output.split())
    for spec in load_pack("hero"):
        assert spec.name in words
    assert {"restart_counter=restarts_total", "reset_on_rewind=True", "max_pause=1h"} <= words


STILL_STUCK = """\
rule_files: [hero]
tests:
  - name: expects the stall page too early
    interval: 1m
    steps: 0+1x60 _x20
    state: runningx80
    input_series:
      - series: train/loss
        values: 2x60
    alert_rule_test:
      - eval_time: 70m
        alertname: progress_stalled
        exp_alerts:
          - exp_labels: {severity: critical}
"""


def test_a_failing_stall_check_does_not_say_progress_resumed_for_a_stuck_run(tmp_path: Path):
    f = tmp_path / "t.yaml"
    f.write_text(STILL_STUCK)
    r = rules("test", str(f))
    assert r.exit_code == 1, r.output
    said = next(line for line in r.output.splitlines() if "the rule says:" in line)
    assert "resumed" not in said and "stepping" not in said
    assert said.strip() == "the rule says: last step 60, 10m ago, within the limit 15m", said


def test_replay_of_an_unknown_vocabulary_prints_the_blind_rules(tmp_path: Path):
    trace = tmp_path / "unknown.jsonl"
    with TraceWriter(trace) as w:
        for i in range(300):
            metrics = {"objective": 2.5 - i / 1000, "gnorm": 0.4, "tps": 410_000.0}
            w.write(Sample(t=T0 + 2 * i, run="hero-7b", step=i, metrics=metrics, state="running"))
    r = runner.invoke(replay_app, ["replay", "--trace", str(trace)], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    out = r.output
    assert "firing   warning  watching_blind" in out
    tail = out[out.index("coverage at the end:") :]
    assert "blind" in tail.splitlines()[0] and "not logged (optional)" in tail.splitlines()[0]
    flat = " ".join(tail.split())
    assert "watching blind: no value of train/loss" in flat and "loss_spike" in flat
    assert "the run logs 'objective'" in flat
    assert "map them with metrics: {objective: train/loss, gnorm: grad/norm/total" in flat
    assert all(len(line) <= 80 for line in out.splitlines())
