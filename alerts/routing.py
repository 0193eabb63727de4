"""Routing: which receivers an alert goes to, by its labels (an Alertmanager-like route tree)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from alerts.grouping import GroupTiming


@dataclass(frozen=True)
class Matcher:
    """``name=value``, ``name!=value``, ``name=~regex`` or ``name!~regex``, as in Alertmanager."""

    name: str
    op: str
    value: str

    _PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"?(.*?)\"?\s*$")

    @classmethod
    def parse(cls, text: str) -> Matcher:
        m = cls._PATTERN.match(text)
        if not m:
            raise ValueError(f"bad matcher {text!r}: expected name=value, name!=value, name=~re or name!~re")
        name, op, value = m.groups()
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"bad regex in matcher {text!r}: {exc}") from None
        return cls(name, op, value)

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        full = re.fullmatch(self.value, actual) is not None
        return full if self.op == "=~" else not full

    def __str__(self) -> str:
        return f'{self.name}{self.op}"{self.value}"'


@dataclass(frozen=True)
class Route:
    receiver: str
    matchers: Sequence[Matcher] = ()
    group_by: Sequence[str] = ("run",)
    timing: GroupTiming = GroupTiming()
    continue_: bool = False
    routes: Sequence[Route] = field(default_factory=tuple)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)


def receivers_for(root: Route, labels: Mapping[str, str]) -> list[Route]:
    """The routes (deepest match, Alertmanager semantics) an alert with ``labels`` is sent along."""
    matched: list[Route] = []
    for child in root.routes:
        if child.matches(labels):
            deeper = receivers_for(child, labels)
            matched.extend(deeper)
            if not child.continue_:
                break
    return matched or [root]


QUIET_SEVERITIES = frozenset({"info"})  # recorded and shown; sent only where a route asks for them


def routes_for(root: Route, labels: Mapping[str, str]) -> list[Route]:
    """The routes an alert is sent along. An alert of a quiet severity (info) goes only along routes
    that ask for it explicitly: a route on its path matched it with a ``severity`` matcher."""
    if labels.get("severity") not in QUIET_SEVERITIES:
        return receivers_for(root, labels)
    return [route for route, explicit in _matched(root, labels, _names_severity(root)) if explicit]


def _names_severity(route: Route) -> bool:
    return any(m.name == "severity" for m in route.matchers)


def _matched(root: Route, labels: Mapping[str, str], explicit: bool) -> list[tuple[Route, bool]]:
    out: list[tuple[Route, bool]] = []
    for child in root.routes:
        if child.matches(labels):
            out.extend(_matched(child, labels, explicit or _names_severity(child)))
            if not child.continue_:
                break
    return out or [(root, explicit)]
