"""The chart series the engine folds in memory (``series_tails``: one pass for points at or after the
buckets it holds, a read of the stored buckets for a rewind or a run new to the process) store exactly
what ``series.ingest_run`` stores for the same points: min, max, sum, count, NaNs and the last value of
each bucket, through rewinds (a restore from a checkpoint logs old steps again: the buckets of their
first attempt move aside, the same in both), compactions and a restart of the process, on SQLite and
PostgreSQL."""

from __future__ import annotations

import csv
import math
import random

from monitor.storage import series_attempts
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Run
from monitor.storage.series import Point, ingest_run, read_series
from monitor.storage.series_tails import SeriesTails, SeriesWrites
from tests.conftest import REAL_DATA


def real_losses() -> list[float]:
    with (REAL_DATA / "llmc_gpt2_124m_steps.csv").open() as f:
        return [float(r["loss"]) for r in csv.DictReader(f) if r["kind"] == "train"]


def polls(seed: int) -> list[dict[str, tuple[str, list[Point]]]]:
    """Polls of a run that logs the real loss per step and a step-less metric, restarts twice from an
    earlier checkpoint (its steps logged again), and sends a NaN now and then."""
    rnd, losses, out = random.Random(seed), real_losses(), []
    step, t = 0, 1_780_000_000.0
    while step < 1500:
        loss, clock = [], []
        for _ in range(rnd.randint(1, 12)):
            value = losses[step % len(losses)] if rnd.random() > 0.01 else math.nan
            loss.append(Point(float(step), value, t))
            clock.append(Point(t, rnd.random(), t))
            step, t = step + 1, t + rnd.uniform(5, 15)
        out.append({"train/loss": ("step", loss), "host/mem": ("time", clock)})
        if len(out) in (40, 90):
            step -= rnd.randint(20, 120)  # restored from a checkpoint: these steps come again
    return out


def buckets(s, run_id: str, metric: str) -> list[tuple]:  # noqa: ANN001
    _, views = read_series(s, run_id, metric)
    return [(b.x0, b.x1, b.min, b.max, b.count, b.nonfinite, b.last, b.t) for b in views]


def test_folded_in_memory_as_stored_by_ingest(migrated_url):
    sessions = make_sessionmaker(make_engine(migrated_url))
    tails, restart_at = SeriesTails(max_buckets=64), 70
    with sessions.begin() as s:
        s.add_all([Run(id=r, watch="w", source="sim", first_seen_at=1.78e9) for r in ("tails", "plain")])
    for i, poll in enumerate(polls(seed=7)):
        if i == restart_at:
            tails = SeriesTails(max_buckets=64)  # a new process: nothing in memory
        with sessions.begin() as s:
            out = SeriesWrites()
            tails.fold(s, "tails", poll, out)
            out.flush(s)
            ingest_run(s, "plain", poll, max_buckets=64)
    with sessions() as s:
        for metric in ("train/loss", "host/mem"):
            got, want = buckets(s, "tails", metric), buckets(s, "plain", metric)
            assert got == want, metric
            assert len(want) <= 64 and sum(b[4] + b[5] for b in want) > 1000
            assert any(b[5] for b in buckets(s, "plain", "train/loss")), "NaNs are counted"
        earlier = {r: series_attempts.read(s, r, ["train/loss", "host/mem"]) for r in ("tails", "plain")}
        assert earlier["tails"] == earlier["plain"], "the same earlier attempts moved aside"
        assert 4 <= len(earlier["plain"]["train/loss"]) <= 64 * 2, "the steps the rewinds redid"
        assert "host/mem" not in earlier["plain"], "a time-axis series never goes back"


def test_whole_lists_fold_as_point_by_point(monkeypatch):
    """Many points of a series in one poll fold as whole lists (a bucket each, or all in one bucket):
    the same floats, counts, last values and memory as one point at a time, through NaNs, infinities,
    -0.0, equal values, equal times and times going back."""
    from monitor.storage import series_tails

    def run(bulk: int, seed: int) -> list:
        monkeypatch.setattr(series_tails, "BULK", bulk)
        rnd, tails, seen = random.Random(seed), SeriesTails(max_buckets=10**9), []
        tails._runs["r"] = {}
        width, step, t = rnd.choice([1.0, 3.0, 64.0]), 0, 1.78e9
        for i in range(40):
            n = rnd.randint(1, 14)
            values = [
                rnd.choice([math.nan, math.inf, -0.0, 0.0, 1.0, rnd.random(), -rnd.random()])
                for _ in range(n)
            ]
            if rnd.random() < 0.5:
                values = [rnd.random() for _ in range(n)]  # all finite: the whole-list paths
            times = [t + j for j in range(n)]  # in time order (the whole-list paths), or not
            if rnd.random() < 0.3:
                times = [t + j * rnd.choice([1, 1, 0, -1]) for j in range(n)]
            poll = {
                "m": (
                    "step",
                    [
                        Point(float(step + j), v, u)
                        for j, (v, u) in enumerate(zip(values, times, strict=True))
                    ],
                )
            }
            out = SeriesWrites()
            if i == 0:
                tails._runs["r"]["m"] = series_tails._new_series("r", "m", "step")
                tails._runs["r"]["m"].width = width
            tails.fold(None, "r", poll, out)
            ser = tails._runs["r"]["m"]
            rows = [repr(series_tails._bucket_row(b)) for b in out.buckets.values()]
            seen.append((sorted(rows), ser.buckets, ser.points, ser.known_from, sorted(ser.tail)))
            step, t = step + n, t + n + 5
        return seen

    for seed in range(60):
        assert run(1, seed) == run(10**9, seed), seed


def test_many_buckets_at_once_as_stored_by_ingest(migrated_url):
    """A batch of more than ``bulk.COPY_FROM`` chart rows (PostgreSQL: binary ``COPY``, the rows as they
    are) stores what ``ingest_run`` stores."""
    sessions = make_sessionmaker(make_engine(migrated_url))
    with sessions.begin() as s:
        s.add_all([Run(id=r, watch="w", source="sim", first_seen_at=1.78e9) for r in ("tails", "plain")])
    losses, t = real_losses(), 1_780_000_000.0
    for first in (0, 100):
        poll = {
            "train/loss": ("step", [Point(float(i), losses[i], t + i) for i in range(first, first + 100)]),
            "gpu/util": (
                "step",
                [Point(float(i), math.nan if i % 7 == 0 else 50.0, t + i) for i in range(first, first + 100)],
            ),
        }
        with sessions.begin() as s:
            out = SeriesWrites()
            tails = SeriesTails()
            tails.fold(s, "tails", poll, out)
            out.flush(s)
            ingest_run(s, "plain", poll)
    with sessions() as s:
        for metric in ("train/loss", "gpu/util"):
            got, want = buckets(s, "tails", metric), buckets(s, "plain", metric)
            assert got == want and len(want) == 200, metric


def test_runs_that_grow_together_are_compacted_a_few_a_batch_and_all_end_within_bound(
    migrated_url, monkeypatch
):
    """A sweep's runs grow past the bound in the same poll: a batch compacts at most COMPACT_PER_BATCH
    series (here 3), the others at their next poll; every series ends within the bound, and stores what
    ``ingest_run`` stores."""
    from monitor.storage import series_tails

    monkeypatch.setattr(series_tails, "COMPACT_PER_BATCH", 3)
    sessions = make_sessionmaker(make_engine(migrated_url))
    runs = [f"r{i}" for i in range(8)]
    with sessions.begin() as s:
        s.add_all([Run(id=r, watch="w", source="sim", first_seen_at=1.78e9) for r in [*runs, "plain"]])
    tails, t, compacted = SeriesTails(max_buckets=16), 1_780_000_000.0, []
    for step in range(0, 40, 2):
        poll = {"loss": ("step", [Point(float(step + k), 1.0 + step + k, t + k) for k in range(2)])}
        with sessions.begin() as s:
            out = SeriesWrites()
            for r in runs:
                tails.fold(s, r, poll, out)
            out.flush(s)
            compacted.append(out.compactions)
            ingest_run(s, "plain", poll, max_buckets=16)
        t += 10
    assert max(compacted) == 3 and sum(compacted) >= len(runs), compacted
    with sessions() as s:
        want = buckets(s, "plain", "loss")
        for r in runs:
            got = buckets(s, r, "loss")
            assert len(got) <= 16 + 2 * 2  # (a run waiting for its turn: a poll or two over)
            assert [b[4] for b in got] and sum(b[4] for b in got) == 40
        assert len(want) <= 16
