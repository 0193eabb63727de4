"""Delivery's mute stage, at claim time: is an alert muted? The one place that says so.

An alert is muted while an active silence matches its labels, or while another firing alert
inhibits it (a crashed run is not also paged as stalled). A muted alert is recorded and shown, never
sent; its resolution is not sent either (it was never announced). Acknowledgements are not mutes:
an acknowledged alert still gets its state changes, only no reminders (``compose``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.inhibition import InhibitIndex, InhibitRule
from alerts.model import AlertState
from alerts.silences import CompiledSilences, SilenceSpec, silenced_by
from monitor.storage import views
from monitor.storage.models import Alert


@dataclass(frozen=True)
class Mutes:
    silences: Sequence[SilenceSpec]
    firing: Sequence[Mapping[str, str]]
    inhibit_rules: Sequence[InhibitRule]
    now: float
    _index: InhibitIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the firing alerts indexed by what each rule compares (one lookup per alert, not a scan)
        object.__setattr__(self, "_index", InhibitIndex(self.firing, self.inhibit_rules))

    @classmethod
    def load(
        cls, s: Session, now: float, inhibit_rules: Sequence[InhibitRule], compiled: CompiledSilences
    ) -> Mutes:
        """The mutes in force at ``now``: the silences' matchers as ``compiled`` keeps them (compiled once
        per silence; a row edited by hand into unreadable matchers is ignored, never stops delivery)."""
        silences = views.active_silence_specs(s, now, compiled)
        firing = []
        if inhibit_rules:
            firing = [
                dict(a.labels) for a in s.scalars(select(Alert).where(Alert.state == AlertState.FIRING))
            ]
        return cls(tuple(silences), tuple(firing), tuple(inhibit_rules), now)

    def of(self, members: Iterable[tuple[Alert, object]]) -> dict[int, str]:
        """The muted ones among a group's members: alert id -> why."""
        return {a.id: why for a, _ in members if (why := self.reason(a.labels)) is not None}

    def reason(self, labels: Mapping[str, str]) -> str | None:
        """Why an alert with these labels is muted now, or None."""
        hit = silenced_by(labels, self.silences, self.now)
        if hit is not None:
            return f"silenced by silence {hit.id}"
        if self.inhibit_rules and self._index.inhibited(labels):
            return "inhibited"
        return None
