"""What a message told of its group's alerts: composed at claim time, carried on the outbox row until
the message is sent, then recorded (``record``: the alerts announced, the resolutions told). This
module is the one place the record is written into a row's payload and read back from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from alerts.views import Kind

KEY = "told"  # under this key in the outbox row's payload
KINDS = frozenset(get_args(Kind))


@dataclass(frozen=True)
class Told:
    kind: Kind
    announced: tuple[int, ...] = ()  # firing alerts the message tells of
    resolved: tuple[int, ...] = ()  # resolutions it tells of

    @property
    def restarts_timers(self) -> bool:
        """A refresh tells nothing new: the group's timers keep running."""
        return self.kind != "refresh"

    def into(self, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        """``payload`` with this record in it."""
        told = {"announced": list(self.announced), "resolved": list(self.resolved), "kind": self.kind}
        return {**(payload or {}), KEY: told}

    @classmethod
    def read(cls, payload: Mapping[str, Any] | None) -> Told | None:
        """The record ``into`` wrote into ``payload`` (None: the row carries none, e.g. a heartbeat)."""
        raw = (payload or {}).get(KEY)
        if not isinstance(raw, Mapping) or raw.get("kind") not in KINDS:
            return None
        return cls(raw["kind"], tuple(raw["announced"]), tuple(raw["resolved"]))
