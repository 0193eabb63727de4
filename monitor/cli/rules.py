"""`herowatch rules ...` and `herowatch replay`: the rule engine's tools for users.

Exit codes, as every herowatch command: 0 fine; 1 a rule test failed or ``replay --fail-on`` saw an
alert that bad; 2 the input cannot be used (a rule file with problems, a bad trace line, an unknown
rule pack).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from alerts.model import Severity
from monitor.cli.style import typer_app
from monitor.config.errors import ConfigError
from monitor.durations import format_duration, parse_duration
from monitor.rules.loader import apply_overrides, load_rules, pack_names, pack_test_file, parse_override
from monitor.rules.spec import RuleSpec
from monitor.traces.replay import Replayer, ReplayEvent, RunSummary
from monitor.traces.trace import TraceError, iter_trace

rules_app = typer_app(
    help="Work with rule files: list the built-in packs, check rule files, unit-test rules.",
    no_args_is_help=True,
)

_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


# ---- herowatch rules list / check / test --------------------------------------------------------
@rules_app.command("list")
def list_command(
    pack: str = typer.Argument(None, help="A built-in pack (or a rule file) to list; omit for the packs."),
) -> None:
    """List the built-in rule packs, or the rules of one pack or rule file."""
    out = _out()
    if pack is None:
        for name in pack_names():
            out.print(f"{name}  ({len(load_rules([name]))} rules)")
        return
    try:
        specs = load_rules([pack])
    except ConfigError as exc:
        _err().print(exc.render(), markup=False)
        raise typer.Exit(2) from None
    table = Table("rule", "kind", "metric", "severity", "parameters", box=None, pad_edge=False)
    for spec in specs:
        table.add_row(spec.name, spec.kind, spec.metric or "", spec.severity.value, _params(spec))
    out.print(table)


def _params(spec: RuleSpec) -> str:
    skip = {"name", "kind", "metric", "severity", "labels", "annotations"}
    parts = []
    for key, value in spec.raw().items():
        if key in skip or value in (None, {}, [], 0, "0s") and key in ("for", "keep_firing_for"):
            continue
        parts.append(f"{key}={value}")
    return " ".join(parts)


@rules_app.command("check")
def check_command(files: list[Path] = typer.Argument(..., help="Rule files to validate.")) -> None:
    """Validate rule files: every problem with its file, line and field. Exit 2 if any (as check-config)."""
    bad = 0
    for path in files:
        try:
            specs = load_rules([str(path)])
        except ConfigError as exc:
            _err().print(exc.render(), markup=False)
            bad += 1
            continue
        _out().print(f"{path}: {len(specs)} rules OK")
    if bad:
        raise typer.Exit(2)


@rules_app.command("test")
def test_command(
    files: list[str] = typer.Argument(
        ..., help="Rule test files (YAML, see docs/rules.md), or a built-in pack name to run its own tests."
    ),
) -> None:
    """Unit-test rules: feed input series, check the alerts expected at given times.

    Prints a diff for every failed check and exits 1; prints a summary and exits 0 when all pass;
    exits 2 when a test file cannot be used (with its file, line and field).
    """
    from monitor.traces.rule_tests import run_file

    out, err = _out(), _err()
    tests = checks = failed = invalid = 0
    for name in files:
        builtin = pack_test_file(name) if not Path(name).exists() and name in pack_names() else None
        result = run_file(builtin or name)
        tests, checks = tests + result.tests, checks + result.checks
        for f in result.failures:
            failed += 1
            invalid += f.invalid
            title = f'{f.where}: FAILED test "{f.test}"' if f.test else f"{f.where}: FAILED"
            err.print(title, style="bold red", markup=False)
            err.print("  " + f.message.replace("\n", "\n  "), markup=False)
        if result.ok:
            out.print(f"{result.path}: {result.tests} tests, {result.checks} checks passed", markup=False)
    if failed:
        err.print(
            f"{failed} failure{'s' if failed != 1 else ''} ({tests} tests, {checks} checks)", markup=False
        )
        raise typer.Exit(2 if invalid else 1)
    out.print(f"SUCCESS: {tests} tests, {checks} checks in {len(files)} file{'s' if len(files) != 1 else ''}")


# ---- herowatch replay -----------------------------------------------------------------------------
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


def _value(v: float | None) -> str:
    if v is None:
        return ""
    if v != v:
        return "NaN"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3g}"


def _table(events: list[ReplayEvent], summaries: dict[str, RunSummary], out: Console) -> None:
    if events:
        table = Table(box=None, pad_edge=False)
        for name in ("time (UTC)", "run", "rule", "severity", "state", "step", "value"):
            table.add_column(name, no_wrap=True, justify="right" if name in ("step", "value") else "left")
        table.add_column("summary", overflow="fold", ratio=1)
        for e in events:
            style = _SEVERITY_STYLE.get(e.severity, "") if e.state == "firing" else "dim"
            table.add_row(
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.t)),
                e.run,
                e.rule,
                e.severity,
                e.state,
                "" if e.step is None else str(e.step),
                _value(e.value),
                e.summary,
                style=style,
            )
        out.print(table)
    else:
        out.print("no alert transitions")
    out.print()
    summary = Table(title="per run", title_justify="left")
    for name in ("run", "samples", "steps", "span", "fired"):
        summary.add_column(name, no_wrap=True)
    summary.add_column("rules that fired", overflow="fold")
    summary.add_column("spikes recorded", overflow="fold")
    for s in summaries.values():
        fired = ", ".join(
            f"{s.fired[sev]} {sev}" for sev in ("critical", "warning", "info") if s.fired.get(sev)
        )
        steps = "" if s.first_step is None else f"{s.first_step}..{s.last_step}"
        span = format_duration((s.last_t or 0) - (s.first_t or 0))
        rules = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in s.rules_fired.items())
        spikes = ", ".join(f"{name} {int(st['spikes'])}" for name, st in s.stats.items() if st.get("spikes"))
        summary.add_row(
            s.run,
            str(s.samples),
            steps,
            span,
            fired or "nothing",
            rules,
            spikes,
            style=_SEVERITY_STYLE.get(s.worst or "", ""),
        )
    out.print(summary)


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
    replayer = Replayer(specs, step)
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
    events = replayer.finish()
    if len(skipped) > 20:
        err.print(f"... {len(skipped)} bad lines skipped in all", markup=False)

    out = _out()
    if format == "jsonl":
        write = sys.stdout.write
        for e in events:
            write(json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        _table(events, replayer.summaries, out)
    if worst is not None:
        bad = [e for e in events if e.state == "firing" and Severity(e.severity).rank <= worst.rank]
        if bad:
            err.print(
                f"{len(bad)} alert{'s' if len(bad) != 1 else ''} at {worst.value} or worse fired",
                markup=False,
            )
            raise typer.Exit(1)
