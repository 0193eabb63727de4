"""What the console (the demo's receiver) prints: a page reads as a page, and nothing else does."""

from __future__ import annotations

from alerts.notifiers.console import ConsoleNotifier
from tests.views_support import alert, group


def test_a_new_incident_prints_as_firing_with_its_severity():
    text = ConsoleNotifier().render(group(alert(1, "throughput_slowdown", severity="warning"), kind="open"))
    assert text.startswith("[herowatch] FIRING WARNING throughput_slowdown run=")


def test_a_second_rule_joining_a_paged_incident_never_reads_as_a_second_page():
    """throughput_drop joins the message throughput_slowdown paged (same symptom): the update is news,
    but the console says no new page, without FIRING or a severity in capitals."""
    first = alert(1, "throughput_slowdown", severity="warning")
    joined = alert(2, "throughput_drop", severity="warning", summary="throughput dropped 20%")
    text = ConsoleNotifier().render(group(first, joined, kind="update", changed=frozenset({"2"})))
    assert "FIRING" not in text and "WARNING" not in text
    assert text.startswith("[herowatch] same incident, no new page: throughput_drop (warning)")
    assert "throughput dropped 20%" in text


def test_a_resolution_in_an_update_still_prints_as_resolved():
    first = alert(1, "throughput_slowdown", severity="warning")
    done = alert(2, "throughput_drop", severity="warning", state="resolved", ended_at=1_780_000_600.0)
    text = ConsoleNotifier().render(group(first, done, kind="update", changed=frozenset({"2"})))
    assert text.startswith("[herowatch] RESOLVED WARNING throughput_drop")
