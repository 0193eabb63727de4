"""Inhibition: a firing alert that explains others mutes them (one outage, one page).

As in Alertmanager: an alert matching ``target`` is inhibited while an alert matching ``source`` fires
with the same values of the ``equal`` labels, e.g. a crashed run inhibits its own stall alert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from alerts.routing import Matcher, over_budget


@dataclass(frozen=True)
class InhibitRule:
    source: Sequence[Matcher]
    target: Sequence[Matcher]
    equal: Sequence[str] = ("run",)

    @classmethod
    def parse(
        cls, source: Iterable[str], target: Iterable[str], equal: Iterable[str] = ("run",)
    ) -> InhibitRule:
        """The rule, its matchers compiled once (here, when the config loads) and within the budget of
        a set of matchers (``alerts.routing.over_budget``), else ValueError naming the matcher."""
        rule = cls(
            tuple(Matcher.parse(m) for m in source), tuple(Matcher.parse(m) for m in target), tuple(equal)
        )
        if (too_costly := over_budget([*rule.source, *rule.target])) is not None:
            raise ValueError(too_costly)
        return rule

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


class InhibitIndex:
    """``inhibited`` for many alerts against the same firing set: each rule's sources are indexed by
    the values of its ``equal`` labels, so an alert is checked against the sources that share them,
    not against every firing alert (the same answer as ``inhibited``)."""

    def __init__(self, firing: Iterable[Mapping[str, str]], rules: Sequence[InhibitRule]) -> None:
        self._rules: list[tuple[InhibitRule, dict[tuple, list[Mapping[str, str]]]]] = []
        firing = list(firing)
        for rule in rules:
            by_key: dict[tuple, list[Mapping[str, str]]] = {}
            for src in firing:
                if all(m.matches(src) for m in rule.source):
                    by_key.setdefault(tuple(src.get(k) for k in rule.equal), []).append(src)
            self._rules.append((rule, by_key))

    def inhibited(self, labels: Mapping[str, str]) -> bool:
        for rule, by_key in self._rules:
            sources = by_key.get(tuple(labels.get(k) for k in rule.equal))
            if not sources or not all(m.matches(labels) for m in rule.target):
                continue
            if any(src != labels and src is not labels for src in sources):
                return True
        return False
