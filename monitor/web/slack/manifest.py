"""The manifest of herowatch's Slack app (``herowatch slack manifest``): pasted into Slack's "create an
app from a manifest", it sets up the bot and its scopes, the ``/herowatch`` command and the buttons'
interactivity in one step, either over Socket Mode (no inbound port: herowatch opens a websocket to
Slack) or with Slack calling herowatch's HTTP endpoint. The keys and limits are Slack's
(https://api.slack.com/reference/manifests); tests/test_slack_manifest.py validates against them.
"""

from __future__ import annotations

from typing import Any

from alerts.notifiers.slack.scopes import bot_scopes
from monitor.web.slack.grammar import COMMAND

ENDPOINT = "/api/slack/interactions"  # monitor/web/api/slack.py: clicks and the slash command
DESCRIPTION = "Training-run health for on-call: alerts, buttons to take or silence them, /herowatch."
LONG_DESCRIPTION = (
    "herowatch watches long GPU training runs (Weights & Biases, Prometheus) and tells on-call when one "
    "is in trouble: a stalled step, a loss spike or NaN, a throughput drop, OOM kills, a restart loop. "
    "Each alert group is one thread in the alert channel, updated as it changes, with Acknowledge and "
    "Silence buttons. /herowatch status shows every run's health, step, ETA, goodput and firing alerts; "
    "/herowatch ack and /herowatch silence act on them, named after you on the alert's timeline."
)
USAGE_HINT = (
    "status [run] | ack <alert or run> | silence <run> <duration> <reason> | stacks <run> | report | help"
)


class ManifestError(ValueError):
    pass


def manifest(*, socket_mode: bool, url: str | None = None, name: str = "herowatch") -> dict[str, Any]:
    """The app manifest. Over HTTP, ``url`` is where Slack reaches herowatch (``server.external_url``,
    https): the command and the buttons post to its ``/api/slack/interactions``."""
    if not 0 < len(name) <= 35:
        raise ManifestError(f"a Slack app's name is 1 to 35 characters long, not {len(name)}")
    endpoint = None
    if not socket_mode:
        if not url:
            raise ManifestError(
                "say where Slack reaches herowatch (--url https://herowatch.example.com, or "
                "server.external_url in the config), or use --socket-mode: no inbound port at all"
            )
        if not url.lower().startswith("https://"):
            raise ManifestError(f"Slack only calls https:// URLs, not {url!r}")
        endpoint = url.rstrip("/") + ENDPOINT
    command: dict[str, Any] = {
        "command": COMMAND,
        "description": "Runs' health and on-call actions",
        "usage_hint": USAGE_HINT,
        "should_escape": False,
    }
    interactivity: dict[str, Any] = {"is_enabled": True}
    if endpoint is not None:
        command["url"] = endpoint
        interactivity["request_url"] = endpoint
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": name,
            "description": DESCRIPTION,
            "long_description": LONG_DESCRIPTION,
            "background_color": "#1d2b3a",
        },
        "features": {
            "bot_user": {"display_name": _bot_name(name), "always_online": True},
            "slash_commands": [command],
        },
        "oauth_config": {"scopes": {"bot": bot_scopes()}},
        "settings": {
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def _bot_name(name: str) -> str:
    """Slack's bot display names: lower-case letters, digits, '-', '_' and '.'."""
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in name.lower())
    cleaned = cleaned.strip("-")
    return cleaned[:80] or "herowatch"
