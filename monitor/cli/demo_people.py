"""The demo's person: whoever runs it, as a responder with a personal API token (printed once, as the
demo prints the one-time automation token it made), so that an acknowledgement from the CLI or the API
carries a person's name on the alert's timeline, in the audit trail and in the receivers' updates."""

from __future__ import annotations

import getpass
import shutil
import textwrap
from typing import TYPE_CHECKING

from alerts.text import bad_character
from monitor.delivery.actor import Actor, Door, Role, Via

if TYPE_CHECKING:
    from monitor.service import Service


def person_name() -> str:
    try:
        name = getpass.getuser().strip()
    except (KeyError, OSError):
        name = ""
    return name if name and len(name) <= 100 and bad_character(name) is None else "on-call"


def issue(service: Service, url: str) -> str:
    """A personal token for the person running the demo, and how to act as them."""
    from monitor.web import people_tokens

    name = person_name()
    actor = Actor(name=name, role=Role.responder, door=Door.cli, via=Via.local)
    _, token = people_tokens.issue(service.api_context(), actor, "the demo")
    text = (
        f"To act as yourself ({name}, a responder) from the CLI: export HEROWATCH_URL={url} "
        f"HEROWATCH_API_TOKEN={token} then `herowatch alert ack <id>`: the alert's timeline, the audit "
        f"page ({url}/audit) and the console say {name} took it."
    )
    width = min(100, max(60, shutil.get_terminal_size((100, 24)).columns))
    return textwrap.fill(
        text, width=width, subsequent_indent="    ", break_on_hyphens=False, break_long_words=False
    )
