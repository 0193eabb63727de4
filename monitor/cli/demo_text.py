"""What `herowatch demo` says when it starts: that its clock is simulated and how fast, what will happen
and when, and how to act on it. Built from the demo config, so it never disagrees with the loop."""

from __future__ import annotations

import functools
import logging
import shutil
import textwrap
from datetime import UTC, datetime

from alerts.clock import Clock
from monitor.cli.common import FORMAT, OneLine
from monitor.config.schema import WatchConfig
from monitor.durations import format_duration

INCIDENT_WORDS = {
    "stall": "stall",
    "loss_spike": "loss spike",
    "nan": "NaN loss",
    "oom_kill": "OOM kill",
    "restart": "restart",
    "throughput_drop": "throughput drop",
    "outage": "source outage",
    "crash": "crash",
    "reward_collapse": "reward collapse",
}


class _SimulatedTime(OneLine):
    """Log lines stamped with the demo's simulated clock, said so: every time the demo prints is simulated."""

    def __init__(self, clock: Clock, note: str) -> None:
        super().__init__(FORMAT)
        self.clock, self.note = clock, note

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        moment = datetime.fromtimestamp(self.clock.time(), tz=UTC)
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC ") + self.note


def simulated_log_times(clock: Clock, speed: float) -> None:
    for handler in logging.getLogger().handlers:
        handler.setFormatter(_SimulatedTime(clock, clock_note(speed)))


def clock_note(speed: float) -> str:
    return f"(simulated time, {speed:g}x)" if speed != 1 else ""


def _hm(seconds: float) -> str:
    minutes = int(round(seconds / 60))
    return f"{minutes // 60}:{minutes % 60:02d}"


def schedule(cfg: WatchConfig) -> list[str]:
    """One line per simulated run: its incidents in order, and how often they come round."""
    lines = []
    for w in cfg.watch:
        sim = w.sim
        if sim is None:
            continue
        run = sim.run or w.name
        if not sim.incidents:
            lines.append(f"{run}: stays healthy")
            continue
        events: dict[float, list[str]] = {}
        for inc in sim.incidents:
            events.setdefault(inc.at, []).append(INCIDENT_WORDS.get(inc.kind, inc.kind))
        steps = ", ".join(f"{' + '.join(words)} {_hm(at)}" for at, words in sorted(events.items()))
        when = (
            f"every {format_duration(sim.repeat_every)}, at h:mm into each loop"
            if sim.repeat_every
            else "at h:mm"
        )
        lines.append(f"{run} ({when}): {steps}")
    return lines


def intro(cfg: WatchConfig, speed: float, url: str, login: str) -> str:
    """``login``: how to log in ("log in with the one-time token ..." for a token the demo made)."""
    width = min(100, max(60, shutil.get_terminal_size((100, 24)).columns))
    loops = [w.sim.repeat_every for w in cfg.watch if w.sim and w.sim.repeat_every]
    real_loop = (
        f" One loop of incidents takes {format_duration(min(loops) / speed)} of real time." if loops else ""
    )
    paragraphs = [
        f"demo: {len(cfg.watch)} simulated training runs on a clock {speed:g}x faster than real time. Every "
        "time printed here and shown on the dashboard is simulated, and so is every duration you type there "
        f"(a 2h silence lasts {format_duration(7200 / speed)} of real time).{real_loop}",
        *schedule(cfg),
        f"Dashboard: {url}/ - {login} to acknowledge and silence. "
        "Ctrl-C stops the demo. Alerts print below as they fire and resolve.",
    ]
    wrap = functools.partial(
        textwrap.fill, width=width, subsequent_indent="    ", break_on_hyphens=False, break_long_words=False
    )
    return "\n".join(
        wrap(p, initial_indent="  " if 0 < i < len(paragraphs) - 1 else "") for i, p in enumerate(paragraphs)
    )
