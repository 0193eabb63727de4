"""`herowatch doctor` on the sources beyond W&B: a TensorBoard log dir (its runs, their keys against the
rules with the detected trainer), a push watch (its ingest token and spool folder), and how each says
it cannot be read."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from monitor.cli.main import app
from tests.tb_support import TbRun

TOKEN = "ingest-" + "0123456789abcdef" * 3


def doctor(tmp_path, monkeypatch, body: str, **env: str):
    monkeypatch.setenv("HEROWATCH_INGEST_DIR", str(tmp_path / "ingest"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(body)
    r = CliRunner().invoke(app, ["doctor", "--config", str(cfg), "--json"])
    return r.exit_code, json.loads(r.stdout[r.stdout.index("{") :])


def said(report) -> str:
    return json.dumps(report)


def test_a_tensorboard_log_dir_and_a_push_watch(tmp_path, monkeypatch):
    run = TbRun(tmp_path / "tb", "hero-a")
    for s in range(50):
        run.log(s, {"lm loss": 2.0, "grad-norm": 1.0, "learning-rate": 1e-4, "iteration-time": 1.0})
    run.close()
    body = f"""
watch:
  - name: tb
    tensorboard: {{logdir: '{tmp_path / "tb"}'}}
  - name: jobs
    push: {{token_env: JOBS_TOKEN}}
"""
    code, report = doctor(tmp_path, monkeypatch, body, JOBS_TOKEN=TOKEN)
    text = said(report)
    assert "1 run(s) this watch picks up: hero-a" in text
    assert "megatron" in text, "the trainer is detected from the event file's tags"
    assert "ingest token set (JOBS_TOKEN)" in text
    assert "herowatch emit run" in text, "a push watch without runs yet says how to start one"
    assert code in (0, 1)


def test_what_cannot_work_is_said_with_its_fix(tmp_path, monkeypatch):
    body = f"""
watch:
  - name: tb
    tensorboard: {{logdir: '{tmp_path / "missing"}'}}
  - name: jobs
    push: {{token_env: JOBS_TOKEN}}
"""
    monkeypatch.delenv("JOBS_TOKEN", raising=False)
    code, report = doctor(tmp_path, monkeypatch, body)
    text = said(report)
    assert code == 1
    assert "log directory" in text and "not found" in text and "tensorboard.logdir" in text
    assert "JOBS_TOKEN is not set" in text
