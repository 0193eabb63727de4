"""The fleet raster in the database (SQLite and the real PostgreSQL): bounded however long the run and
however many members, min and max surviving every merge, means weighted, windows read in one query."""

from __future__ import annotations

import math

import numpy as np
from sqlalchemy import func, select

from monitor.fleet.frame import FleetFrame
from monitor.storage import raster, raster_read
from monitor.storage.models import FleetColumn

T0 = 118_666_666 * 15.0  # on the 15 s grid, as a range query's timestamps are
STEP = 15.0
MEMBERS = tuple((f"node-{h}", str(g)) for h in range(3) for g in range(4))  # 12 members
LIMITS = raster.RasterLimits(recent=600.0, columns=16, max_members=10)  # the last 2 members are over


def value(member: int, t: float) -> float:
    if member == 3 and T0 + 5 * 3600 <= t < T0 + 5 * 3600 + STEP:
        return 9.0  # one 15 s spike on one GPU, hours before the end
    return float(member)


def frame(k0: int, n: int) -> FleetFrame:
    times = tuple(T0 + STEP * k for k in range(k0, k0 + n))
    values = tuple(tuple(value(i, t) for t in times) for i in range(len(MEMBERS)))
    return FleetFrame("r", "sm_active", "SM active", "ratio", "GPU", STEP, MEMBERS, times, values)


def test_two_days_fit_the_bound_and_keep_their_extremes(fleet_db):
    hour = int(3600 / STEP)
    for k0 in range(0, 48 * hour, hour):  # two days, an hour a poll
        with fleet_db.begin() as s:
            raster.ingest(s, "r", [frame(k0, hour)], LIMITS)
    with fleet_db() as s:
        (meta,) = raster_read.rasters_of(s, "r")
        stored = s.scalar(select(func.count()).select_from(FleetColumn))
        assert meta.coarse <= LIMITS.columns and meta.fine <= 40 + 4
        assert stored == meta.fine + meta.coarse
        assert len(meta.members) == 10, "members over max_members are not stored"
        assert raster_read.stored_bytes(s, "r") == stored * 10 * 16
        view = raster_read.read(s, "r", "sm_active")
        assert view.spans[0][0] <= T0 and view.spans[-1][1] >= T0 + 48 * 3600 - STEP
        assert all(a[1] <= b[0] for a, b in zip(view.spans, view.spans[1:], strict=False)), "no overlap"
        maxes = np.nanmax(np.stack([c.values("max", 10) for c in view.columns]), axis=0)
        means = [c.values("mean", 10) for c in view.columns]
        assert maxes[3] == 9.0, "a 15 s spike survives two days of merging"
        assert np.allclose(np.nanmean(np.stack(means), axis=0)[[0, 5, 9]], [0.0, 5.0, 9.0])
        merged = raster_read.read(s, "r", "sm_active", max_columns=8)
        assert len(merged.columns) <= 8 and max(c.values("max", 10)[3] for c in merged.columns) == 9.0


def test_a_window_is_every_members_mean_over_it(fleet_db):
    with fleet_db.begin() as s:
        raster.ingest(s, "r", [frame(0, 40)], LIMITS)
        late = frame(40, 8)
        late = FleetFrame(
            **{**late.__dict__, "values": tuple(tuple(v + 1.0 for v in row) for row in late.values)}
        )
        raster.ingest(s, "r", [late], LIMITS)
    with fleet_db() as s:
        (view,) = raster_read.window(s, "r", T0 + 40 * STEP, T0 + 48 * STEP)
        assert view.members[:2] == [("node-0", "0"), ("node-0", "1")]
        assert view.columns[0].means(10)[:3] == [1.0, 2.0, 3.0]
        assert raster_read.window(s, "nope", T0, T0 + 60) == []
        members, columns = raster_read.fine_columns(s, "r", "sm_active", T0 + 44 * STEP)
        assert len(members) == 10 and [t for t, _ in columns] == [T0 + k * STEP for k in range(44, 48)]
        assert not any(math.isnan(v) for _, vs in columns for v in vs)
