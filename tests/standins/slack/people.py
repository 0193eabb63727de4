"""What people do in the Slack stand-in's workspace: type a slash command and click a button on a
message the app posted, sent to the app over Socket Mode as Slack sends them, and the answers the app
posts back to each request's ``response_url`` (a loopback URL here, ``POST /respond/<n>``).

A mixin of ``SlackStandin`` (tests/standins/slack/server.py). The payloads follow Slack's documents:
a slash command's fields (``command``, ``text``, ``user_id``, ``trigger_id``, ``response_url``, ...) and
a ``block_actions`` interaction built from the clicked message's own button (its ``action_id`` and
``value``), with a fresh ``trigger_id`` per command or click.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from tests.standins.slack.records import StoredMessage
from tests.standins.slack.socket_mode import APP_ID, Envelope, SocketModeServer

TEAM = "T0HEROWATCH"


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    team: str = TEAM


AMY = Person("U07AMY1234", "amy")
BOB = Person("U07BOB5678", "bob")


@dataclass
class Response:
    """What the app posted to a request's ``response_url``."""

    number: int
    body: dict[str, Any]


class PeopleMethods:
    # the state, set up by SlackStandin.__init__ (``url`` is its property)
    url: str
    socket: SocketModeServer
    responses: list[Response]
    _lock: threading.RLock
    _triggers: itertools.count[int]

    def response_url(self) -> str:
        return f"{self.url}/respond/{next(self._triggers)}"

    def receive_response(self, number: int, body: dict[str, Any]) -> None:
        with self._lock:
            self.responses.append(Response(number, body))

    def responses_to(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """What the app posted to that request's ``response_url``."""
        number = int(str(payload["response_url"]).rsplit("/", 1)[1])
        with self._lock:
            return [r.body for r in self.responses if r.number == number]

    def command_payload(self, text: str, who: Person = AMY, channel: str = "C0ONCALL") -> dict[str, Any]:
        n = next(self._triggers)
        return {
            "token": "legacy-verification-token",
            "team_id": who.team,
            "team_domain": "herowatch-test",
            "channel_id": channel,
            "channel_name": channel.lower(),
            "user_id": who.id,
            "user_name": who.name,
            "command": "/herowatch",
            "text": text,
            "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": f"{self.url}/respond/{n}",
            "trigger_id": f"{n}.4242.{n:08x}",
        }

    def click_payload(self, message: StoredMessage, action_id: str, who: Person = AMY) -> dict[str, Any]:
        """A click on the button ``action_id`` of ``message`` (as the app posted it, or last edited it)."""
        button = next(
            (
                el
                for block in message.blocks or ()
                if block.get("type") == "actions"
                for el in block.get("elements") or ()
                if el.get("action_id") == action_id
            ),
            None,
        )
        assert button is not None, f"no button {action_id} on the message: {message.blocks}"
        n = next(self._triggers)
        return {
            "type": "block_actions",
            "user": {"id": who.id, "username": who.name, "name": who.name, "team_id": who.team},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "is_ephemeral": False,
            },
            "trigger_id": f"{n}.4242.{n:08x}",
            "team": {"id": who.team, "domain": "herowatch-test"},
            "channel": {"id": message.channel, "name": message.channel.lower()},
            "message": {"type": "message", "ts": message.ts, "text": message.text},
            "response_url": f"{self.url}/respond/{n}",
            "actions": [
                {
                    "action_id": action_id,
                    "block_id": "herowatch_actions",
                    "value": button.get("value", ""),
                    "type": "button",
                    "text": button.get("text"),
                    "action_ts": f"{n}.000100",
                }
            ],
        }

    def command(self, text: str, who: Person = AMY, to: int | None = None) -> Envelope:
        """``/herowatch <text>`` typed by ``who``, sent over Socket Mode."""
        return self.socket.send("slash_commands", self.command_payload(text, who), to)

    def click(
        self, message: StoredMessage, action_id: str, who: Person = AMY, to: int | None = None
    ) -> Envelope:
        """A click on a button of ``message``, sent over Socket Mode."""
        return self.socket.send("interactive", self.click_payload(message, action_id, who), to)
