"""Durations in config files and API bodies: the pydantic type. Parsing, formatting and the type itself
are ``alerts.durations``, the one place for all three (receivers' config models in ``alerts`` use it)."""

from __future__ import annotations

from alerts.durations import Duration, format_duration, parse_duration

__all__ = ["Duration", "format_duration", "parse_duration"]
