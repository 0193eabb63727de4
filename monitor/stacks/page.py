"""A capture as a notifier shows it (``alerts.views.StackView``): the analysis of the nodes' answers,
with the nodes that did not answer named, and the stacks' age said."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alerts.durations import format_duration
from alerts.views import StackGroupView, StackView
from monitor.stacks.analysis import SHOWN_FRAMES, StackReport, analyse, frame_text
from monitor.stacks.model import NodeStacks

# The alerts that ask for stacks when they start: a hang (no step), or a job gone quiet.
ASKING_KINDS = frozenset({"stall", "telemetry_gone"})


def report_of(
    pushes: Sequence[NodeStacks], expected: Iterable[str], asked_at: float, now: float
) -> StackReport:
    """The analysis, with a problem for each node asked that has not answered."""
    report = analyse(pushes)
    missing = sorted(set(expected) - {p.node for p in pushes})
    if not missing:
        return report
    waited = format_duration(max(0.0, now - asked_at), 1)
    shown = ", ".join(missing[:5]) + (f" (+{len(missing) - 5})" if len(missing) > 5 else "")
    problem = f"{shown}: no answer within {waited}"
    return StackReport(
        groups=report.groups,
        counted=report.counted,
        total=report.total,
        others=report.others,
        problems=(*report.problems, problem),
        nodes=report.nodes,
        captured_at=report.captured_at,
        flight=report.flight,
    )


def view_of(report: StackReport, now: float, stuck_for: float | None, url: str = "") -> StackView:
    groups = tuple(
        StackGroupView(
            count=g.count,
            who=g.who(),
            where=g.where,
            frames=tuple(frame_text(f) for f in g.frames[:SHOWN_FRAMES]),
            odd=g.odd,
        )
        for g in report.groups[:12]
    )
    return StackView(report.summary(stuck_for, now), groups, report.captured_at, url)
