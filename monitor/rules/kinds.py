"""Imports every detector kind so that the registry is complete."""

from monitor.rules import stall  # noqa: F401
from monitor.rules.base import DETECTORS

__all__ = ["DETECTORS"]
