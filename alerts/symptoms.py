"""One page per incident: alerts that see the same symptom of the same run are one incident.

Rules that watch one symptom from different sides (a throughput slowdown on step times and a drop of
tokens/s; tokens/s and MFU) carry the same ``symptom`` label. The first of them to fire pages; the
others join its message (it is updated to show every view) without notifying again, as long as one
that was announced still fires. Decided here, from labels alone, for delivery (``compose``) and for
``herowatch replay``'s count of pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

SYMPTOM = "symptom"
SAME = ("run", SYMPTOM)  # what two alerts must share to be one incident


def incident(labels: Mapping[str, str]) -> tuple[str, ...] | None:
    """The incident an alert belongs to (its run and symptom), or None without a ``symptom`` label."""
    if not labels.get(SYMPTOM):
        return None
    return tuple(labels.get(k, "") for k in SAME)


def joins(labels: Mapping[str, str], announced: Iterable[Mapping[str, str]]) -> bool:
    """Does an alert with ``labels`` join an incident already paged (an ``announced`` alert, still
    firing, of the same run and symptom)? Then it is news for that message, not a new page."""
    key = incident(labels)
    return key is not None and any(incident(a) == key for a in announced)
