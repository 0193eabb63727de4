"""The code compares statuses and kinds with their types, never with bare strings.

Where herowatch has a type for a status (``AlertState``, ``OutboxStatus``, ``SendStatus``), a kind
(``NotificationKind``) or a run's state (``RunState``), ``row.status == "sending"`` reads as a typo
waiting to happen: a value the type does not have would compare False forever, silently. This walks
the code of ``alerts/`` and ``monitor/`` and names every comparison of such an attribute with a string
that is one of the type's values.

``state`` names an alert's state and a run's alike: a ``.state`` attribute or a ``state`` (``st``)
variable (or ``states``, a rule's list of them) compared with a string that is a ``RunState`` value and
no ``AlertState`` value (``"crashed"``, not ``"pending"``) is a run-state comparison.
"""

from __future__ import annotations

import ast
from pathlib import Path

from alerts.model import AlertState
from alerts.outbox import SendStatus
from monitor.samples import RunState
from monitor.storage.statuses import NotificationKind, OutboxStatus

ROOT = Path(__file__).resolve().parents[1]

# attribute -> the values a type holds for it, and where the attribute means that type
TYPED: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "state": (frozenset(AlertState), ("alerts", "monitor")),
    "to_state": (frozenset(AlertState), ("alerts", "monitor")),
    "from_state": (frozenset(AlertState), ("alerts", "monitor")),
    "status": (frozenset(OutboxStatus) | frozenset(SendStatus), ("alerts", "monitor")),
    # an outbox row's kind (a message's kind, ``GroupView.kind``, is a ``Literal`` of its own)
    "kind": (frozenset(NotificationKind) - {"repeat", "refresh"}, ("monitor/delivery", "monitor/storage")),
}

# a run's state: the attributes and variables that hold one, and the values only a run's state has
RUN_STATE_ATTRS = frozenset({"state", "states", "run_state"})
RUN_STATE_NAMES = frozenset({"state", "states", "st", "run_state"})
RUN_ONLY = frozenset(RunState) - frozenset(AlertState)


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _typed(attr: ast.expr, other: ast.expr, rel: str) -> bool:
    """Is ``attr`` a typed attribute compared with one of its type's values (``other``)?"""
    if not isinstance(attr, ast.Attribute) or attr.attr not in TYPED:
        return False
    values, where = TYPED[attr.attr]
    return rel.startswith(where) and any(s in values for s in _strings(other))


def _run_state(held: ast.expr, other: ast.expr) -> bool:
    """Is ``held`` a run's state compared with a bare run-state string (``other``)?"""
    named = (isinstance(held, ast.Attribute) and held.attr in RUN_STATE_ATTRS) or (
        isinstance(held, ast.Name) and held.id in RUN_STATE_NAMES
    )
    return named and any(s in RUN_ONLY for s in _strings(other))


def string_comparisons(source: str, rel: str) -> list[str]:
    """The comparisons in ``source`` (the file ``rel``) of a typed attribute with one of its values."""
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:], strict=False):
            if any(_typed(x, y, rel) or _run_state(x, y) for x, y in ((a, b), (b, a))):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_statuses_and_kinds_are_compared_with_their_types() -> None:
    files = sorted((ROOT / "alerts").rglob("*.py")) + sorted((ROOT / "monitor").rglob("*.py"))
    found = [hit for f in files for hit in string_comparisons(f.read_text(), f.relative_to(ROOT).as_posix())]
    assert not found, "compare with the enum, not a string:\n" + "\n".join(found)


def test_the_check_catches_bare_strings_and_passes_types() -> None:
    bad = (
        "def f(row, a, o):\n"
        '    return row.status == "sending" or a.state in ("firing", "x") or row.kind != "ack"'
        ' or o.status == "sent"\n'
    )
    assert len(string_comparisons(bad, "monitor/delivery/x.py")) == 4
    good = (
        "def f(row, a, view, resp):\n"
        "    return row.status == OutboxStatus.SENDING or a.state in (AlertState.FIRING,)"
        ' or view.kind == "notify" or resp.status == 404\n'
    )
    assert string_comparisons(good, "monitor/delivery/x.py") == []
    assert string_comparisons('x = n.kind == "ack"\n', "monitor/web/x.py") == []  # another kind there


def test_the_check_catches_run_states_as_bare_strings() -> None:
    bad = (
        "def f(self, run, sample, state, st):\n"
        '    return run.state == "crashed" or sample.state in ("crashed", "failed") or state != "running"'
        ' or st == "preempting" or "finished" == run.state or "finished" in self.states\n'
    )
    assert len(string_comparisons(bad, "monitor/rules/x.py")) == 6
    assert string_comparisons('ok = run.state == "crashed"\n', "monitor/web/status.py") == [
        "monitor/web/status.py:1: run.state == 'crashed'"
    ]
    good = (
        "def f(run, state, cov, silence):\n"
        '    return run.state == RunState.CRASHED or state in DOWN_STATES or cov.state == "blind"'
        ' or state == "pending" or silence.state == "active"\n'
    )
    assert string_comparisons(good, "monitor/web/x.py") == []
