"""`herowatch backfill`, `record` and `replay` on a TensorBoard log dir: a finished run's whole history
loaded (no page for old events), recorded to a trace, and the NaN in it found again by replay."""

from __future__ import annotations

import json
import math
import time

from typer.testing import CliRunner

from monitor.cli.main import app
from tests.tb_support import TbRun


def write_run(logdir, nan_at: int) -> None:
    run = TbRun(logdir, "hero-a")
    t0 = time.time() - 3600
    for s in range(200):
        loss = math.nan if s == nan_at else 3.0 - s / 1000
        run.log(s, {"lm loss": loss, "grad-norm": 1.0, "learning-rate": 1e-4}, t=t0 + 10 * s)
    run.close()


def test_backfill_record_and_replay_a_tensorboard_run(tmp_path, monkeypatch):
    logdir = tmp_path / "tb"
    write_run(logdir, nan_at=150)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(f"watch:\n  - name: tb\n    tensorboard: {{logdir: '{logdir}', read_bytes: 65536}}\n")
    runner = CliRunner()
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    trace = tmp_path / "backfill.jsonl"
    r = runner.invoke(app, ["backfill", "-c", str(cfg), "-w", "tb", "--database-url", db, "-o", str(trace)])
    assert r.exit_code == 0, r.output
    steps = [json.loads(x)["step"] for x in trace.read_text().splitlines() if '"step"' in x]
    assert steps == list(range(200)), "the whole history, whatever read_bytes allows a poll"

    recorded = tmp_path / "record.jsonl"
    r = runner.invoke(app, ["record", "-c", str(cfg), "-o", str(recorded), "-d", "2s"])
    assert r.exit_code == 0, r.output
    assert recorded.read_text().count('"step"') >= 1

    r = runner.invoke(app, ["replay", "--trace", str(trace), "--format", "jsonl"])
    assert "loss_nonfinite" in r.output, r.output[-2000:]
