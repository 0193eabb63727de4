"""`herowatch silence add|query|expire|import`: silences through a running herowatch's API, as amtool.

The CLI never writes a database: the server that applies silences is the one that stores them, on its
own clock (the demo's is simulated), so a silence made here is in force at once and the dashboard's
silences are the ones listed here.
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import typer

from alerts.silences import split_matchers
from monitor.cli.api_client import TOKEN_ENV, URL_ENV, Answer, ApiError, HerowatchApi
from monitor.cli.style import typer_app
from monitor.durations import format_duration, parse_duration

silence_app = typer_app(
    help="Silence alerts by label matchers, through a running herowatch's API (like amtool). A silenced "
    "alert is still recorded and shown on the dashboard, but not sent.\n\n"
    f"The server is `--url` (env `{URL_ENV}`, default `http://127.0.0.1:8080`); changes need its token "
    f"in `{TOKEN_ENV}`. Durations run on the server's clock (the demo's is simulated).\n\n"
    "Examples:\n\n"
    "    herowatch silence add run=hero-70b -d 2h -c 'node swap'\n"
    "    herowatch silence add 'alertname=~\"progress_.*\"' cluster=a3 -d 30m\n"
    "    herowatch silence query run=hero-70b\n"
    "    herowatch silence expire $(herowatch silence query -q run=hero-70b)\n"
    "    herowatch silence query -o json > silences.json\n"
    "    herowatch silence import silences.json --url http://other-herowatch:8080\n",
    no_args_is_help=True,
)

URL_OPTION = typer.Option(
    None, "--url", help=f"herowatch's address [env {URL_ENV}, default http://127.0.0.1:8080]"
)
MATCHERS_HELP = (
    'label matchers as in the dashboard: run=hero-a, alertname=~"progress_.*", !=, !~; one per argument '
    "or comma-separated, quote values with commas"
)


def _fail(message: str, code: int) -> typer.Exit:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def _api(url: str | None) -> HerowatchApi:
    try:
        return HerowatchApi(url)
    except ApiError as exc:
        raise _fail(exc.message, exc.exit_code) from None


def _call(api: HerowatchApi, method: str, path: str, **kw: Any) -> Answer:
    try:
        return api.call(method, path, **kw)
    except ApiError as exc:
        raise _fail(exc.message, exc.exit_code) from None


def _matchers(args: list[str]) -> list[str]:
    return [m for a in args for m in split_matchers(a)]


def _clock_note(speed: float, seconds: float | None = None) -> str:
    if speed == 1.0:
        return ""
    real = f"; {format_duration(seconds / speed)} of real time" if seconds else ""
    return f"(herowatch's demo clock runs {speed:g}x: simulated time{real})"


@silence_app.command("add")
def add(
    matchers: list[str] = typer.Argument(..., metavar="MATCHER", help=MATCHERS_HELP),
    duration: str = typer.Option("1h", "--duration", "-d", help="how long, e.g. 30m, 2h, 1d"),
    comment: str = typer.Option("", "--comment", "-c", help="why: shown next to the silenced alerts"),
    by: str = typer.Option(None, "--by", help="who creates it [default: your user name]"),
    url: str = URL_OPTION,
) -> None:
    """Create a silence starting now; prints its id."""
    try:
        seconds = parse_duration(duration)
    except ValueError as exc:
        raise _fail(f"--duration: {exc}", 2) from None
    body = {
        "matchers": _matchers(matchers),
        "duration": seconds,
        "created_by": by or getpass.getuser(),
        "comment": comment,
    }
    with _api(url) as api:
        answer = _call(api, "POST", "/api/silences", json=body, write=True)
    s = answer.data
    ends = re.sub(r"\.\d+Z$", "Z", s["ends_at"])  # whole seconds
    typer.echo(
        f"silence {s['id']} {s['state']} until {ends} ({format_duration(seconds)}), "
        f"mutes {s['muting']} alert{'' if s['muting'] == 1 else 's'} now"
    )
    if answer.speed != 1.0:
        typer.echo(_clock_note(answer.speed, seconds))
    for note in s.get("notes") or ():
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)


@silence_app.command("query")
def query(
    filters: list[str] = typer.Argument(
        None,
        metavar="FILTER",
        help="only silences whose matchers match these, e.g. run=hero-a (as amtool silence query)",
    ),
    expired: bool = typer.Option(False, "--expired", help="the expired silences instead of the live ones"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print ids only (for `silence expire`)"),
    output: str = typer.Option(
        "table", "--output", "-o", help="table, or json (what `silence import` reads)"
    ),
    url: str = URL_OPTION,
) -> None:
    """List the active and pending silences (or with --expired, the expired ones)."""
    if output not in ("table", "json"):
        raise _fail(f"--output must be table or json, not {output!r}", 2)
    params: list[tuple[str, str]] = [("filter", f) for f in _matchers(filters or [])]
    with _api(url) as api:
        rows = _call(api, "GET", "/api/silences", params=params).data
    rows = [r for r in rows if (r["state"] == "expired") == expired]
    if quiet:
        typer.echo("\n".join(str(r["id"]) for r in rows))
    elif output == "json":
        typer.echo(json.dumps(rows, indent=2))
    elif not rows:
        typer.echo("no expired silences" if expired else "no active or pending silences")
    else:
        _print_rows(rows)


def _print_rows(rows: list[dict[str, Any]]) -> None:
    """A block per silence, readable at 80 columns: id, state, end and author on the first line, then
    the matchers (never broken inside one unless it is wider than the terminal) and the comment."""
    width = max(40, shutil.get_terminal_size((80, 24)).columns)
    for r in rows:
        ends = r["ends_at"].replace("T", " ").removesuffix("Z")[:16]
        typer.echo(f"{r['id']:>4}  {r['state']:<7}  until {ends} UTC  by {r['created_by']}")
        line = "      "
        for m in r["matchers"]:
            if len(line) > 6 and len(line) + 2 + len(m) > width:
                typer.echo(line.rstrip())
                line = "      "
            line += m + "  "
        typer.echo(line.rstrip())
        if r["comment"]:
            for part in textwrap.wrap(r["comment"], width - 8) or [""]:
                typer.echo(f"      # {part}")


@silence_app.command("expire")
def expire(
    silence_ids: list[int] = typer.Argument(..., metavar="ID", help="silence ids (see `silence query`)"),
    url: str = URL_OPTION,
) -> None:
    """End silences now."""
    with _api(url) as api:
        for sid in silence_ids:
            _call(api, "DELETE", f"/api/silences/{sid}", write=True)
            typer.echo(f"silence {sid} expired")


@silence_app.command("import")
def import_(
    source: Path = typer.Argument(
        Path("-"),
        metavar="[FILE]",
        help="a JSON list of silences, as `silence query -o json` prints [default: stdin]",
    ),
    url: str = URL_OPTION,
) -> None:
    """Create silences from a JSON list (e.g. from another herowatch); expired ones are skipped."""
    try:
        text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
        items = json.loads(text)
    except OSError as exc:
        raise _fail(f"{source}: {exc.strerror or exc}", 2) from None
    except ValueError as exc:
        raise _fail(f"{source}: not JSON: {exc}", 2) from None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise _fail(f"{source}: expected a JSON list of silences (objects with matchers and ends_at)", 2)
    made, skipped, failed = [], 0, 0
    with _api(url) as api:
        for n, item in enumerate(items, 1):
            if item.get("state") == "expired":
                skipped += 1
                continue
            body = {
                "matchers": item.get("matchers") or [],
                "ends_at": item.get("ends_at"),
                "created_by": item.get("created_by") or getpass.getuser(),
                "comment": item.get("comment") or "",
            }
            if item.get("state") == "pending":
                body["starts_at"] = item.get("starts_at")
            try:
                made.append(api.call("POST", "/api/silences", json=body, write=True).data["id"])
            except ApiError as exc:
                if exc.exit_code != 2:
                    raise _fail(exc.message, exc.exit_code) from None
                typer.secho(f"{source}: item {n}: {exc.message}", err=True, fg=typer.colors.RED)
                failed += 1
    typer.echo(
        f"imported {len(made)} silence{'' if len(made) == 1 else 's'}"
        + (f" (ids {', '.join(map(str, made))})" if made else "")
        + (f"; skipped {skipped} already expired" if skipped else "")
        + (f"; {failed} refused" if failed else "")
    )
    if failed:
        raise typer.Exit(2)
