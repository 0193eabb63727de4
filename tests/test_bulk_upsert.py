"""The batched upsert the write path uses reads back exactly what was written, on SQLite and on
PostgreSQL, both ways the rows go there (one statement of column arrays; binary COPY into a scratch
table, then one statement): text, integers, floats, epoch timestamps, JSON documents, bytes and NULLs; a
second upsert updates only the named columns; of two rows with the same key in one call the last one
wins; two upserts of a table in one transaction each write their own rows. Rows go as dicts or as
tuples of named columns (the chart buckets and run rows of a batch), with the same result."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from monitor.storage import bulk
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import RuleState, Run
from monitor.storage.runs_repo import RUN_COLUMNS

T0 = 1_780_000_000.123456


def run_row(i: int, **over) -> dict:
    row = {c: None for c in RUN_COLUMNS}
    row.update(
        id=f"wandb:lab/llm/r{i}",
        watch="hero",
        source="wandb",
        name=f"r{i}",
        labels={"team": "pretrain", "gpus": 512},
        last_step=10_000_000_000 + i,  # beyond 32 bits
        last_step_at=T0 + i,
        first_seen_at=T0,
        restarts=i,
        stats={"latest": {"loss": 2.5, "lr": None}, "recent": [[T0, 1], [T0 + 15, 3]], "note": "ünïcode"},
    )
    row.update(over)
    return row


@pytest.fixture(params=["copy", "arrays"])
def path(request, monkeypatch) -> str:
    """Which way the rows go on PostgreSQL (``bulk.COPY_FROM``: COPY from that many rows on)."""
    monkeypatch.setattr(bulk, "COPY_FROM", 1 if request.param == "copy" else 10**9)
    return request.param


@pytest.fixture(params=["dicts", "tuples"])
def shape(request) -> str:
    return request.param


def upsert(s, table, rows, keys, update, shape):  # noqa: ANN001, ANN201
    if shape == "dicts":
        return bulk.upsert(s, table, rows, keys, update)
    columns = tuple(rows[0])
    return bulk.upsert(s, table, [tuple(r[c] for c in columns) for r in rows], keys, update, columns=columns)


def test_rows_read_back_as_written_and_updates_touch_only_the_named_columns(migrated_url, path, shape):
    sessions = make_sessionmaker(make_engine(migrated_url))
    update = [c for c in RUN_COLUMNS if c not in ("id", "first_seen_at", "labels")]
    with sessions.begin() as s:
        upsert(s, Run.__table__, [run_row(1), run_row(2, state="running")], ("id",), update, shape)
        upsert(
            s,
            RuleState.__table__,
            [{"run_id": "wandb:lab/llm/r1", "version": 3, "saved_at": T0, "data": b"\x00\xffzlib"}],
            ("run_id",),
            ("version", "saved_at", "data"),
            shape,
        )
    with sessions() as s:
        r1 = s.get(Run, "wandb:lab/llm/r1")
        assert (r1.name, r1.last_step, r1.restarts, r1.state, r1.source_error) == (
            "r1",
            10_000_000_001,
            1,
            None,
            None,
        )
        assert abs(r1.last_step_at - (T0 + 1)) < 1e-5 and abs(r1.first_seen_at - T0) < 1e-5
        assert r1.labels == {"team": "pretrain", "gpus": 512}
        assert r1.stats == run_row(1)["stats"]
        assert s.get(Run, "wandb:lab/llm/r2").state == "running"
        assert s.get(RuleState, "wandb:lab/llm/r1").data == b"\x00\xffzlib"

    later = [
        run_row(1, labels={"changed": True}, state="crashed", first_seen_at=T0 + 99),
        run_row(1, labels={"changed": True}, state="finished", first_seen_at=T0 + 99, last_step=7),
    ]
    with sessions.begin() as s:
        upsert(s, Run.__table__, later, ("id",), update, shape)
    with sessions() as s:
        r1 = s.get(Run, "wandb:lab/llm/r1")
        assert (r1.state, r1.last_step) == ("finished", 7), "the last row of a key wins"
        assert r1.labels == {"team": "pretrain", "gpus": 512}, "a column not named for update is kept"
        assert abs(r1.first_seen_at - T0) < 1e-5
        assert len(list(s.scalars(select(Run.id)))) == 2


def test_two_upserts_of_a_table_in_one_transaction_write_their_own_rows(migrated_url, path, shape):
    sessions = make_sessionmaker(make_engine(migrated_url))
    update = [c for c in RUN_COLUMNS if c not in ("id", "first_seen_at")]
    with sessions.begin() as s:
        upsert(s, Run.__table__, [run_row(i, state="running") for i in range(100)], ("id",), update, shape)
        upsert(s, Run.__table__, [run_row(i, state="crashed") for i in range(50, 80)], ("id",), update, shape)
    with sessions.begin() as s:  # after a commit, the scratch table holds nothing of the last one
        upsert(
            s, Run.__table__, [run_row(i, state="finished") for i in range(90, 95)], ("id",), update, shape
        )
    with sessions() as s:
        states = {r.id: r.state for r in s.scalars(select(Run))}
    assert len(states) == 100
    want = {i: "crashed" if 50 <= i < 80 else "finished" if 90 <= i < 95 else "running" for i in range(100)}
    assert states == {run_row(i)["id"]: st for i, st in want.items()}


def test_added_columns_accumulate_across_batches_and_runs_as_the_goodput_ledger_needs(migrated_url, path):
    """The goodput ledger of many runs goes in one statement a batch: seconds of a slot already stored
    are added to, not replaced; two runs' drained ledgers in one batch add up per run."""
    from monitor.storage import goodput_repo
    from monitor.storage.goodput_repo import GoodputWrites

    sessions = make_sessionmaker(make_engine(migrated_url))
    with sessions.begin() as s:
        bulk.upsert(s, Run.__table__, [run_row(1), run_row(2)], ("id",), ("state",))
    a, b = "wandb:lab/llm/r1", "wandb:lab/llm/r2"
    for _ in range(3):  # three batches
        with sessions.begin() as s:
            writes = GoodputWrites()
            writes.add(a, {(900.0, "productive"): 10.0, (1800.0, "stalled"): 2.5}, [])
            writes.add(b, {(900.0, "productive"): 1.0}, [])
            writes.add(a, {(900.0, "productive"): 5.0}, [])  # a second poll of a in the same batch
            writes.flush(s)
    with sessions() as s:
        sums = goodput_repo.bucket_sums(s, [a, b], 0.0, 3600.0)
    assert sums[a] == {"productive": 45.0, "stalled": 7.5}
    assert sums[b] == {"productive": 3.0}
