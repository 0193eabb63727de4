"""The on-call actions' request and response models (acknowledge, silence): what the API and the
dashboard's forms take, checked here at the edge (plain text, matchers within budget, times)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from alerts.routing import Matcher, over_budget
from monitor.durations import parse_duration
from monitor.web.schemas import epoch_seconds, plain_text


class AckIn(BaseModel):
    by: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="with the automation token: who the script acts for (recorded as `automation (by)`); "
        "a person's own token or sign-in names them, and this is ignored",
    )
    comment: str | None = Field(None, max_length=2000)

    @field_validator("by")
    @classmethod
    def _by(cls, v: str | None) -> str | None:
        return None if v is None else plain_text(v)

    @field_validator("comment")
    @classmethod
    def _comment(cls, v: str | None) -> str | None:
        return None if v is None else plain_text(v, multiline=True)


class SilenceIn(BaseModel):
    """Mute alerts whose labels match every matcher, for ``duration`` or until ``ends_at``."""

    matchers: list[str] = Field(
        min_length=1,
        max_length=20,
        description='label matchers as in Alertmanager: ["run=hero-a", "alertname=~progress_.*"]; RE2 '
        "regexes, each matcher at most 1024 characters",
    )
    duration: str | float | None = Field(None, description="e.g. 2h, 30m, or seconds")
    ends_at: str | float | None = Field(None, description="ISO 8601 time or epoch seconds (2000 to 2100)")
    starts_at: str | float | None = Field(None, description="default: now")
    created_by: str | None = Field(
        None, min_length=1, max_length=200, description="as `by` of an acknowledgement"
    )
    comment: str = Field("", max_length=2000)

    @field_validator("matchers")
    @classmethod
    def _matchers(cls, v: list[str]) -> list[str]:
        # ValueError -> 422 with the matcher's own message (length, characters, regex, its cost)
        if (too_costly := over_budget([Matcher.parse(m) for m in v])) is not None:
            raise ValueError(too_costly)
        return [m.strip() for m in v]

    @field_validator("duration", "starts_at", "ends_at", mode="before")
    @classmethod
    def _not_a_flag(cls, v: object) -> object:
        if isinstance(v, bool):  # JSON true would otherwise pass as 1 (a 1-second silence)
            raise ValueError("expected a duration (2h, or seconds) or a time, not true/false")
        return v

    @field_validator("duration")
    @classmethod
    def _duration(cls, v: str | float | None) -> float | None:
        if v is None:
            return None
        if isinstance(v, str) and len(v) > 40:
            raise ValueError("at most 40 characters, e.g. 2h or 1h30m")
        seconds = parse_duration(v)
        if not math.isfinite(seconds):
            raise ValueError("a silence lasts a finite time (at most 90 days)")
        if seconds <= 0:
            raise ValueError("a silence must last longer than 0s")
        return seconds

    @field_validator("starts_at", "ends_at")
    @classmethod
    def _time(cls, v: str | float | None) -> float | None:
        if isinstance(v, str) and len(v) > 64:
            raise ValueError("at most 64 characters, e.g. 2026-01-31T08:00:00Z")
        return epoch_seconds(v)

    @field_validator("created_by")
    @classmethod
    def _created_by(cls, v: str | None) -> str | None:
        return None if v is None else plain_text(v)

    @field_validator("comment")
    @classmethod
    def _comment(cls, v: str) -> str:
        return plain_text(v, multiline=True)

    @model_validator(mode="after")
    def _one_end(self) -> SilenceIn:
        if (self.duration is None) == (self.ends_at is None):
            raise ValueError("give exactly one of duration (e.g. 2h) or ends_at")
        return self


class SilenceOut(BaseModel):
    id: int
    matchers: list[str]
    starts_at: str
    ends_at: str
    state: Literal["active", "pending", "expired"]
    created_by: str
    comment: str
    created_at: str
    muting: int = Field(description="pending or firing alerts it mutes now")
    notes: list[str] = Field(
        default_factory=list,
        description="when created: what its maker should know (a run matcher that names no watched run)",
    )
