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
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
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
from monitor.traces.examples import EXAMPLES, describe, example_path
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
        None,
        "--trace",
        "-t",
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE",
        help="The trace (JSON Lines; docs/trace-format.md).",
    ),
    example: str = typer.Option(
        None, "--example", "-e", metavar="NAME", help="A trace that ships with herowatch: llmc."
    ),
    rules: list[str] = typer.Option(
        None, "--rules", "-r", metavar="PACK|FILE", help="A rule pack or rule file; repeat. [default: hero]"
    ),
    format: str = typer.Option(
        "table", "--format", "-f", metavar="table|jsonl", help="For people, or programs (below)."
    ),
    interval: str = typer.Option("15s", "--interval", metavar="DURATION", help="Time between evaluations."),
    set_: list[str] = typer.Option(
        None, "--set", metavar="OVERRIDE", help="RULE.PARAM=VALUE: a rule's parameter; repeat."
    ),
    run: list[str] = typer.Option(None, "--run", metavar="RUN", help="Only this run; repeat."),
    until: str = typer.Option(
        None, "--until", metavar="WHEN", help="Run the clock on to this time (below). [default: the end]"
    ),
    metrics_profile: str = typer.Option(
        "auto",
        "--metrics-profile",
        metavar="NAME",
        help="The trainer whose key names the trace holds (below).",
    ),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip bad lines (said on stderr), not stop."),
    fail_on: str = typer.Option(
        None, "--fail-on", metavar="SEVERITY", help="Exit 1 if an alert this bad or worse fired."
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar (never one when piped)."),
) -> None:
    """Replay a recorded trace through the rules on a simulated clock: which alerts would have fired, when.

    To try it: `herowatch replay --example llmc` (a real llm.c run's steps with a one-step spike, then a
    made-up 40-minute hang; the file's path is printed on stderr).

    The same evaluator as the live engine. Each run's clock ticks at its samples and every --interval in
    between, so stall and silence rules fire when they would have live. The end of the trace is the end
    of the run: the clock runs on past it only for a timer the data armed (a crashed run's grace), never
    for a silence, unless --until says so: a duration past the trace's last line (30m, 2h) or a time
    (2026-12-04T13:00:00Z, epoch seconds).

    --format table prints every alert transition (pending, firing, resolved) and a summary per run;
    jsonl, one JSON object per transition (t, run, rule, kind, metric, severity, state, step, value,
    summary). --metrics-profile names the trainer (megatron, huggingface, verl, ...) whose keys are mapped
    to the rules' names as live; auto detects it per run, none takes the keys as they are. --fail-on takes
    critical, warning or info.

    Examples:

    ```
    herowatch replay -t run.jsonl --fail-on critical     # CI: must not page
    herowatch replay -t run.jsonl --set loss_spike.z=8 -f jsonl
    ```

    Exit 0 fine; 1 --fail-on saw an alert that bad; 2 unusable input (a bad trace line, option or pack).
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

    if (trace is None) == (example is None):
        err.print("give a trace: --trace FILE, or --example llmc to try one that ships with herowatch")
        raise typer.Exit(2)
    with ExitStack() as stack:
        if example is not None:
            if example not in EXAMPLES:
                err.print(f"--example: no example {example!r}; there are:\n{describe()}", markup=False)
                raise typer.Exit(2)
            trace = stack.enter_context(example_path(example))
            said = textwrap.fill(f"({EXAMPLES[example][1]})", 78, break_on_hyphens=False)
            err.print(f"the example trace {example}: {trace}\n{said}", markup=False)
        _replay(trace, specs, step, format, worst, run, until, metrics_profile, skip_bad, not no_progress)


def _replay(  # noqa: PLR0913 - the command's options, checked
    trace: Path,
    specs: list,
    step: float,
    format: str,
    worst: Severity | None,
    run: list[str] | None,
    until: str | None,
    metrics_profile: str,
    skip_bad: bool,
    progress: bool,
) -> None:
    err = _err()
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
