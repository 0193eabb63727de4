"""The Slack Web API methods herowatch calls, and the OAuth scopes each needs (from each method's page
in Slack's documentation). The app manifest asks for exactly these (``herowatch slack manifest``);
tests/test_slack_manifest.py checks the list against the methods herowatch is seen calling.

A method that reads a channel needs one scope for a public channel and another for a private one:
both are listed, the channel decides which is used.
"""

from __future__ import annotations

# with the bot token (SLACK_BOT_TOKEN): the notifier (alerts/notifiers/slack/notifier.py) and doctor's
# check (check.py)
BOT_METHODS: dict[str, tuple[str, ...]] = {
    "auth.test": (),
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "conversations.history": ("channels:history", "groups:history"),
    "conversations.replies": ("channels:history", "groups:history"),
    "conversations.info": ("channels:read", "groups:read"),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
}
# with the app-level token (SLACK_APP_TOKEN): Socket Mode; the scope is the token's own, chosen when
# it is created, not the manifest's
APP_METHODS: dict[str, tuple[str, ...]] = {"apps.connections.open": ("connections:write",)}
COMMANDS = "commands"  # the bot scope a slash command needs


def bot_scopes() -> list[str]:
    """Every bot scope herowatch's app needs: its methods' and the slash command's."""
    return sorted({scope for scopes in BOT_METHODS.values() for scope in scopes} | {COMMANDS})
