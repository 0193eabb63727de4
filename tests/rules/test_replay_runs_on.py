"""Replay runs the clock on after the trace's last line (issue 26, point 3), on the real llm.c log: a
trace that ends in W&B's ``crashed`` state pages ``run_crashed`` after its grace, as live does; a trace
that simply ends while the run is running raises nothing after it (its end looks like silence); the
report says what fired after the trace ended; ``--until`` runs every clock, silence rules included."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from monitor.cli.replay import replay_command
from monitor.samples import Sample
from monitor.traces.replay import replay
from monitor.traces.trace import TraceWriter
from tests.rules.helpers_rules import hero
from tests.rules.real_scenarios import Scenario

app = typer.Typer()
app.command("replay")(replay_command)
app.command("noop")(lambda: None)


def crashed_at_the_end() -> tuple[list[Sample], float]:
    sc = Scenario(last_step=9000, end_state="crashed", end_after=60.0)  # the crash is the last line
    samples = sc.build()
    assert samples[-1].state == "crashed"
    return samples, samples[-1].t


@pytest.mark.parametrize("interval", [15.0, 60.0])
def test_a_trace_that_ends_in_crashed_pages_after_its_grace(interval):
    samples, end = crashed_at_the_end()
    result = replay(samples, hero(), interval=interval)
    (crash,) = [e for e in result.firing() if e.rule == "run_crashed"]
    assert end + 300 <= crash.t <= end + 300 + interval  # the 5-minute grace, on the evaluation grid
    assert crash.severity == "critical"
    assert result.summaries[samples[0].run].last_t == end  # the summary is the trace's


def test_a_trace_that_ends_while_running_raises_nothing_after_it():
    sc = Scenario(last_step=9000)
    samples = sc.build()
    result = replay(samples, hero())
    assert [e for e in result.events if e.t > samples[-1].t and e.state == "firing"] == []


def test_until_runs_every_clock_silence_rules_too():
    sc = Scenario(last_step=9000)
    samples = sc.build()
    end = samples[-1].t
    result = replay(samples, hero(), end=end + 3600)
    (stall,) = [e for e in result.firing() if e.rule == "progress_stalled"]
    assert end < stall.t <= end + 3600


def write(path: Path, samples: list[Sample]) -> Path:
    with TraceWriter(path) as w:
        w.write_all(samples)
    return path


def test_the_report_says_what_fired_after_the_trace_ended(tmp_path: Path):
    samples, _ = crashed_at_the_end()
    trace = write(tmp_path / "crashed.jsonl", samples)
    r = CliRunner().invoke(app, ["replay", "--trace", str(trace), "--no-progress"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    (mark,) = [i for i, line in enumerate(lines) if "the trace ends at" in line]
    fired = [i for i, line in enumerate(lines) if "firing" in line and "run_crashed" in line]
    assert fired and all(i > mark for i in fired), r.output


def test_until_on_the_command_line(tmp_path: Path):
    sc = Scenario(last_step=3000)
    trace = write(tmp_path / "running.jsonl", sc.build())
    quiet = CliRunner().invoke(app, ["replay", "-t", str(trace), "--no-progress", "--fail-on", "critical"])
    assert quiet.exit_code == 0, quiet.output
    on = CliRunner().invoke(app, ["replay", "-t", str(trace), "--until", "1h", "--fail-on", "critical"])
    assert on.exit_code == 1 and "progress_stalled" in on.output, on.output
    bad = CliRunner().invoke(app, ["replay", "-t", str(trace), "--until", "soon"])
    assert bad.exit_code == 2 and "--until" in bad.output, bad.output
