"""Routing: which receivers an alert goes to, by its labels (an Alertmanager-like route tree)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from alerts.grouping import GroupTiming
from alerts.text import bad_character

MAX_MATCHER_CHARS = 1024  # a whole matcher, name, operator and value: label regexes are short
# What a set of matchers that is compiled and kept (a silence's, an inhibit rule's) may cost in all, in
# RE2 program instructions: five 1024-character alternations of literals, or `.*`-style patterns by the
# hundred; a counted repetition is charged for its copies (`(?i)[a-z]{0,1000}` is 7,000 on its own).
MAX_REGEX_PROGRAM = 5_000
_NAME_OP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*(=~|!~|!=|=)")  # anchored, no nested repetition


def _re2_options() -> Any:
    opts = re2.Options()
    opts.log_errors = False  # RE2 would print every refused pattern to stderr
    opts.max_mem = 1 << 20  # bounds the compiled program: `(a{999}){999}`-style blow-ups are refused
    return opts


_OPTIONS = _re2_options()


def compile_regex(pattern: str, what: str) -> Any:
    """``pattern`` compiled by RE2: matching is linear in the input, whatever the pattern (no
    backtracking, so no catastrophic ``(.*.*)*X``). Raises ValueError for syntax RE2 does not have
    (lookaround, backreferences) or a pattern too big to compile."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise ValueError(
            f"bad regex in {what}: {reason} (RE2 syntax: no lookaround or backreferences)"
        ) from None


@dataclass(frozen=True)
class Matcher:
    """``name=value``, ``name!=value``, ``name=~regex`` or ``name!~regex``, as in Alertmanager.

    Regexes are RE2, anchored at both ends, compiled once here: matching takes time linear in the label
    value however the pattern is written. A matcher is at most ``MAX_MATCHER_CHARS`` long and holds no
    control characters (NUL, newline): it is parsed from user input (API, dashboard, Slack, rule files).
    """

    name: str
    op: str
    value: str
    regex: Any = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if self.op in ("=~", "!~") and self.regex is None:
            object.__setattr__(self, "regex", compile_regex(self.value, f"matcher {str(self)!r}"))

    @staticmethod
    def split(text: str) -> tuple[str, str, str]:
        """``text``'s name, operator and value, checked as text (length, characters, syntax) but not
        compiled: for reading back matchers that were checked when they were stored."""
        if not isinstance(text, str):
            raise ValueError(f"a matcher is text like run=hero-a, not {type(text).__name__}")
        if len(text) > MAX_MATCHER_CHARS:
            raise ValueError(f"matcher is {len(text)} characters long; the limit is {MAX_MATCHER_CHARS}")
        stripped = text.strip(" \t\r\n")
        if (bad := bad_character(stripped)) is not None:
            raise ValueError(f"matcher {text[:80]!r} contains {bad}")
        m = _NAME_OP.match(stripped)
        if not m:
            raise ValueError(f"bad matcher {text!r}: expected name=value, name!=value, name=~re or name!~re")
        name, op = m.groups()
        value = stripped[m.end() :].lstrip()
        if value.startswith('"'):
            value = value[1:]
        if value.endswith('"'):
            value = value[:-1]
        return name, op, value

    @classmethod
    def parse(cls, text: str) -> Matcher:
        name, op, value = cls.split(text)
        if op in ("=~", "!~"):
            return cls(name, op, value, compile_regex(value, f"matcher {text!r}"))
        return cls(name, op, value)

    @property
    def program_size(self) -> int:
        """What the matcher costs to keep and to run: its RE2 program's instructions (0 for ``=``)."""
        return int(self.regex.programsize) if self.regex is not None else 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        full = self.regex.fullmatch(actual) is not None
        return full if self.op == "=~" else not full

    def __str__(self) -> str:
        return f'{self.name}{self.op}"{self.value}"'


def over_budget(matchers: Sequence[Matcher], budget: int = MAX_REGEX_PROGRAM) -> str | None:
    """Why a set of matchers kept together (a silence's, an inhibit rule's) is too costly, naming the
    matcher that takes it over ``budget``; None when it fits."""
    total = 0
    for m in matchers:
        total += m.program_size
        if total > budget:
            alone = f"; {total:,} with the ones before it" if total != m.program_size else ""
            return (
                f"matcher {str(m)[:120]!r} is too complex: its regex compiles to {m.program_size:,} RE2 "
                f"instructions{alone}, and a set of matchers may have {budget:,} in all "
                "(a counted repetition like {0,1000} is charged for every copy: use * or +)"
            )
    return None


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
