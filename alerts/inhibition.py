"""Inhibition: a firing alert that explains others mutes them (one outage, one page).

As in Alertmanager: an alert matching ``target`` is inhibited while an alert matching ``source`` fires
with the same values of the ``equal`` labels, e.g. a crashed run inhibits its own stall alert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from alerts.routing import Matcher


@dataclass(frozen=True)
class InhibitRule:
    source: Sequence[Matcher]
    target: Sequence[Matcher]
    equal: Sequence[str] = ("run",)

    @classmethod
    def parse(
        cls, source: Iterable[str], target: Iterable[str], equal: Iterable[str] = ("run",)
    ) -> InhibitRule:
        return cls(
            tuple(Matcher.parse(m) for m in source), tuple(Matcher.parse(m) for m in target), tuple(equal)
        )

    def inhibits(self, source_labels: Mapping[str, str], target_labels: Mapping[str, str]) -> bool:
        if source_labels is target_labels:
            return False
        return (
            all(m.matches(source_labels) for m in self.source)
            and all(m.matches(target_labels) for m in self.target)
            and all(source_labels.get(k) == target_labels.get(k) for k in self.equal)
        )


def inhibited(
    labels: Mapping[str, str], firing: Iterable[Mapping[str, str]], rules: Sequence[InhibitRule]
) -> bool:
    """Is an alert with ``labels`` muted by one of the ``firing`` alerts?"""
    firing = list(firing)
    return any(rule.inhibits(src, labels) for rule in rules for src in firing if src != labels)


DEFAULT_INHIBIT_RULES: tuple[tuple[list[str], list[str], list[str]], ...] = (
    # A run that crashed, failed or was killed: its stall, throughput and telemetry alerts say nothing more.
    (
        ['alertname=~"run_crashed|crash_loop"'],
        ['alertname=~"progress_stalled|telemetry_gone|throughput_.*|mfu_.*|tokens_per_second_.*"'],
        ["run"],
    ),
    # A source that cannot be read explains missing telemetry.
    (['alertname="source_unavailable"'], ['alertname=~"telemetry_gone|.*_absent"'], ["run"]),
    # Most runs of a watch blind alike: the watch's one watching_blind message stands for theirs.
    (
        ['alertname="watching_blind"', 'scope="watch"'],
        ['alertname="watching_blind"', 'scope!="watch"'],
        ["watch"],
    ),
)
