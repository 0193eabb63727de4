"""What herowatch answers a person in Slack (a button click, a ``/herowatch`` command): an ephemeral
message only they see, and the refusals both doors share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    text: str  # the whole answer in plain words (notifications, screen readers, clients without blocks)
    blocks: tuple[dict[str, Any], ...] = ()

    def message(self) -> dict[str, Any]:
        """The answer as Slack takes it: an HTTP response body, a Socket Mode acknowledgement's payload or
        a POST to the request's ``response_url``."""
        out: dict[str, Any] = {"response_type": "ephemeral", "replace_original": False, "text": self.text}
        if self.blocks:
            out["blocks"] = list(self.blocks)
        return out

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Reply:
        """The reply :meth:`message` made, read back (as stored for a re-delivered request)."""
        return cls(str(message.get("text") or ""), tuple(message.get("blocks") or ()))


class Refused(Exception):
    """A request herowatch will not act on: the HTTP status, and what the person is told."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_team(expected: str | None, team_id: str | None) -> None:
    """``HEROWATCH_SLACK_TEAM_ID``, when set, is the only workspace whose people may act."""
    if expected and team_id != expected:
        raise Refused(403, "this Slack workspace is not the one herowatch serves")
