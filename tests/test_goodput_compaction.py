"""The goodput ledger does not grow by 96 rows a day per run and bucket for ever: slots older than a day
are merged into one row an hour, older than a week into one a day, and every period made of whole
cells (a report's days and weeks in its time zone, an hour of the last week) sums to the same seconds
as before; the recent day keeps its quarter hours."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import func, select

from monitor.storage import bulk, goodput_repo
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import GoodputSlot, Run
from monitor.storage.runs_repo import RUN_COLUMNS

DAY, HOUR, SLOT = 86400.0, 3600.0, 900.0
NOW = 1_780_000_000.0 // DAY * DAY + 13 * HOUR + 7 * 60  # an afternoon, not on a slot boundary
RUNS = ("wandb:lab/llm/a", "wandb:lab/llm/b")


def fill(sessions, days: int) -> None:
    rng = random.Random(7)
    rows = {}
    start = (NOW - days * DAY) // SLOT * SLOT
    for run in RUNS:
        t = start
        while t < NOW:
            for bucket in ("productive", "stalled", "paused"):
                if rng.random() < 0.7:
                    rows[(run, t, bucket)] = round(rng.uniform(0, 300), 3)
            t += SLOT
    with sessions.begin() as s:
        base = dict.fromkeys(RUN_COLUMNS)
        runs = [
            {
                **base,
                "id": r,
                "watch": "w",
                "source": "wandb",
                "first_seen_at": start,
                "restarts": 0,
                "labels": {},
                "stats": {},
            }
            for r in RUNS
        ]
        bulk.upsert(s, Run.__table__, runs, ("id",), ("watch",))
        s.execute(
            GoodputSlot.__table__.insert(),
            [{"run_id": r, "slot": t, "bucket": b, "seconds": v} for (r, t, b), v in rows.items()],
        )


def sums(sessions, start: float, end: float) -> dict:
    with sessions() as s:
        got = goodput_repo.bucket_sums(s, list(RUNS), start, end)
    return {r: {b: round(v, 6) for b, v in by.items()} for r, by in got.items()}


def count(sessions) -> int:
    with sessions() as s:
        return s.scalar(select(func.count()).select_from(GoodputSlot))


@pytest.mark.parametrize(("zone", "offset"), [("UTC", 0.0), ("Asia/Kolkata", 5.5 * HOUR)])  # half an hour off
def test_old_slots_merge_and_every_whole_period_sums_as_before(migrated_url, zone, offset):
    sessions = make_sessionmaker(make_engine(migrated_url))
    fill(sessions, days=20)
    midnight = (NOW + offset) // DAY * DAY - offset  # the zone's last midnight
    periods = [(0.0, NOW + DAY)]  # everything
    periods += [(midnight - k * DAY, midnight - (k - 1) * DAY) for k in range(1, 20)]  # the zone's days
    periods += [(midnight - 14 * DAY, midnight - 7 * DAY), (midnight - 7 * DAY, midnight)]  # two weeks
    hour = (NOW - 2 * DAY + offset) // HOUR * HOUR - offset  # one of the zone's hours, two days ago
    periods += [(hour, hour + HOUR), (NOW - 6 * HOUR, NOW)]  # and quarter hours of the last day
    periods += [(NOW // SLOT * SLOT - 3 * SLOT, NOW // SLOT * SLOT - 2 * SLOT)]
    before, rows = [sums(sessions, a, b) for a, b in periods], count(sessions)

    removed = goodput_repo.compact_now(sessions, NOW, zone)  # as the scheduler runs it, every hour

    assert [sums(sessions, a, b) for a, b in periods] == before
    assert count(sessions) == rows - removed
    # 20 days: the last day as quarter hours, 6 days as hours, 13 as days (per run and bucket)
    assert count(sessions) < rows / 4
    with sessions.begin() as s:
        assert goodput_repo.compact(s, NOW, offset) == 0  # done: nothing more to merge
