"""`herowatch replay`: the rule engine over a recorded trace, for people (a report that reads at 80
columns) or for programs (``--format jsonl``).

Exit codes, as every herowatch command: 0 fine; 1 ``--fail-on`` saw an alert that bad; 2 the input
cannot be used (a bad trace line, an unknown rule pack, a bad option).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from alerts.model import AlertState, Severity
from monitor.cli.replay_view import print_report
from monitor.config.errors import ConfigError
from monitor.durations import parse_duration
from monitor.rules.loader import apply_overrides, load_rules, parse_override
from monitor.traces.replay import Replayer
from monitor.traces.trace import TraceError, iter_trace


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _piped(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def _lines_with_progress(path: Path, show: bool) -> Iterator[bytes]:
    """The file's lines; with a rich progress bar (by bytes) on stderr when ``show``."""
    fh = open(path, "rb")  # noqa: SIM115 - closed below
    try:
        if not show:
            yield from fh
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        size = path.stat().st_size or 1
        columns = (TextColumn("replaying"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
        with Progress(*columns, console=_err(), transient=True) as progress:
            task = progress.add_task("replay", total=size)
            done = 0
            for n, line in enumerate(fh, 1):
                done += len(line)
                if not n & 0x3FFF:
                    progress.update(task, completed=done)
                yield line
    finally:
        fh.close()


def _overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        rule, param, value = parse_override(item)
        out.setdefault(rule, {})[param] = value
    return out


def _until(text: str, trace_end: float) -> float:
    """``--until``: a duration past the trace's last line, an ISO 8601 time (UTC unless it says) or epoch
    seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return trace_end + parse_duration(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        example = "a duration (30m, 2h) nor a time (2026-12-04T13:00:00Z)"
        raise ValueError(f"{text!r} is neither {example}") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def replay_command(
    trace: Path = typer.Option(
        ...,
        "--trace",
        "-t",
        exists=True,
        dir_okay=False,
        readable=True,
        help="The trace (JSON Lines), see docs/trace-format.md.",
    ),
    rules: list[str] = typer.Option(
        None,
        "--rules",
        "-r",
        help="A built-in pack name or a rule file; repeat for several. Default: the hero pack.",
    ),
    format: str = typer.Option(
        "table", "--format", "-f", help="table (for people) or jsonl (one alert transition per line)."
    ),
    interval: str = typer.Option(
        "15s",
        "--interval",
        help="Evaluation interval between samples: time-based rules are checked this often.",
    ),
    set_: list[str] = typer.Option(
        None,
        "--set",
        help="Override a rule parameter for every run: RULE.PARAM=VALUE, e.g. loss_spike.z=8.",
    ),
    run: list[str] = typer.Option(None, "--run", help="Replay only this run; repeat for several."),
    until: str = typer.Option(
        None,
        "--until",
        help="Run the clock to this time after the trace: a duration past its last line (30m, 2h) or a "
        "time (2026-12-04T13:00:00Z, epoch seconds); silence rules (a stall) count too. Default: on "
        "for as long as a timer the data armed can fire (a crashed run's grace), as live.",
    ),
    metrics_profile: str = typer.Option(
        "auto",
        "--metrics-profile",
        help="The trainer whose key names the trace holds (megatron, huggingface, verl, ...), mapped to "
        "the names the rules use as the live engine does; auto: detected per run; none: as they are.",
    ),
    skip_bad: bool = typer.Option(
        False, "--skip-bad", help="Skip bad trace lines (each reported on stderr) instead of stopping."
    ),
    fail_on: str = typer.Option(
        None,
        "--fail-on",
        help="Exit 1 if an alert of this severity or worse fired (critical, warning, info).",
    ),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="A progress bar on a terminal (never when piped)."
    ),
) -> None:
    """Replay a recorded trace through the rules on a simulated clock: which alerts would have fired, when.

    The same evaluator as the live engine. Each run's clock ticks at its samples and every --interval
    in between, so stall and silence rules fire when they would have live. Prints every alert
    transition (pending, firing, resolved) and a summary per run; --format jsonl prints one JSON
    object per transition with t, run, rule, kind, metric, severity, state, step, value, summary.

    Examples: herowatch replay -t run.jsonl --fail-on critical (CI: this healthy run must not page);
    herowatch replay -t run.jsonl --set tokens_per_second_low.below=350000 --format jsonl
    """
    err = _err()
    if format not in ("table", "jsonl"):
        err.print(f"--format must be table or jsonl, not {format!r}", markup=False)
        raise typer.Exit(2)
    worst: Severity | None = None
    if fail_on is not None:
        try:
            worst = Severity(fail_on)
        except ValueError:
            err.print("--fail-on must be critical, warning or info", markup=False)
            raise typer.Exit(2) from None
    try:
        step = parse_duration(interval)
        if step <= 0:
            raise ValueError("the interval must be positive")
        specs = load_rules(rules or ["hero"])
        if set_:
            specs = apply_overrides(specs, _overrides(set_), "--set")
    except ConfigError as exc:
        err.print(exc.render(), markup=False)
        raise typer.Exit(2) from None
    except ValueError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(2) from None

    show = progress and sys.stderr.isatty() and not _piped(1)
    skipped: list[TraceError] = []

    def on_error(exc: TraceError) -> None:
        skipped.append(exc)
        if len(skipped) <= 20:
            err.print(f"skipped {exc}", markup=False)

    only = set(run or ())
    from monitor.profiles import choices

    if metrics_profile not in choices():
        err.print(f"--metrics-profile must be one of {', '.join(choices())}", markup=False)
        raise typer.Exit(2)
    replayer = Replayer(specs, step, metrics_profile=metrics_profile)
    try:
        samples = iter_trace(_lines_with_progress(trace, show), str(trace), on_error if skip_bad else None)
        feed = replayer.feed
        for sample in samples:
            if not only or sample.run in only:
                feed(sample)
    except TraceError as exc:
        err.print(f"error: {exc}", markup=False)
        err.print("(--skip-bad skips bad lines instead)", markup=False)
        raise typer.Exit(2) from None
    try:
        end = _until(until, replayer.end) if until is not None else None
    except ValueError as exc:
        err.print(f"--until: {exc}", markup=False)
        raise typer.Exit(2) from None
    events = replayer.finish(end)
    if len(skipped) > 20:
        err.print(f"... {len(skipped)} bad lines skipped in all", markup=False)

    out = _out()
    if format == "jsonl":
        write = sys.stdout.write
        for e in events:
            write(json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        print_report(events, replayer.summaries, {s.name: s for s in specs}, out.width, replayer.trace_end)
    if worst is not None:
        bad = [e for e in events if e.state == AlertState.FIRING and Severity(e.severity).rank <= worst.rank]
        if bad:
            err.print(
                f"{len(bad)} alert{'s' if len(bad) != 1 else ''} at {worst.value} or worse fired",
                markup=False,
            )
            raise typer.Exit(1)
