"""`herowatch slack ...`: herowatch's Slack app. `manifest` prints the manifest that creates it in one
step (docs/receivers.md walks through it)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml

from monitor.cli.style import typer_app
from monitor.config.errors import ConfigError

slack_app = typer_app(help="herowatch's Slack app: the manifest that creates it.", no_args_is_help=True)

NEXT_STEPS = """\
Next, at https://api.slack.com/apps:
  1. Create New App > From a manifest > pick the workspace > paste the
     manifest above > Create.
  2. Install to Workspace; put the Bot User OAuth Token (xoxb-...) in
     SLACK_BOT_TOKEN.
  3. {door}
  4. Invite the bot to the alert channel: type /invite @{bot} there.
  5. Check the set-up: herowatch doctor --config herowatch.yaml; then
     (re)start herowatch serve with these variables set.
"""
SOCKET_DOOR = (
    "Basic Information > App-Level Tokens > Generate Token and Scopes, with\n"
    "     the scope connections:write; put the token (xapp-...) in\n"
    "     SLACK_APP_TOKEN. herowatch connects out: no inbound port."
)
HTTP_DOOR = (
    "Basic Information > App Credentials: put the Signing Secret in\n"
    "     SLACK_SIGNING_SECRET. Slack posts clicks and /herowatch to\n"
    "     {endpoint}"
)


@slack_app.command("manifest")
def manifest_command(
    socket_mode: bool = typer.Option(
        False,
        "--socket-mode",
        help="Slack sends clicks and commands over a websocket herowatch opens: no inbound port",
    ),
    url: str = typer.Option(
        None,
        "--url",
        help="where Slack reaches herowatch over HTTP (https) [default: the config's server.external_url]",
    ),
    config: Path = typer.Option(None, "--config", "-c", help="a watch config, for its server.external_url"),
    name: str = typer.Option("herowatch", "--name", help="the app's name in Slack (at most 35 characters)"),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of YAML (Slack takes either)"),
) -> None:
    """Print the Slack app manifest: the bot and its scopes, the /herowatch command, the buttons.

    Paste it in Slack's "create an app from a manifest". With --socket-mode, Slack sends button clicks
    and /herowatch over a websocket herowatch opens (SLACK_APP_TOKEN): nothing on the cluster needs to
    be reachable from the internet. Without it, Slack posts them to herowatch's HTTPS address
    (--url, or server.external_url of --config) and signs them (SLACK_SIGNING_SECRET). The next steps
    are printed on stderr.
    """
    from monitor.web.slack.manifest import ENDPOINT, ManifestError, manifest

    if url is None and config is not None:
        from monitor.config.loader import load_config

        try:
            url = load_config(config, references=False).server.external_url
        except ConfigError as exc:
            typer.secho(exc.render(), err=True, fg=typer.colors.RED)
            raise typer.Exit(2) from None
    try:
        doc = manifest(socket_mode=socket_mode, url=url, name=name)
    except ManifestError as exc:
        typer.secho(f"herowatch slack manifest: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
    else:
        typer.echo(yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True), nl=False)
    door = SOCKET_DOOR if socket_mode else HTTP_DOOR.format(endpoint=(url or "").rstrip("/") + ENDPOINT)
    bot = doc["features"]["bot_user"]["display_name"]
    typer.echo("\n" + NEXT_STEPS.format(door=door, bot=bot), err=True, nl=False)
