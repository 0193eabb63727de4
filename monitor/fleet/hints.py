"""Culprit hints: when a stall, telemetry-gone, throughput-drop or straggler alert fires, which members
of the run's fleet stand out over the alert's window, with their values and the fleet median.

Each fleet metric is compared on its own (``score.odd_ones`` on every member's mean over the window);
the odd members are grouped by host (a host's GPUs and its network are one suspect), the hosts ranked
by their farthest score, and the first few named. When nothing stands out, one hint says so, with what
was compared: naming the least-normal member anyway would be a guess.

Stored with the alert as ``{"window": [t0, t1], "items": [hint, ...]}``; a hint is
``{"text", "member", "host", "device", "metric", "label", "unit", "value", "median", "score"}``
(``member`` is None in the verdict that nothing stands out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alerts.durations import format_duration
from monitor.fleet.frame import Member, member_name
from monitor.fleet.score import MOST, Z, odd_ones
from monitor.fleet.units import fmt, resolution

HINTED_KINDS = frozenset({"stall", "telemetry_gone", "drop", "straggler"})
MAX_HOSTS = 3  # hosts named on one alert
PER_HOST = 2  # odd readings named per host
MIN_WINDOW = 60.0  # seconds: a shorter window is widened to this


@dataclass(frozen=True)
class MetricWindow:
    """One fleet metric over an alert's window: every member's mean (NaN: no value in the window)."""

    metric: str
    label: str
    unit: str
    device_word: str | None
    members: Sequence[Member]
    means: Sequence[float]
    level: float  # the metric's magnitude in this run so far (``score.magnitude``)


def window_for(
    kind: str, finding_value: float | None, rule: Any, now: float, longest: float
) -> tuple[float, float]:
    """The span to compare members over: for ``stall`` and ``telemetry_gone`` the later half of the
    stall (or silence) so far (its first minutes still carry the last steps' traffic, and rates lag),
    else the rule's recent window plus its ``for``; at least ``MIN_WINDOW`` and at most ``longest``
    (the raster's fine tier)."""
    if kind in ("stall", "telemetry_gone") and finding_value:
        seconds = float(finding_value) / 2
    else:
        seconds = float(getattr(rule, "window", 0.0) or 0.0) + float(getattr(rule, "for_", 0.0) or 0.0)
    seconds = round(min(max(seconds, MIN_WINDOW), max(longest, MIN_WINDOW)))
    return now - seconds, now


def fleet_hints(windows: Sequence[MetricWindow], t0: float, t1: float) -> dict[str, Any] | None:
    """The hints for one alert, or None when the run has no fleet data in the window."""
    usable = [w for w in windows if any(m == m for m in w.means)]
    if not usable:
        return None
    found: list[dict[str, Any]] = []
    for w in usable:
        sp, odd = odd_ones(w.means, w.level, resolution(w.unit), Z, MOST)
        if sp is None:
            continue
        for i, score in odd:
            member = w.members[i]
            name = member_name(member, w.device_word)
            value, median = fmt(w.means[i], w.unit), fmt(sp.median, w.unit)
            found.append(
                {
                    "text": f"{name}: {w.label} {value}, fleet median {median}",
                    "member": name,
                    "host": member[0],
                    "device": member[1],
                    "metric": w.metric,
                    "label": w.label,
                    "unit": w.unit,
                    "value": _round(w.means[i]),
                    "median": _round(sp.median),
                    "score": round(score, 2),
                }
            )
    items = _pick(found) or [_verdict(usable, t1 - t0)]
    return {"window": [t0, t1], "items": items}


def _pick(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_host: dict[str, list[dict[str, Any]]] = {}
    for h in sorted(found, key=lambda h: -abs(h["score"])):
        by_host.setdefault(h["host"], []).append(h)
    hosts = sorted(by_host.values(), key=lambda hs: -abs(hs[0]["score"]))[:MAX_HOSTS]
    return [h for hs in hosts for h in hs[:PER_HOST]]


def _verdict(windows: Sequence[MetricWindow], seconds: float) -> dict[str, Any]:
    devices: dict[str, int] = {}
    hosts: set[str] = set()
    for w in windows:
        if w.device_word:
            devices[w.device_word] = max(devices.get(w.device_word, 0), len(w.members))
        hosts.update(m[0] for m in w.members)
    what = ", ".join(f"{n:,} {word}s" for word, n in sorted(devices.items()))
    where = f"{what} on {len(hosts):,} hosts" if what else f"{len(hosts):,} hosts"
    text = (
        f"Nothing stands out: {where} read like the fleet median on {len(windows)} fleet metric"
        f"{'s' if len(windows) != 1 else ''} over the last {format_duration(seconds, 2)}"
    )
    return {
        "text": text,
        "member": None,
        "host": None,
        "device": None,
        "metric": None,
        "label": None,
        "unit": None,
        "value": None,
        "median": None,
        "score": None,
    }


def _round(v: float) -> float | None:
    return None if v != v else float(f"{v:.6g}")


def texts(hints: Mapping[str, Any] | None) -> list[str]:
    """The hints' sentences, in order."""
    return [str(h.get("text", "")) for h in (hints or {}).get("items") or []]
