"""The report `herowatch replay` prints for people: per run, a heading with what the run did, then each
alert transition on one line (time, state, severity, rule, step, value with its unit) and what the rule
said beneath it, wrapped to the terminal. Nothing is cut or broken inside a word at 80 columns."""

from __future__ import annotations

import math
import textwrap
import time
from collections.abc import Mapping, Sequence

import typer

from alerts.model import AlertState
from monitor.durations import format_duration
from monitor.rules.spec import RuleSpec
from monitor.traces.replay import ReplayEvent, RunSummary

_STYLE = {"critical": typer.colors.RED, "warning": typer.colors.YELLOW, "info": typer.colors.CYAN}
_DURATION_KINDS = {"stall": "idle", "telemetry_gone": "silent", "absent": "missing"}
_UNITS = {
    "throughput/tokens_per_second": "tok/s",
    "throughput/mfu": "% MFU",
    "host_memory_available_bytes": "B",
}


def number(v: float) -> str:
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    a = abs(v)
    for size, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= size:
            return f"{v / size:.3g}{suffix}"
    return f"{v:.4g}"


def value_text(e: ReplayEvent) -> str:
    """The value a transition carries, with what it measures: ``15m6s idle``, ``335k tok/s``, ``NaN loss``."""
    v = e.value
    if v is None:
        return ""
    if e.kind in _DURATION_KINDS:  # once resolved, its clock is back at 0: nothing worth showing
        ok = math.isfinite(v) and e.state in (AlertState.PENDING, AlertState.FIRING)
        return f"{format_duration(max(0.0, v))} {_DURATION_KINDS[e.kind]}" if ok else ""
    if e.kind in ("counter_increase", "restarts"):
        return f"+{v:g}" if e.kind == "counter_increase" else f"{v:g} restarts"
    return f"{number(v)} {_UNITS.get(e.metric or '') or e.metric or ''}".strip()


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.fill(
        text, width=width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )


def _heading(s: RunSummary, specs: Mapping[str, RuleSpec], width: int) -> list[str]:
    steps = "" if s.first_step is None else f", steps {s.first_step:,}..{s.last_step:,}"
    span = format_duration((s.last_t or 0) - (s.first_t or 0))
    fired = ", ".join(f"{s.fired[sev]} {sev}" for sev in ("critical", "warning", "info") if s.fired.get(sev))
    plural = "" if s.samples == 1 else "s"
    lines = [f"{s.run}: {s.samples:,} sample{plural}{steps} over {span}; fired: {fired or 'nothing'}"]
    if s.rules_fired:
        rules = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in s.rules_fired.items())
        lines.append(_wrap(f"rules that fired: {rules}", width, "  "))
    spikes: dict[str, int] = {}  # per metric: rules that share a baseline count the same spikes
    for name, st in s.stats.items():
        spec = specs.get(name)
        if st.get("spikes") and spec is not None and spec.metric:
            spikes[spec.metric] = max(spikes.get(spec.metric, 0), int(st["spikes"]))
    if spikes:
        seen = ", ".join(f"{metric} {n}" for metric, n in spikes.items())
        lines.append(_wrap(f"one-step spikes seen (recorded, not paged): {seen}", width, "  "))
    return [_wrap(lines[0], width, ""), *lines[1:]]


def _last_step(s: RunSummary, width: int) -> str:
    """The line that says where the run's steps stop while its trace goes on (what a stall counts from)."""
    assert s.last_step_t is not None and s.last_t is not None
    clock = time.strftime("%H:%M:%S", time.gmtime(s.last_step_t))
    after = format_duration(s.last_t - s.last_step_t)
    said = f"last step {s.last_step:,}; the trace goes on {after} with no new step"
    return _wrap(said, width, " " * 12).replace(" " * 12, f"  {clock}  ", 1)


def open_at_end(events: Sequence[ReplayEvent], width: int) -> list[str]:
    """The alerts still pending or firing when the replay stopped, with since when."""
    last: dict[str, ReplayEvent] = {}
    since: dict[str, float] = {}
    for e in events:  # since when each alert is in its state
        prev = last.get(e.fingerprint)
        if prev is None or prev.state != e.state:
            since[e.fingerprint] = e.t
        last[e.fingerprint] = e
    still = [
        f"{e.rule} ({e.severity}, {e.state} since {time.strftime('%H:%M:%S', time.gmtime(since[fp]))})"
        for fp, e in last.items()
        if e.state in (AlertState.PENDING, AlertState.FIRING)
    ]
    return [_wrap(f"still open when the replay stopped: {', '.join(still)}", width, "  ")] if still else []


_COVERAGE_WORDS = (
    ("covered", "covered"),
    ("warming", "warming up"),
    ("blind", "blind"),
    ("unknown", "unknown (source unreadable)"),
    ("unused", "not logged (optional)"),
    ("ended", "ended"),
)


def coverage_lines(s: RunSummary, width: int) -> list[str]:
    """What the run's rules could see at the end of the trace, and the watching_blind text if any."""
    cov = s.coverage
    if cov is None:
        return []
    counts = {word: sum(1 for r in cov.rules if r.state == state) for state, word in _COVERAGE_WORDS}
    said = ", ".join(f"{n} {word}" for word, n in counts.items() if n)
    lines = [_wrap(f"coverage at the end: {said or 'no rules'}", width, "  ")]
    if s.blind is not None:
        lines.append(_wrap(f"watching blind: {s.blind.text}", width, "  "))
    return lines


def print_report(
    events: Sequence[ReplayEvent],
    summaries: Mapping[str, RunSummary],
    specs: Mapping[str, RuleSpec],
    width: int,
    trace_end: float | None = None,
) -> None:
    width = max(60, width)
    by_run: dict[str, list[ReplayEvent]] = {}
    for e in events:
        by_run.setdefault(e.run, []).append(e)
    for n, s in enumerate(summaries.values()):
        if n:
            typer.echo()
        head, *rest = _heading(s, specs, width)
        typer.secho(head, bold=True)
        for line in rest:
            typer.echo(line)
        day = ""
        mine = by_run.get(s.run, [])
        pad = min(22, max((len(e.rule) for e in mine), default=0))
        ended = trace_end is None
        quiet = s.last_step_t is None or s.last_t is None or s.last_t <= s.last_step_t
        for e in mine:
            if not quiet and e.t > s.last_step_t:
                quiet = True
                typer.echo(_last_step(s, width))
            if not ended and e.t > trace_end:
                ended = True
                last = time.strftime("%H:%M:%S", time.gmtime(trace_end))
                typer.echo(f"  -- the trace ends at {last}; the clock ran on, as live: --")
            when = time.gmtime(e.t)
            if time.strftime("%Y-%m-%d", when) != day:
                day = time.strftime("%Y-%m-%d", when)
                typer.echo(f"  {day} (UTC)")
            step = "" if e.step is None else f"step {e.step:,}"
            clock = time.strftime("%H:%M:%S", when)
            line = f"  {clock}  {e.state:<8} {e.severity:<8} {e.rule:<{pad}}  {step:<11}"
            if len(line) + len(value_text(e)) <= width:  # else the text beneath has the value
                line += value_text(e)
            typer.secho(line.rstrip(), fg=_STYLE.get(e.severity) if e.state == AlertState.FIRING else None)
            # firing: the alert's summary; resolved: what the rule says now (the summary is worded for a page)
            said = e.summary if e.state in (AlertState.PENDING, AlertState.FIRING) else e.reason
            said = said.removeprefix(f"{e.run}: ")
            if said:
                typer.echo(_wrap(said, width, " " * 12))
        for line in open_at_end(mine, width):
            typer.echo(line)
        for line in coverage_lines(s, width):
            typer.secho(line, fg=typer.colors.YELLOW if line.startswith("  watching blind") else None)
    if not events:
        typer.echo("no alert transitions")
