"""A small PNG of one metric around an alert: the series, its threshold line and the event marked.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend switch, so it is
safe to call from the outbox's worker threads). matplotlib is imported on first use: a process that
never draws pays nothing, and a missing or broken matplotlib surfaces as an exception the caller
(the Slack notifier) catches, so a plot can never hold up the alert text.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

WIDTH_PX = 720
HEIGHT_PX = 320
DPI = 100

SERIES_COLOR = "#1f77b4"
BAND_COLOR = "#aec7e8"
THRESHOLD_COLOR = "#d62728"  # red: the line the alert compares against
EVENT_COLOR = "#ff7f0e"  # orange: where the alert fired


def _floats(values: Sequence[Any]) -> list[float]:
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = math.nan  # a gap (None, "NaN", junk) is drawn as a break in the line
        out.append(f if math.isfinite(f) else math.nan)
    return out


def _nearest(xs: Sequence[float], x: float) -> int:
    return min(range(len(xs)), key=lambda i: abs(xs[i] - x))


def render_metric_png(
    metric: str,
    series: Mapping[str, Any],
    *,
    title: str | None = None,
    width_px: int = WIDTH_PX,
    height_px: int = HEIGHT_PX,
    dpi: int = DPI,
) -> bytes:
    """PNG bytes of ``series`` = {"x": [...], "y": [...], "axis": "step"|"time", "event_x": number|None,
    "threshold": number|None, "y_min": [...] (optional: a min..max band under the line)}.

    ``axis == "time"``: x are epoch seconds (drawn in UTC). Raises ValueError when there is nothing to
    draw (no finite point); any other failure is matplotlib's own exception.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    x_raw, y = _floats(series.get("x") or []), _floats(series.get("y") or [])
    n = min(len(x_raw), len(y))
    x_raw, y = x_raw[:n], y[:n]
    keep = [i for i in range(n) if not math.isnan(x_raw[i])]
    x_raw, y = [x_raw[i] for i in keep], [y[i] for i in keep]
    if not any(not math.isnan(v) for v in y):
        raise ValueError(f"no finite values of {metric!r} to plot")
    axis = series.get("axis") or "step"
    as_time = axis == "time"

    def tx(v: float) -> Any:
        return datetime.fromtimestamp(v, tz=UTC) if as_time else v

    x = [tx(v) for v in x_raw]

    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)

    y_min = series.get("y_min")
    if y_min is not None and len(y_min) >= n:
        low_all = _floats(y_min)
        low = [low_all[i] for i in keep]
        ax.fill_between(x, low, y, color=BAND_COLOR, alpha=0.5, linewidth=0, label="min..max")
    ax.plot(x, y, color=SERIES_COLOR, linewidth=1.4, label=metric)

    threshold = series.get("threshold")
    if threshold is not None and math.isfinite(float(threshold)):
        ax.axhline(
            float(threshold),
            color=THRESHOLD_COLOR,
            linestyle="--",
            linewidth=1.4,
            label=f"threshold {float(threshold):.4g}",
        )

    event_x = series.get("event_x")
    if event_x is not None and x_raw:
        ex = float(event_x)
        ax.axvline(tx(ex), color=EVENT_COLOR, linestyle="-.", linewidth=1.2, alpha=0.8, label="alert")
        i = _nearest(x_raw, ex)
        if not math.isnan(y[i]):
            ax.plot([x[i]], [y[i]], marker="o", markersize=7, color=EVENT_COLOR, linestyle="none")

    label = title or metric
    ax.set_title(label if len(label) <= 50 else label[:49] + "…", fontsize=10, loc="left")
    ax.set_xlabel("time (UTC)" if as_time else "step", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.legend(
        fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=4, frameon=False, borderaxespad=0.2
    )
    if as_time:
        import matplotlib.dates as mdates

        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    else:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    fig.tight_layout(pad=0.6)

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()
