"""`herowatch record`: what the pollers read becomes a trace that the trace parser reads back."""

from __future__ import annotations

import io
import math

from typer.testing import CliRunner

from monitor.cli.main import app
from monitor.config import parse_config
from monitor.sources.base import PollResult
from monitor.sources.sim import SimSource
from monitor.traces.recorder import Recorder, record
from monitor.traces.trace import TraceWriter, read_trace
from tests.helpers import sim_id

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim: {step_time: 10s, seed: 1, incidents: [{kind: nan, at: 10m}, {kind: oom_kill, at: 20m}]}
  - name: hero-b
    poll_interval: 30s
    sim: {step_time: 20s, seed: 2}
"""


def test_recorded_trace_holds_every_step_in_time_order_per_run(clock):
    cfg = parse_config(CONFIG)
    buf = io.StringIO()
    rec = Recorder(cfg.watch, {"sim": SimSource()}, TraceWriter(buf), clock)
    n = record(rec, 3600, clock.advance)
    samples = read_trace(io.StringIO(buf.getvalue()).read().splitlines())
    assert n == len(samples) > 0
    for run, step_time in ((sim_id("hero-a"), 10), (sim_id("hero-b"), 20)):
        rows = [s for s in samples if s.run == run]
        assert [s.t for s in rows] == sorted(s.t for s in rows), "time order within a run"
        steps = [s.step for s in rows if s.step is not None]
        assert steps == list(range(1, len(steps) + 1)), "every step, none twice"
        assert abs(len(steps) - 3600 / step_time) < 3600 / step_time * 0.15
    a = [s for s in samples if s.run == sim_id("hero-a")]
    assert sum(1 for s in a if s.step and math.isnan(s.metrics["train/loss"])) == 1
    assert max(s.metrics.get("oom_kills_total", 0) for s in a) == 1
    assert rec.late == 0


def test_an_outage_is_recorded_as_source_errors(clock):
    cfg = parse_config(CONFIG)
    buf = io.StringIO()
    sim = SimSource()

    class Flaky:
        kind = "sim"
        down = False

        def poll(self, target, cursors, now):
            return PollResult(error="HTTP 500") if self.down else sim.poll(target, cursors, now)

        def close(self):
            pass

    flaky = Flaky()
    rec = Recorder(cfg.watch, {"sim": flaky}, TraceWriter(buf), clock)
    record(rec, 600, clock.advance)
    flaky.down = True
    record(rec, 120, clock.advance)
    samples = read_trace(buf.getvalue().splitlines())
    errors = [s for s in samples if s.source_error]
    assert errors and {s.run for s in errors} == {sim_id("hero-a"), sim_id("hero-b")}
    assert all(s.source_error == "HTTP 500" for s in errors)


def test_record_command_writes_a_trace(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text("watch:\n  - name: quick\n    poll_interval: 1s\n    sim: {step_time: 0.2, jitter: 0}\n")
    out = tmp_path / "trace.jsonl"
    result = CliRunner().invoke(app, ["record", "--config", str(cfg), "--out", str(out), "--duration", "2s"])
    assert result.exit_code == 0, result.output
    samples = read_trace(out.read_text().splitlines())
    assert f"wrote {len(samples)} samples to {out}" in result.output
    assert sum(1 for s in samples if s.step) >= 5
