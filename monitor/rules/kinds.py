"""Imports every detector kind so that the registry is complete."""

from monitor.rules import (  # noqa: F401
    absent,
    counter,
    drop,
    ended,
    non_finite,
    regression,
    restarts,
    slowdown,
    spike,
    stall,
    state,
    telemetry,
    threshold,
    trend,
)
from monitor.rules.base import DETECTORS

__all__ = ["DETECTORS"]
