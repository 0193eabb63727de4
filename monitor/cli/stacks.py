"""`herowatch stacks RUN`: where a run's processes are, from the stacks its `herowatch emit run` wrappers
capture (docs/stacks.md), through the API: capture now (a responder's action, audited) and wait for
the nodes' answers, or show the latest capture (`--latest`)."""

from __future__ import annotations

import time
from urllib.parse import quote

import typer

from monitor.cli.api_client import ApiError
from monitor.cli.silence import URL_OPTION, _api, _call


def stacks_command(
    run: str = typer.Argument(..., help="the run's id, e.g. push:pretrain/hero-70b"),
    latest: bool = typer.Option(False, "--latest", help="show the latest capture; do not capture now"),
    wait: float = typer.Option(40.0, "--wait", help="seconds to wait for the nodes' answers"),
    frames: int = typer.Option(6, "--frames", help="innermost frames shown per group"),
    url: str = URL_OPTION,
) -> None:
    """Capture RUN's stacks now and say which ranks the others wait for, and where they are.

    Examples:

        herowatch stacks push:pretrain/hero-70b
        herowatch stacks push:pretrain/hero-70b --latest
    """
    path = f"/api/runs/{quote(run, safe='')}/stacks"
    with _api(url) as api:
        if not latest:
            asked = _call(api, "POST", path, write=True).data
            typer.echo(f"capture {asked['capture']} asked of {len(asked['nodes'])} node(s)", err=True)
        end = time.monotonic() + wait
        while True:
            try:
                got = api.call("GET", path).data
            except ApiError as exc:
                typer.echo(f"herowatch stacks: {exc.message}", err=True)
                raise typer.Exit(exc.exit_code) from None
            if latest or not got["waiting"] or time.monotonic() > end:
                break
            time.sleep(0.5)
    report = got.get("report")
    if report is None:
        typer.echo(f"no answer yet from {', '.join(sorted(set(got['expected']) - set(got['answered'])))}")
        raise typer.Exit(1)
    typer.echo(report["summary"])
    for g in report["groups"]:
        mark = "ODD " if g["odd"] else ""
        typer.echo(f"\n{mark}{g['count']:>5}  {g['who']}")
        for f in g["frames"][:frames]:
            typer.echo(f"         {f}")
