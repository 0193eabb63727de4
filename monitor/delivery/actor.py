"""Who does an on-call action, through which door, and with what role: the one record the on-call actions
(``monitor.delivery.oncall``) take and the audit trail keeps.

Roles, from least to most (docs/security.md has the table of what each may do):

- ``viewer``: reads;
- ``responder``: acknowledges, silences, expires silences;
- ``admin``: everything, including managing other people's API tokens;
- ``automation``: the shared ``HEROWATCH_API_TOKEN``, for scripts; it responds like a responder and is
  named as such wherever it acts (``automation``, or ``automation (ci-bot)`` with the name it gave).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    viewer = "viewer"
    responder = "responder"
    admin = "admin"
    automation = "automation"


class Need(StrEnum):
    """What a route or an action needs."""

    read = "read"
    respond = "respond"  # acknowledge, silence, expire a silence
    admin = "admin"  # other people's tokens, the audit trail of everyone


GRANTS: dict[Role, frozenset[Need]] = {
    Role.viewer: frozenset({Need.read}),
    Role.responder: frozenset({Need.read, Need.respond}),
    Role.admin: frozenset({Need.read, Need.respond, Need.admin}),
    Role.automation: frozenset({Need.read, Need.respond}),
}
RANK = {Role.viewer: 0, Role.automation: 1, Role.responder: 1, Role.admin: 2}


class Door(StrEnum):
    dashboard = "dashboard"
    api = "api"
    slack = "slack"
    cli = "cli"


class Via(StrEnum):
    """How the actor proved who they are."""

    token = "token"  # the shared automation token
    proxy = "proxy"  # identity headers from a trusted reverse proxy
    oidc = "oidc"  # an OpenID Connect sign-in
    personal = "personal"  # a personal API token
    slack = "slack"  # a signed Slack request (the Slack user)
    local = "local"  # herowatch's own CLI on the database (tests, admin commands)


@dataclass(frozen=True)
class Actor:
    name: str  # the person ("amy"), the Slack user ("amy (Slack U0AMY)"), or "automation (ci-bot)"
    role: Role
    door: Door
    via: Via

    def may(self, need: Need) -> bool:
        return need in GRANTS[self.role]

    def saying(self, name: str | None) -> Actor:
        """The automation token acting for the name a script gave; a person is who they signed in as."""
        return Actor.automation(self.door, said=name) if self.role == Role.automation and name else self

    @staticmethod
    def automation(door: Door, said: str | None = None) -> Actor:
        """The shared token: named as automation, with the name the caller gave, if any."""
        said = (said or "").strip()
        name = f"automation ({said})" if said and said != "automation" else "automation"
        return Actor(name=name, role=Role.automation, door=door, via=Via.token)

    @staticmethod
    def slack_user(label: str) -> Actor:
        """A Slack user who clicked a button or typed ``/herowatch`` in the workspace (signed by Slack)."""
        return Actor(name=label, role=Role.responder, door=Door.slack, via=Via.slack)


def best_role(roles: set[Role]) -> Role | None:
    return max(roles, key=lambda r: RANK[r]) if roles else None
