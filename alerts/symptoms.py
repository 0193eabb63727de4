"""One page per incident: alerts that see the same symptom of the same run are one incident.

Rules that watch one symptom from different sides (a throughput slowdown on step times and a drop of
tokens/s; tokens/s and MFU) carry the same ``symptom`` label. The first of them to fire pages; the
others join its message (it is updated to show every view) without notifying again, whatever the
route's ``group_by`` (delivery puts an alert into the open episode that already holds its incident), as
long as one
that was announced, at least as severe, still fires: an escalation (a critical stall after a warning
that telemetry stopped) is news and pages. Decided here, from labels alone, for delivery (``compose``) and for
``herowatch replay``'s count of pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from alerts.model import Severity

SYMPTOM = "symptom"
SAME = ("run", SYMPTOM)  # what two alerts must share to be one incident


def incident(labels: Mapping[str, str]) -> tuple[str, ...] | None:
    """The incident an alert belongs to (its run and symptom), or None without a ``symptom`` label."""
    if not labels.get(SYMPTOM):
        return None
    return tuple(labels.get(k, "") for k in SAME)


def same_incident(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Do two alerts see one incident (same run and symptom)? Never without a symptom."""
    key = incident(a)
    return key is not None and key == incident(b)


def _rank(labels: Mapping[str, str]) -> int:
    try:
        return Severity(labels.get("severity", "")).rank
    except ValueError:
        return Severity.INFO.rank


def joins(labels: Mapping[str, str], announced: Iterable[Mapping[str, str]]) -> bool:
    """Does an alert with ``labels`` join an incident already paged (an ``announced`` alert, still
    firing, of the same run and symptom, at least as severe)? Then it is news for that message, not a
    new page."""
    key = incident(labels)
    if key is None:
        return False
    rank = _rank(labels)
    return any(incident(a) == key and _rank(a) <= rank for a in announced)
