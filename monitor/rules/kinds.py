"""Imports every detector kind so that the registry is complete."""

from monitor.rules import (  # noqa: F401
    absent,
    counter,
    drop,
    non_finite,
    regression,
    restarts,
    spike,
    stall,
    state,
    straggler,
    telemetry,
    threshold,
)
from monitor.rules.base import DETECTORS

__all__ = ["DETECTORS"]
