"""Durations in config files and API bodies: the pydantic type. Parsing and formatting are
``alerts.durations``, the one place for both."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

from alerts.durations import format_duration, parse_duration

__all__ = ["Duration", "format_duration", "parse_duration"]

Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
