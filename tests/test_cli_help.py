"""Every `--help` at 80 columns: no `<bool>` beside flags, bracketed notes shown (not eaten as markup),
paragraphs reflowed, nothing wider than the terminal."""

from __future__ import annotations

import re

import click
import typer
from typer.testing import CliRunner

from monitor.cli.main import app

runner = CliRunner()


def _commands() -> list[list[str]]:
    root = typer.main.get_command(app)
    out: list[list[str]] = [[]]

    def walk(cmd: click.Command, path: list[str]) -> None:
        if not hasattr(cmd, "list_commands"):
            return
        for name in cmd.list_commands(None):  # a lazy subcommand is loaded by get_command, as a run does
            sub = cmd.get_command(None, name)
            out.append([*path, name])
            walk(sub, [*path, name])

    walk(root, [])
    return out


def flat(text: str) -> str:
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def help_of(*path: str) -> str:
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert r.exit_code == 0, r.output
    return r.output


def test_every_help_page_fits_80_columns_and_shows_no_type_beside_flags():
    paths = _commands()
    assert ["silence", "query"] in paths and ["rules", "check"] in paths
    for path in paths:
        text = help_of(*path)
        assert "<bool>" not in text, f"herowatch {' '.join(path)} --help"
        assert "<list[" not in text, f"herowatch {' '.join(path)} --help"
        assert max(len(line) for line in text.splitlines()) <= 80, f"herowatch {' '.join(path)} --help"
        assert "…" not in text, f"herowatch {' '.join(path)} --help cuts a word"


def test_bracketed_notes_and_paragraphs_read_as_written():
    serve = flat(help_of("serve"))
    assert "[env HEROWATCH_LISTEN, default 127.0.0.1:8080]" in serve
    assert "must be migrated first with herowatch db upgrade." in serve
    add = flat(help_of("silence", "add"))
    assert "[default: your user name]" in add and "[env HEROWATCH_URL, default http://127.0.0.1:8080]" in add


def test_demo_help_counts_the_runs_the_demo_runs():
    from importlib import resources

    from monitor.config.loader import parse_config

    demo = parse_config(resources.files("monitor.config").joinpath("demo.yaml").read_text(), "demo.yaml")
    names = [w.name for w in demo.watch]
    assert len(names) == 3 and sum("grpo" in n for n in names) == 1, names  # one RL (GRPO) run
    for args in (["--help"], ["demo", "--help"]):
        text = " ".join(CliRunner().invoke(app, args, env={"COLUMNS": "80"}).output.replace("│", " ").split())
        assert "three simulated runs (two pretraining, one RL)" in text, text
        assert "two simulated hero runs" not in text


def _help_column(text: str) -> int:
    """How wide the options panel's help column is: from where the --help row's text starts to the border."""
    (row,) = [line for line in text.splitlines() if "Show this message and exit." in line]
    return len(row.rstrip()) - 1 - row.index("Show this message and exit.") - 1


def test_replay_help_reads_at_80_columns_and_says_how_to_try_it():
    """Its options' help is not squeezed into a narrow column (it was 25 characters wide: a long flag
    pair and long metavars took the rest); the details are paragraphs above; the example to try is one
    that ships with herowatch, not a path in a checkout."""
    text = help_of("replay")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert _help_column(text) >= 35, text
    said = flat(text)
    assert "To try it: herowatch replay --example llmc" in said, said
    assert "docs/examples" not in said
    assert "The end of the trace is the end of the run" in said
    for option in ("--trace", "--example", "--rules", "--set", "--until", "--fail-on", "--no-progress"):
        assert option in said, option
