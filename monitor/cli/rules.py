"""`herowatch rules ...` and `herowatch replay`: the rule engine's tools for users.

Exit codes, as every herowatch command: 0 fine; 1 a rule test failed or ``replay --fail-on`` saw an
alert that bad; 2 the input cannot be used (a rule file with problems, a bad trace line, an unknown
rule pack).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import typer
from rich.console import Console

from monitor.cli.style import typer_app
from monitor.config.errors import ConfigError
from monitor.rules.loader import load_rules, pack_names, pack_test_file
from monitor.rules.spec import RuleSpec

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
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Every parameter of every rule, raw."),
) -> None:
    """List the built-in rule packs, or the rules of one pack or rule file: one line per rule (what it
    catches, its severity, the settings its pack gives it); --verbose for every raw parameter."""
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
    pad = max(len(s.name) for s in specs) if specs else 0
    for spec in specs:
        style = _SEVERITY_STYLE.get(spec.severity.value, "")
        width = max(60, out.width)
        if not verbose:  # a line per rule; its settings on the line below when they do not fit
            what, settings = summary(spec)
            head = f"{spec.name:<{pad}}  {spec.severity.value:<8}  "
            line = f"{head}{what}  {settings}"
            if len(line) > width:
                line = _clip(head + what, width) + "\n" + _clip(" " * len(head) + settings, width)
            out.print(line, style=style, markup=False, soft_wrap=True)
            continue
        # A block per rule: name, kind, metric and severity, then every parameter, wrapped whole (at 80
        # columns a table column would cut them).
        of = f" of {spec.metric}" if spec.metric else ""
        head = f"{spec.name:<{pad}}  {spec.severity.value:<8}  {spec.kind}{of}"
        out.print(head, style=style, markup=False, soft_wrap=False)
        params = textwrap.fill(
            _params(spec), width, initial_indent="    ", subsequent_indent="    ", break_long_words=False
        )
        if params.strip():
            out.print(params, markup=False, soft_wrap=True)


_NOT_SETTINGS = {
    "name",
    "kind",
    "metric",
    "severity",
    "labels",
    "annotations",
    "expect",
    "importance",
    "for_kind",
}


def summary(spec: RuleSpec) -> tuple[str, str]:
    """What the rule catches (the first sentence of its description), and, in brackets, its kind and
    metric and the settings its pack or file gives it; a bound left unset says the rule is off until a
    run sets it."""
    text = " ".join((spec.annotations.get("description") or "").split())
    first = text.split(". ")[0].rstrip(".") if text else f"{spec.kind} rule"
    raw = spec.raw()
    settings = []
    for key in sorted(spec.model_fields_set - _NOT_SETTINGS):
        name = "for" if key == "for_" else key
        value = raw.get(name, raw.get(key))
        settings.append(f"{name}=unset (off until set)" if value is None else f"{name}={value}")
    of = f" of {spec.metric}" if spec.metric else ""
    return first, f"[{spec.kind}{of}{'; ' + ' '.join(settings) if settings else ''}]"


def _clip(text: str, width: int) -> str:
    """``text`` within ``width``, cut at a word with "…" when it is longer (``--verbose`` has it all)."""
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


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
