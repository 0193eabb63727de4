"""`herowatch alert list|ack`: the alerts of a running herowatch, and taking one, through its API.

Acknowledging here is the same on-call action as the dashboard's button, Slack's button and
``POST /api/alerts/{id}/ack``: the same timeline entry, the same Slack update, no more reminders.
"""

from __future__ import annotations

import getpass

import typer

from monitor.cli.api_client import TOKEN_ENV, URL_ENV
from monitor.cli.silence import URL_OPTION, _api, _call
from monitor.cli.style import typer_app

alert_app = typer_app(
    help="The alerts of a running herowatch, through its API.\n\n"
    f"The server is `--url` (env `{URL_ENV}`, default `http://127.0.0.1:8080`); acknowledging needs a "
    f"token in `{TOKEN_ENV}`: your personal token (the dashboard's Tokens page), which acts as you, or the "
    "shared automation token, which is recorded as `automation (--by)`.\n\n"
    "Examples:\n\n"
    "    herowatch alert list\n"
    "    herowatch alert ack 42 -c 'on it, draining node-17'\n",
    no_args_is_help=True,
)


@alert_app.command("list")
def list_(
    state: str = typer.Option("active", "--state", help="active (pending or firing), firing, resolved, ..."),
    run: str = typer.Option(None, "--run", help="only this run's alerts"),
    url: str = URL_OPTION,
) -> None:
    """Alerts, newest first: id, state, severity, rule, run, summary."""
    with _api(url) as api:
        answer = _call(api, "GET", "/api/alerts", params={"state": state, **({"run": run} if run else {})})
    rows = answer.data
    if not rows:
        typer.echo(f"no {state} alerts")
    for a in rows:
        taken = f"  (acked by {a['acked_by']})" if a.get("acked_by") else ""
        typer.echo(f"{a['id']:>5}  {a['state']:8} {a['severity']:8} {a['rule']}  {a['run']}{taken}")
        typer.echo(f"       {a['summary']}")


@alert_app.command("ack")
def ack(
    alert_id: int = typer.Argument(..., help="the alert's id (see `herowatch alert list`)"),
    comment: str = typer.Option(
        "",
        "--comment",
        "-c",
        help='shown in the incident timeline; starting with "noise" marks the page as noise in the report',
    ),
    by: str = typer.Option(
        None, "--by", help="with the automation token: who it acts for [default: your user name]"
    ),
    url: str = URL_OPTION,
) -> None:
    """Take an alert: no more reminders for it; the timeline and the Slack thread say who took it."""
    with _api(url) as api:
        body = {"by": by or getpass.getuser(), **({"comment": comment} if comment else {})}
        answer = _call(api, "POST", f"/api/alerts/{alert_id}/ack", json=body, write=True)
    a = answer.data
    typer.echo(f"alert {a['id']} ({a['rule']} on {a['run']}) acknowledged by {a['acked_by']}")
