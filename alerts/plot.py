"""A small PNG for an alert (``alerts.views.Plot``), of one of two kinds:

- ``metric``: the metric around the event (by step or time), its min..max band, the threshold as a
  dashed red line and the event marked in orange;
- ``progress``: the step reached against time (UTC), the stall shaded in red from the last step to
  now, and the stall limit drawn as a time span from the last step: where the line stops is where
  the run stopped.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend switch, so it is
safe to call from the outbox's worker threads). matplotlib is imported on first use; any failure is
an exception the caller (a notifier) catches, so a plot can never hold up the alert text.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from alerts.durations import format_duration
from alerts.views import Plot

WIDTH_PX = 720
HEIGHT_PX = 320
DPI = 100

SERIES_COLOR = "#1f77b4"
BAND_COLOR = "#aec7e8"
THRESHOLD_COLOR = "#d62728"  # red: the line the alert compares against, and a stall
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


def _when(v: float) -> datetime:
    return datetime.fromtimestamp(v, tz=UTC)


def render_png(plot: Plot, *, width_px: int = WIDTH_PX, height_px: int = HEIGHT_PX, dpi: int = DPI) -> bytes:
    """PNG bytes of ``plot``. Raises ValueError when there is nothing to draw (no finite point)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    xs, ys = _floats(plot.x), _floats(plot.y)
    n = min(len(xs), len(ys))
    keep = [i for i in range(n) if not math.isnan(xs[i])]
    xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
    if not any(not math.isnan(v) for v in ys):
        raise ValueError(f"no finite values to plot for {plot.title!r}")
    as_time = plot.axis == "time" or plot.kind == "progress"
    x = [_when(v) for v in xs] if as_time else xs

    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    if plot.kind == "progress":
        _progress(ax, plot, x, ys)
    else:
        _metric(ax, plot, x, xs, ys, keep, as_time)
    ax.set_title(plot.title if len(plot.title) <= 60 else plot.title[:59] + "…", fontsize=10, loc="left")
    ax.set_xlabel("time (UTC)" if as_time else "step", fontsize=8)
    if plot.y_label:
        ax.set_ylabel(plot.y_label, fontsize=8)
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


def _metric(
    ax: Any, plot: Plot, x: list, xs: list[float], ys: list[float], keep: list[int], as_time: bool
) -> None:
    if plot.y_min and len(plot.y_min) >= len(plot.y):
        low_all = _floats(plot.y_min)
        ax.fill_between(
            x, [low_all[i] for i in keep], ys, color=BAND_COLOR, alpha=0.5, linewidth=0, label="min..max"
        )
    ax.plot(x, ys, color=SERIES_COLOR, linewidth=1.4, label=plot.y_label or plot.title)
    if plot.threshold is not None and math.isfinite(float(plot.threshold)):
        t = float(plot.threshold)
        ax.axhline(t, color=THRESHOLD_COLOR, linestyle="--", linewidth=1.4, label=f"threshold {t:.4g}")
    if plot.event_x is not None and xs:
        ex = float(plot.event_x)
        ax.axvline(
            _when(ex) if as_time else ex,
            color=EVENT_COLOR,
            linestyle="-.",
            linewidth=1.2,
            alpha=0.8,
            label="alert",
        )
        i = min(range(len(xs)), key=lambda j: abs(xs[j] - ex))
        if not math.isnan(ys[i]):
            ax.plot([x[i]], [ys[i]], marker="o", markersize=7, color=EVENT_COLOR, linestyle="none")


def _progress(ax: Any, plot: Plot, x: list, ys: list[float]) -> None:
    ax.plot(x, ys, color=SERIES_COLOR, linewidth=1.4, drawstyle="steps-post", label="step reached")
    if plot.shade is not None:
        a, b = plot.shade
        ax.axvspan(
            _when(a),
            _when(b),
            color=THRESHOLD_COLOR,
            alpha=0.15,
            linewidth=0,
            label=f"no progress {format_duration(b - a)}",
        )
        if plot.limit is not None and math.isfinite(plot.limit):
            end = _when(a + plot.limit)
            ax.axvline(
                end,
                color=THRESHOLD_COLOR,
                linestyle="--",
                linewidth=1.2,
                label=f"limit {format_duration(plot.limit)}",
            )
            top = max((v for v in ys if not math.isnan(v)), default=0.0)
            ax.annotate(
                "",
                xy=(end, top),
                xytext=(_when(a), top),
                arrowprops={"arrowstyle": "<->", "color": THRESHOLD_COLOR, "linewidth": 1.0},
            )
        ax.plot([_when(b)], [ys[-1]], marker="o", markersize=6, color=EVENT_COLOR, linestyle="none")
