"""Can a Slack receiver deliver? Asked of Slack without posting anything (``herowatch doctor``).

- ``auth.test``: the token works, whose bot it is, and the scopes it has (Slack returns them in the
  ``X-OAuth-Scopes`` header of every Web API answer);
- ``conversations.info``: the channel exists and whether the bot is a member (needs channels:read,
  groups:read for a private channel; without it membership is judged by the next call only);
- ``conversations.history`` (one message): what the notifier itself does to find a message it already
  posted; answers ``not_in_channel`` when the bot was never invited.

A missing scope is named with what it is for; Slack's ``missing_scope`` answers say which one (``needed``).
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from alerts.notifiers.base import CheckProblem, CheckReport
from alerts.reachability import Cause, cause_of, fix_for

REINSTALL = "add it under OAuth & Permissions > Bot Token Scopes in the Slack app, then reinstall the app"


def _error(exc: SlackApiError) -> tuple[str, Any]:
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    return str(data.get("error") or "unknown_error"), data.get("needed")


def needed_scopes(plots: bool, private: bool) -> dict[str, str]:
    need = {"chat:write": "to post and update messages"}
    need["groups:history" if private else "channels:history"] = "to find a message it already posted"
    if plots:
        need["files:write"] = "to attach the plot (plots: true)"
    return need


def check_slack(client: WebClient, channel: str, plots: bool) -> CheckReport:
    rep = CheckReport()
    try:
        auth = client.auth_test()
    except SlackApiError as exc:
        err, _ = _error(exc)
        rep.problems.append(
            CheckProblem(
                f"Slack refuses the token ({err})",
                "set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-...)",
                cause=Cause.AUTH,
            )
        )
        return rep
    except (SlackClientError, OSError) as exc:
        cause = cause_of(exc) or Cause.UNREACHABLE
        url = client.base_url
        rep.problems.append(
            CheckProblem(
                f"Slack's Web API at {url} cannot be reached: {type(exc).__name__}: {exc}",
                fix_for(cause, url, "SLACK_BOT_TOKEN", client.timeout),
                cause=cause,
            )
        )
        return rep
    bot, user_id = auth.get("user") or "?", auth.get("user_id") or "?"
    rep.facts.append(f"token of @{bot} ({user_id}) in {auth.get('team') or '?'}")
    header = {k.lower(): v for k, v in (auth.headers or {}).items()}.get("x-oauth-scopes")
    scopes = {s.strip() for s in str(header or "").split(",") if s.strip()}

    private, name = False, channel
    try:
        info = client.conversations_info(channel=channel)["channel"] or {}
        private, name = bool(info.get("is_private")), f"#{info.get('name') or channel}"
        if info.get("is_member") is False:
            public_ok = not private and "chat:write.public" in scopes
            if not public_ok:
                rep.problems.append(
                    _not_member(name, channel, bot, "conversations.info says is_member: false")
                )
                return _scopes(rep, scopes, header, plots, private)
            rep.facts.append(f"not a member of {name}; posts there with chat:write.public")
    except SlackApiError as exc:
        err, needed = _error(exc)
        if err == "channel_not_found":
            rep.problems.append(
                CheckProblem(
                    f"channel {channel} not found",
                    "use the channel id (C0..., in the channel details), or invite the bot to a private one",
                )
            )
            return rep
        if err == "missing_scope":
            scope = needed or ("groups:read" if private else "channels:read")
            rep.problems.append(
                CheckProblem(
                    f"cannot read {channel}'s details: the token lacks {scope}",
                    f"{REINSTALL} (membership is checked below anyway)",
                    fatal=False,
                )
            )
    try:
        client.conversations_history(channel=channel, limit=1)
        rep.facts.append(f"member of {name}")
    except SlackApiError as exc:
        err, needed = _error(exc)
        if err == "not_in_channel":
            rep.problems.append(_not_member(name, channel, bot, "Slack answers not_in_channel"))
        elif err == "missing_scope":
            scope = needed or ("groups:history" if private else "channels:history")
            rep.problems.append(
                CheckProblem(
                    f"the token lacks {scope} ({needed_scopes(plots, private).get(scope, 'needed')})",
                    REINSTALL,
                )
            )
            scopes.add(scope)  # said once
        else:
            rep.problems.append(
                CheckProblem(f"reading {name} fails: {err}", "see Slack's documentation of the error")
            )
    return _scopes(rep, scopes, header, plots, private)


def _not_member(name: str, channel: str, bot: str, how: str) -> CheckProblem:
    return CheckProblem(
        f"the bot @{bot} is not in {name} ({channel}): {how}",
        f"invite it: type /invite @{bot} in {name}",
    )


def _scopes(rep: CheckReport, scopes: set[str], header: Any, plots: bool, private: bool) -> CheckReport:
    if header is None:
        rep.facts.append("Slack did not report the token's scopes")
        return rep
    said = {p.what for p in rep.problems}
    for scope, why in needed_scopes(plots, private).items():
        if scope not in scopes and not any(scope in w for w in said):
            rep.problems.append(CheckProblem(f"the token lacks {scope} ({why})", REINSTALL))
    rep.facts.append("scopes: " + (", ".join(sorted(scopes)) or "none"))
    return rep
