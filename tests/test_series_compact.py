"""Many chart series compacted at once (monitor/storage/series_compact.py) leave exactly what compacting
them one at a time leaves (series._compact): the same buckets, widths and counts, spikes kept, the
newest ``last`` kept, on SQLite and on the real PostgreSQL; and 2,000 series that grew past their
bound in the same poll are all brought within it (2 statements, not 4 round trips a series)."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

from sqlalchemy import insert, select

from monitor.storage import migrate
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import SeriesBucket
from monitor.storage.series import ROW, _compact
from monitor.storage.series_compact import compact_many

T0 = 1_700_000_000.0
MAX = 16


@dataclass
class Meta:
    run_id: str
    metric: str
    width: float
    buckets: int


def rows(run_id: str, metric: str, rng: random.Random, n: int, width: float) -> list[dict]:
    out = []
    x = rng.choice([0.0, 3.0, 1000.0])
    for i in range(n):
        x += width * rng.choice([1, 1, 1, 2, 5])  # gaps: a sparse series
        lo = rng.uniform(0, 10)
        out.append(
            {
                "run_id": run_id,
                "metric": metric,
                "x0": x,
                "min": None if i % 7 == 3 else lo,
                "max": None if i % 7 == 3 else lo + rng.uniform(0, 5) + (100.0 if i == 11 else 0.0),
                "sum": lo * 2,
                "count": 2,
                "nonfinite": i % 5 == 0,
                "last": lo + 1,
                # no time for some, ties for others
                "t_last": None if metric == "m0" or i % 9 == 4 else T0 + (i // 2) * 10.0,
            }
        )
    return out


def stored(session) -> list[tuple]:  # noqa: ANN001
    got = session.scalars(
        select(SeriesBucket).order_by(SeriesBucket.run_id, SeriesBucket.metric, SeriesBucket.x0)
    )
    return [tuple(getattr(b, c) for c in ROW) for b in got]


def fill(url: str, n_series: int, seed: int = 7) -> tuple[object, list[Meta]]:
    migrate.upgrade(url)
    engine = make_engine(url)
    rng = random.Random(seed)
    metas, all_rows = [], []
    for k in range(n_series):
        run_id, metric, width = f"run-{k // 3}", f"m{k % 3}", rng.choice([1.0, 0.5, 4.0])
        r = rows(run_id, metric, rng, MAX + 1 + rng.randrange(3 * MAX), width)
        all_rows += r
        metas.append(Meta(run_id, metric, width, len(r)))
    with make_sessionmaker(engine)() as s:
        s.execute(insert(SeriesBucket), all_rows)
        s.commit()
    return engine, metas


def test_many_at_once_leave_what_one_at_a_time_leaves(db_url):
    engine, metas = fill(db_url, 30)
    fresh = [Meta(m.run_id, m.metric, m.width, m.buckets) for m in metas]  # (``_compact`` updates metas)
    sessions = make_sessionmaker(engine)
    with sessions() as s:
        before = stored(s)
        for m in metas:
            _compact(s, m, MAX)
            s.flush()
        one_by_one = stored(s)
        s.rollback()
    with sessions() as s:
        assert stored(s) == before
        compact_many(s, fresh, MAX)
        s.flush()
        assert stored(s) == one_by_one
        assert [(m.width, m.buckets) for m in fresh] == [(m.width, m.buckets) for m in metas]
    assert len(one_by_one) < len(before) and any(r[4] is not None and r[4] > 100 for r in one_by_one)
    assert any(r[9] is None for r in one_by_one) and any(r[9] is not None for r in one_by_one)
    engine.dispose()


def test_two_thousand_series_that_grew_together_are_all_brought_within_bound(pg_url):
    engine, metas = fill(pg_url, 2000, seed=3)
    sessions = make_sessionmaker(engine)
    with sessions() as s:
        t0 = time.perf_counter()
        compact_many(s, metas, MAX)
        s.commit()
        took = time.perf_counter() - t0
    with sessions() as s:
        per = {}
        for r in stored(s):
            per[(r[0], r[1])] = per.get((r[0], r[1]), 0) + 1
    assert max(per.values()) <= MAX // 2 and len(per) == 2000
    assert all(math.isfinite(m.width) for m in metas)
    print(f"2,000 series compacted at once: {took:.2f} s")
    engine.dispose()
