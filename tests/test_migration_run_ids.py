"""Migration 0007 on both databases: a database written when runs were keyed by their bare source id is
re-keyed to source-qualified ids everywhere the id is stored, so that a firing alert keeps its identity
(fingerprint), its open group (Slack thread) and its silence; and back on downgrade."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import sqlalchemy as sa

from alerts.grouping import group_key
from alerts.model import fingerprint
from monitor.storage import migrate
from monitor.storage.db import make_engine

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WANDB = {"alertname": "loss_spike", "run": "abc123", "severity": "critical", "team": "sft"}


def _before_0007() -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    return script.get_revision("0007").down_revision


def _legacy_rows(conn: sa.Connection) -> None:
    meta = sa.MetaData()
    t = {
        n: sa.Table(n, meta, autoload_with=conn)
        for n in (
            "runs",
            "source_cursors",
            "series_meta",
            "series_buckets",
            "rule_state",
            "alerts",
            "alert_transitions",
            "alert_groups",
            "silences",
        )
    }
    run = {"first_seen_at": T, "restarts": 0, "stats": {}}
    conn.execute(t["runs"].insert(), [
        {"id": "abc123", "watch": "sft", "source": "wandb", "display_name": "qwen-7b-v3",
         "labels": {"wandb_project": "team/sft", "team": "sft"}, **run},
        {"id": "hero-a", "watch": "hero-a", "source": "sim", "display_name": "hero-a", "labels": {}, **run},
        {"id": "trainer-x", "watch": "infra", "source": "prometheus", "display_name": "trainer-x",
         "labels": {}, **run},
    ])  # fmt: skip
    conn.execute(t["source_cursors"].insert(), [
        {"run_id": "abc123", "source": "wandb", "cursor": {"project": "team/sft"}, "updated_at": T},
        {"run_id": "hero-a", "source": "sim", "cursor": {"t": 1.0}, "updated_at": T},
    ])  # fmt: skip
    conn.execute(t["series_meta"].insert(), [{"run_id": "abc123", "metric": "train/loss", "axis": "step",
                                              "width": 1.0, "buckets": 1, "points": 1}])  # fmt: skip
    conn.execute(t["series_buckets"].insert(), [{"run_id": "abc123", "metric": "train/loss", "x0": 9.0,
                                                 "sum": 2.0, "count": 1, "nonfinite": 0}])  # fmt: skip
    conn.execute(t["rule_state"].insert(), [{"run_id": "abc123", "version": 1, "saved_at": T, "data": b"x"}])
    alert = conn.execute(t["alerts"].insert().values(
        fingerprint=fingerprint(WANDB), rule="loss_spike", kind="spike", run_id="abc123", severity="critical",
        labels=WANDB, annotations={}, state="firing", active_at=T, updated_at=T,
    )).inserted_primary_key[0]  # fmt: skip
    conn.execute(t["alert_transitions"].insert().values(
        alert_id=alert, run_id="abc123", at=T, from_state="inactive", to_state="firing", reason="",
    ))  # fmt: skip
    key = group_key("slack", WANDB, ["run"])
    conn.execute(t["alert_groups"].insert().values(
        group_key=key, open_key=key, receiver="slack", labels={"run": "abc123"}, timing={}, created_at=T,
        root_ref="C1:1.0",
    ))  # fmt: skip
    conn.execute(t["silences"].insert().values(
        matchers={"matchers": ['run="abc123"', "alertname=~loss_.*"]}, starts_at=T, ends_at=T,
        created_by="alice", comment="", created_at=T,
    ))  # fmt: skip


def test_0007_rekeys_every_stored_run_id_and_back(db_url):
    before = _before_0007()
    migrate.upgrade(db_url, before)
    engine = make_engine(db_url)
    with engine.begin() as conn:
        _legacy_rows(conn)
    migrate.upgrade(db_url)
    new = "wandb:team/sft/abc123"
    with engine.connect() as conn:

        def rows(sql: str) -> list:
            return conn.execute(sa.text(sql)).all()

        runs = {r.id: (r.name, r.project) for r in rows("select id, name, project from runs")}
        assert runs == {
            new: ("abc123", "team/sft"),
            "sim:hero-a/hero-a": ("hero-a", "hero-a"),
            "prometheus:infra/trainer-x": ("trainer-x", "infra"),
        }
        for table in ("source_cursors", "series_meta", "series_buckets", "rule_state", "alert_transitions"):
            ids = {r[0] for r in rows(f"select run_id from {table}")}
            assert ids <= {new, "sim:hero-a/hero-a"} and new in ids, (table, ids)
        (alert,) = conn.execute(sa.select(sa.table("alerts", sa.column("run_id"), sa.column("labels"),
                                                   sa.column("fingerprint")))).all()  # fmt: skip
        labels = alert.labels if isinstance(alert.labels, dict) else json.loads(alert.labels)
        assert alert.run_id == new and labels == {**WANDB, "run": new}
        assert alert.fingerprint == fingerprint(labels), "the engine finds the firing alert by its labels"
        (group,) = rows("select group_key, open_key from alert_groups")
        assert group.open_key == group_key("slack", {"run": new}, ["run"]), "new alerts join its thread"
        assert group.group_key == group_key("slack", WANDB, ["run"]), "buttons of sent messages still work"
        (silence,) = rows("select matchers from silences")
        doc = silence.matchers if isinstance(silence.matchers, dict) else json.loads(silence.matchers)
        assert doc == {"matchers": [f'run="{new}"', "alertname=~loss_.*"]}

    migrate.downgrade(db_url, before)
    with engine.connect() as conn:
        ids = {r[0] for r in conn.execute(sa.text("select id from runs"))}
        assert ids == {"abc123", "hero-a", "trainer-x"}
        assert {r[0] for r in conn.execute(sa.text("select run_id from alerts"))} == {"abc123"}
    engine.dispose()
