"""How the values of a fleet metric are written for people, per unit: "0.97", "71 °C", "1.9 GB/s".

Units: ``ratio`` (0..1, e.g. SM activity), ``fraction`` (0..1 share of time, e.g. clock slowdown),
``celsius``, ``bytes_per_second``, ``watts``, ``megahertz`` and ``""`` (a plain number).
"""

from __future__ import annotations

import math

# unit -> (what the legend says, the fixed colour range or None for the data's own range)
UNITS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "ratio": ("0–1", (0.0, 1.0)),
    "fraction": ("share of the time", (0.0, 1.0)),
    "celsius": ("°C", None),
    "bytes_per_second": ("bytes/s", None),
    "watts": ("W", None),
    "megahertz": ("MHz", None),
    "": ("", None),
}
KNOWN_UNITS = frozenset(UNITS)

# The smallest difference between two members worth a person's attention, per unit: a reading's
# resolution, not a threshold (a GPU 0.3 °C warmer than the fleet, or a host writing 4 kB/s of logs
# while the others write nothing, is not a culprit).
RESOLUTION: dict[str, float] = {
    "ratio": 0.01,
    "fraction": 0.01,
    "celsius": 1.0,
    "bytes_per_second": 1e6,
    "watts": 5.0,
    "megahertz": 10.0,
}


def resolution(unit: str) -> float:
    return RESOLUTION.get(unit, 0.0)


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _si(v: float, suffix: str) -> str:
    for factor, prefix in _SI:
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{suffix}"
    return f"{v:.3g} {suffix}" if v else f"0 {suffix}"


def fmt(value: float | None, unit: str) -> str:
    """``value`` in ``unit``, short; "—" when there is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if unit in ("ratio", "fraction"):
        return f"{value:.2f}"
    if unit == "celsius":
        return f"{value:.0f} °C"
    if unit == "bytes_per_second":
        return _si(value, "B/s")
    if unit == "watts":
        return f"{value:.0f} W"
    if unit == "megahertz":
        return f"{value:.0f} MHz"
    if value == int(value) and abs(value) < 1e9:
        return f"{int(value):,}"
    return f"{value:.3g}"
