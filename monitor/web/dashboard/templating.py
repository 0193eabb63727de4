"""The Jinja2 environment of the dashboard: autoescape on for everything, and the display filters.

Every value from a run, an alert or a person (run names, summaries, comments) reaches the page only
through autoescaped ``{{ }}`` or ``|tojson`` (which escapes ``<``, ``>``, ``&`` and quotes), never
through ``|safe`` or string building.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from monitor.durations import format_duration

TEMPLATES = Path(__file__).parent / "templates"
HEALTH_WORDS = {
    "critical": "CRITICAL",
    "warning": "WARNING",
    "ok": "OK",
    "unknown": "NO DATA",
    "ended": "ENDED",
}

KIND_WORDS = {"pretraining": "Pretraining", "sft": "SFT", "rl": "RL", "other": "Other"}


def epoch(t: str | float | None) -> float | None:
    if t is None or t == "":
        return None
    if isinstance(t, int | float):
        return float(t)
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def short_duration(seconds: float | None) -> str:
    """``3d4h``, ``2h5m``, ``4m10s``: the two largest units, for tight rows."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    return format_duration(max(0.0, seconds), units=2)


def compact(v: float | None, digits: int = 3) -> str:
    """1.23M, 412k, 3.21, 0.0123: numbers for people."""
    if v is None or not isinstance(v, int | float) or not math.isfinite(v):
        return "—"
    a = abs(v)
    for size, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= size:
            return f"{v / size:.{digits}g}{suffix}"
    return f"{v:.{digits}g}"


def pct(ratio: float | None, digits: int = 1) -> str:
    return "—" if ratio is None else f"{ratio * 100:.{digits}f}%"


def grouped(v: int | None) -> str:
    return "—" if v is None else f"{v:,}"


def safe_href(url: str | None) -> str:
    """Only http(s) links and paths on this server: never ``javascript:`` or ``data:`` from a source."""
    text = (url or "").strip()
    if text.startswith("/") and not text.startswith("//") and "\\" not in text:
        return text
    return text if text.lower().startswith(("https://", "http://")) else ""


def run_url(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


class Renderer:
    """Renders templates with ``now`` (the service's clock) for relative times."""

    def __init__(self) -> None:
        self.env = Environment(
            loader=FileSystemLoader(str(TEMPLATES)),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(
            dur=short_duration,
            compact=compact,
            pct=pct,
            grouped=grouped,
            run_url=run_url,
            safe_href=safe_href,
            urlq=lambda s: quote(str(s), safe=""),
            health_word=lambda h: HEALTH_WORDS.get(h, h.upper()),
            kind_word=lambda k: KIND_WORDS.get(k, str(k).capitalize()),
        )

    def render(self, template: str, now: float, /, **values: Any) -> str:
        def ago(t: str | float | None) -> str:
            e = epoch(t)
            return (
                "—"
                if e is None
                else (short_duration(now - e) + " ago" if now >= e else "in " + short_duration(e - now))
            )

        def utc(t: str | float | None) -> str:
            e = epoch(t)
            return "—" if e is None else datetime.fromtimestamp(e, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

        def at(t: str | float | None) -> Markup:
            """Relative and absolute: "11m ago (20:52 UTC)", the day added when it is not today's."""
            e = epoch(t)
            if e is None:
                return Markup("—")
            moment = datetime.fromtimestamp(e, tz=UTC)
            same_day = moment.date() == datetime.fromtimestamp(now, tz=UTC).date()
            short = moment.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC")
            return Markup('<time datetime="{}" title="{}">{}</time> <span class="abs">({})</span>').format(
                moment.strftime("%Y-%m-%dT%H:%M:%SZ"), utc(e), ago(e), short
            )

        return self.env.get_template(template).render(now=now, ago=ago, utc=utc, at=at, **values)
