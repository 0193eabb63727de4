"""`herowatch backfill`: a finished run's whole history from the W&B stand-in (real wandb client) into the
database and a trace, without paging anyone."""

from __future__ import annotations

from sqlalchemy import func, select
from typer.testing import CliRunner

from monitor.cli.main import app
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, Notification, Run, SeriesMeta, SourceCursor
from monitor.storage.series import read_series
from monitor.traces.trace import read_trace
from tests.wandb_support import ENTITY, KEY, PROJECT, wandb_standin_fixture, wid  # noqa: F401 - fixture "server"


def test_backfill_loads_every_step_and_notifies_nobody(server, tmp_path, monkeypatch):
    server.add_run(PROJECT, "done1", tags=["hero"], state="finished")
    server.log_steps(
        PROJECT,
        "done1",
        0,
        4500,
        metrics=lambda s: {"train/loss": 9.0 if s == 3001 else 3.0 - s * 1e-4, "global_step": s},
    )
    server.add_run(PROJECT, "other", tags=["hero"], state="running")
    server.log_steps(PROJECT, "other", 0, 50)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        f"watch:\n  - name: hero\n    wandb: {{entity: {ENTITY}, project: {PROJECT}, "
        f"base_url: '{server.url}', timeout: 5s, retries: 0}}\n"
    )
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    out = tmp_path / "done1.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "backfill",
            "--config",
            str(cfg),
            "--watch",
            "hero",
            "--run",
            "done1",
            "--out",
            str(out),
            "--database-url",
            url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{wid('done1')}: 4501 samples loaded" in result.output, "4,500 history rows and one state sample"
    stepped = [s for s in read_trace(out.read_text().splitlines()) if s.step is not None]
    assert [s.step for s in stepped] == list(range(4500))
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        run = s.get(Run, wid("done1"))
        assert (run.state, run.last_step, run.watch) == ("finished", 4499, "hero")
        assert s.get(SeriesMeta, (wid("done1"), "train/loss")).points == 4500
        _, buckets = read_series(s, wid("done1"), "train/loss")
        assert max(b.max for b in buckets) == 9.0, "the one-step spike at 3001 is in the chart"
        assert s.get(SourceCursor, (wid("done1"), "wandb")).cursor["step"] == 4499, (
            "serve continues from here"
        )
        assert s.get(Run, wid("other")) is None, "--run limits the backfill"
        assert s.scalar(select(func.count()).select_from(Alert)) == 0
        assert s.scalar(select(func.count()).select_from(Notification)) == 0
    engine.dispose()


def test_backfill_of_an_unknown_watch_is_a_clear_error(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text("watch:\n  - name: a\n    sim: {}\n")
    result = CliRunner().invoke(app, ["backfill", "--config", str(cfg), "--watch", "b"])
    assert result.exit_code == 2 and "no watch named 'b'; known: a" in result.output
