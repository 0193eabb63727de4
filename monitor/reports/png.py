"""The report's pictures as PNG, for the Slack post (Slack shows uploaded images, not SVG): goodput as
stacked bars per run and the incident timeline. matplotlib's object API on the Agg canvas, as
``alerts.plot`` (thread-safe, no global backend)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from monitor.reports import words as w
from monitor.reports.model import Report

MAX_RUNS = 30
DPI = 100


def _save(fig) -> bytes:  # noqa: ANN001 - a matplotlib Figure
    fig.tight_layout(pad=0.6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _figure(height_rows: int):  # noqa: ANN202
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 1.4 + 0.32 * max(1, height_rows)), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def goodput_png(r: Report) -> bytes:
    runs = r.runs[:MAX_RUNS]
    fig, ax = _figure(len(runs))
    names = [(x.name or x.run)[:30] for x in runs]
    left = [0.0] * len(runs)
    for b in ("productive", *r.badput_shown()):  # the buckets with any time
        vals = [getattr(x.hours, b) for x in runs]
        ax.barh(names, vals, left=left, color=w.COLORS[b], label=w.BUCKET_WORDS[b])
        left = [a + v for a, v in zip(left, vals, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("hours", fontsize=8)
    ax.set_title(f"Where the hours went: {r.period.label}", fontsize=10, loc="left")
    ax.legend(fontsize=7, ncols=3, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.tick_params(labelsize=8)
    return _save(fig)


def timeline_png(r: Report) -> bytes:
    runs = [x.run for x in r.runs[:MAX_RUNS]]
    lane = {run: i for i, run in enumerate(runs)}
    fig, ax = _figure(len(runs))
    seen: set[str] = set()
    for inc in r.incidents:
        if inc.run not in lane:
            continue
        a = datetime.fromtimestamp(max(inc.start, r.period.start), UTC)
        b = datetime.fromtimestamp(min(inc.end, r.period.end), UTC)
        label = inc.kind if inc.kind not in seen else None
        seen.add(inc.kind)
        ax.barh(
            lane[inc.run],
            (b - a).total_seconds() / 86400 or 0.01,
            left=a,
            height=0.6,
            color=w.COLORS.get(inc.kind, "#333"),
            label=label,
        )
    ax.set_yticks(range(len(runs)), [r_.split("/")[-1][:30] for r_ in runs])
    ax.set_xlim(datetime.fromtimestamp(r.period.start, UTC), datetime.fromtimestamp(r.period.end, UTC))
    ax.set_ylim(len(runs) - 0.5, -0.5)
    ax.set_title("Incidents (UTC), a lane per run", fontsize=10, loc="left")
    if seen:
        ax.legend(fontsize=7, ncols=4, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.tick_params(labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig)
