"""The run page's charts from the panels the packs declare (monitor.rules.panels): per panel, each series
with its transform and band, and the reference lines whose values are known. Nothing here names a
metric: a new pack's panels are drawn like the built-in ones.

A series is the bounded min/max buckets of its metric (monitor.storage.series), as on every chart:
``mean`` is the line, ``min``..``max`` the band (a band declared by the panel replaces the bucket's own:
mean ± a logged standard deviation, or a min and a max metric). ``percent`` scales a share to percent;
``rate`` turns a running total into a rate per second from the newest value and time of each bucket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from monitor.rules.panels import Line, Panel
from monitor.rules.panels import Series as SeriesSpec
from monitor.web.schemas import Bucket, Series

Values = list[float | None]


def _scaled(values: Values, factor: float) -> Values:
    return [None if v is None else v * factor for v in values]


def _rate(buckets: Sequence[Bucket]) -> Values:
    """Per second, between consecutive buckets' newest points; None across a reset or no time passing."""
    out: Values = []
    prev: Bucket | None = None
    for b in buckets:
        value = None
        if b.last is not None and b.t is not None:
            if prev is not None and b.t > prev.t and b.last >= prev.last:  # type: ignore[operator]
                value = (b.last - prev.last) / (b.t - prev.t)  # type: ignore[operator]
            prev = b
        out.append(value)
    return out


def _aligned(buckets: Sequence[Bucket], other: Series | None, pick: str) -> Values:
    """``pick`` (min, max or mean) of ``other``'s bucket at each of ``buckets``' x (metrics logged at
    the same steps share their buckets)."""
    if other is None:
        return [None] * len(buckets)
    at = {b.x0: getattr(b, pick) for b in other.buckets}
    return [at.get(b.x0) for b in buckets]


def series_data(spec: SeriesSpec, data: Series, every: Mapping[str, Series]) -> dict[str, Any]:
    b = data.buckets
    mean: Values = [p.mean for p in b]
    lo: Values = [p.min for p in b]
    hi: Values = [p.max for p in b]
    spread = max((p.count for p in b), default=0) > 1
    band = "bucket"
    if spec.transform == "rate":
        mean = lo = hi = _rate(b)
        spread = False
    elif spec.band is not None and spec.band.std is not None:
        std = _aligned(b, every.get(spec.band.std), "mean")
        lo = [m - s if m is not None and s is not None else None for m, s in zip(mean, std, strict=True)]
        hi = [m + s if m is not None and s is not None else None for m, s in zip(mean, std, strict=True)]
        spread, band = any(s is not None for s in std), "std"
    elif spec.band is not None and spec.band.min is not None and spec.band.max is not None:
        lo = _aligned(b, every.get(spec.band.min), "min")
        hi = _aligned(b, every.get(spec.band.max), "max")
        spread, band = any(v is not None for v in hi), "range"
    earlier = [] if spec.transform == "rate" else data.earlier  # a rate across attempts means nothing
    before: Values = [p.mean for p in earlier]
    if spec.transform == "percent":
        mean, lo, hi = _scaled(mean, 100.0), _scaled(lo, 100.0), _scaled(hi, 100.0)
        before = _scaled(before, 100.0)
    return {
        "metric": spec.metric,
        "label": spec.label or spec.metric,
        "axis": spec.axis,
        "xaxis": data.axis,
        "x": [p.x0 for p in b],
        "t": [p.t for p in b],
        "min": lo,
        "max": hi,
        "mean": mean,
        "spread": spread,  # a band is drawn: min..max of the bucket's steps, or the declared band
        "band": band,
        # the steps a rewind redid, as first logged: drawn greyed beside the redone ones
        "earlier": {"x": [p.x0 for p in earlier], "t": [p.t for p in earlier], "mean": before},
    }


def line_value(
    line: Line, every: Mapping[str, Series], references: Mapping[str, float], figures: Mapping[str, Any]
) -> float | None:
    if line.rule is not None:
        value = (figures.get(line.rule) or {}).get(line.figure)
        return float(value) if isinstance(value, int | float) else None
    if line.setting is not None:
        return references.get(line.setting)
    top = every.get(line.highest_of or "")
    if top is None:
        return None
    when = every.get(line.when) if line.when else None
    gate = {b.x0: b.max for b in when.buckets} if when is not None else None
    if line.when is not None and gate is None:
        return None  # the condition's metric is not logged: the line cannot be told
    highs = [b.max for b in top.buckets if b.max is not None and (gate is None or (gate.get(b.x0) or 0) > 0)]
    return max(highs) if highs else None


def panel_charts(
    panels: Sequence[Panel],
    every: Mapping[str, Series],
    references: Mapping[str, float],
    figures: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The charts of the panels that have data, in order; a line is drawn once its value is known."""
    charts = []
    for panel in panels:
        series = [
            series_data(spec, data, every)
            for spec in panel.series
            if (data := every.get(spec.metric)) is not None and data.buckets
        ]
        if not series:
            continue  # the run does not log it (e.g. the policy lag of a synchronous trainer)
        lines = []
        for line in panel.lines:
            value = line_value(line, every, references, figures)
            if value is not None:
                lines.append({"label": line.label, "value": value, "axis": line.axis})
        charts.append(
            {
                "id": f"chart-{panel.id}",
                "panel": panel.id,
                "title": panel.title,
                "unit": panel.unit,
                "right_unit": panel.right_unit,
                "log": panel.log,
                "series": series,
                "lines": lines,
                "spread": any(s["spread"] for s in series),
            }
        )
    return charts


def panel_metrics(panels: Sequence[Panel]) -> list[str]:
    """Every metric the panels read: what the run page loads."""
    return list(dict.fromkeys(m for p in panels for m in p.metrics()))
