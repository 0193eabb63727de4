"""Chart data: sparklines for the overview (the headline metric of each run's kind: the loss, an RL run's
reward) and the run page's uPlot payload (the panels of the packs in force, panel_data).

Sparklines come from the bounded series, min and max per bucket, so a one-step spike shows as a
thin peak. The page carries each as one short attribute, ``data-spark``: the upper edge then the lower
edge of up to 48 columns, one character a value (64 levels, ``LEVELS``), which static/sparks.js draws
as an SVG band and line (96 characters a run instead of 1.6 KB of SVG path). They are cached per run and
metric and recomputed only when that series has changed (``views.series_versions``), so an overview
of 200 runs refreshed every few seconds reads only the series that moved.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from alerts.model import AlertState
from monitor.rules.panels import Panel
from monitor.storage import views
from monitor.web.dashboard.panel_data import panel_charts
from monitor.web.dashboard.templating import epoch
from monitor.web.schemas import RunDetail

LOSS = "train/loss"
SPARK_COLS = 48  # static/sparks.js draws them 120 x 28 (the viewBox)


LEVELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # level i is LEVELS[i]


@dataclass(frozen=True)
class Spark:
    data: str  # the upper edge then the lower edge, one LEVELS character a column each (0: the lowest)


def _columns(
    rows: Sequence[tuple[float, float | None, float | None]], cols: int
) -> list[tuple[float, float]]:
    rows = [(x, lo, hi) for x, lo, hi in rows if lo is not None and hi is not None]
    if not rows:
        return []
    k = max(1, math.ceil(len(rows) / cols))
    return [
        (min(r[1] for r in rows[i : i + k]), max(r[2] for r in rows[i : i + k]))
        for i in range(0, len(rows), k)
    ]


def sparkline(rows: Sequence[tuple[float, float | None, float | None]]) -> Spark | None:
    cols = _columns(rows, SPARK_COLS)
    if len(cols) < 2:
        return None
    lo = min(c[0] for c in cols)
    hi = max(c[1] for c in cols)
    span = (hi - lo) or 1.0
    top = len(LEVELS) - 1

    def level(v: float) -> str:
        return LEVELS[min(top, max(0, round((v - lo) / span * top)))]

    return Spark("".join(level(c[1]) for c in cols) + "".join(level(c[0]) for c in cols))


Version = tuple[float | None, float]  # views.series_versions


class SparkCache:
    """(run, metric) -> (series version, sparkline). Thread-safe, bounded."""

    def __init__(self, size: int = 5000) -> None:
        self._data: OrderedDict[tuple[str, str], tuple[Version, Spark | None]] = OrderedDict()
        self._lock = threading.Lock()
        self.size = size

    def get_many(self, s: Session, run_ids: list[str], metric: str = LOSS) -> dict[str, Spark | None]:
        versions = views.series_versions(s, metric)
        out: dict[str, Spark | None] = {}
        stale = []
        with self._lock:
            for run in run_ids:
                hit = self._data.get((run, metric))
                if hit is not None and hit[0] == versions.get(run):
                    out[run] = hit[1]
                elif run in versions:
                    stale.append(run)
                else:
                    out[run] = None
        if stale:
            rows = views.series_of_runs(s, stale, metric)
            with self._lock:
                for run in stale:
                    spark = sparkline(rows.get(run, []))
                    self._data[(run, metric)] = (versions[run], spark)
                    self._data.move_to_end((run, metric))
                    out[run] = spark
                while len(self._data) > self.size:
                    self._data.popitem(last=False)
        return out

    def by_headline(self, s: Session, runs: Sequence[tuple[str, str]]) -> dict[str, Spark | None]:
        """run -> the sparkline of its headline metric, for (run id, metric) pairs."""
        by_metric: dict[str, list[str]] = {}
        for run, metric in runs:
            by_metric.setdefault(metric, []).append(run)
        out: dict[str, Spark | None] = {}
        for metric, ids in by_metric.items():
            out.update(self.get_many(s, ids, metric))
        return out


BAND_KINDS = {"stall": "stalled", "restart": "restarting", "down": "down", "startup": "starting"}


def chart_payload(
    run: RunDetail,
    now: float | None = None,
    panels: Sequence[Panel] = (),
    references: Mapping[str, float] | None = None,
    figures: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What static/run_charts.js draws: the panels that have data (per series min/max/mean per bucket, by
    step and by the time each bucket's newest point arrived; reference lines), alert and restart markers,
    and the goodput incidents as time bands (stalls, restarts, downtime) so that on the time axis an
    outage is a shaded gap, not a line that ends."""
    charts = panel_charts(panels, run.series, references or {}, figures or {})
    markers = []
    seen = set()
    for t in run.timeline:
        if (
            t.to_state == AlertState.FIRING
            and t.from_state != AlertState.FIRING
            and (t.rule, t.step) not in seen
        ):
            seen.add((t.rule, t.step))
            markers.append(
                {"step": t.step, "t": epoch(t.at), "kind": "alert", "label": t.rule, "severity": t.severity}
            )
    for inc in run.restart_incidents:
        markers.append(
            {"step": inc.step, "t": epoch(inc.start), "kind": "restart", "label": inc.kind, "severity": ""}
        )
    bands = [
        {
            "kind": inc.kind,
            "label": BAND_KINDS.get(inc.kind, inc.kind),
            "from": epoch(inc.start),
            "to": epoch(inc.end),
        }
        for inc in (run.goodput.incidents if run.goodput else [])
        if inc.seconds_lost > 0
    ]
    return {"charts": charts, "markers": markers, "bands": bands, "now": now}
