"""What sources produce and the engine consumes: one observation of one run at one time.

The fields are those of the trace format (docs/trace-format.md): a recorded trace is a list of samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

TERMINAL_STATES = frozenset({"crashed", "failed", "killed", "finished"})

# How non-finite numbers are spelled where JSON cannot hold them (W&B history, trace files).
NON_FINITE_WORDS = {
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-inf": -math.inf,
    "-infinity": -math.inf,
}


@dataclass(frozen=True, slots=True)
class Sample:
    t: float  # epoch seconds
    run: str
    step: int | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    state: str | None = None
    source: str | None = None
    labels: Mapping[str, str] | None = None
    source_error: str | None = None


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What a source knows of a run beyond its samples: for discovery and display."""

    run: str
    source: str
    display_name: str | None = None
    state: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    heartbeat_at: float | None = None


def is_finite(value: float | None) -> bool:
    return value is not None and not (math.isnan(value) or math.isinf(value))
