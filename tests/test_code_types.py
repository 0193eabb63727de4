"""The code compares statuses and kinds with their types, never with bare strings.

Where herowatch has a type for a status (``AlertState``, ``OutboxStatus``, ``SendStatus``) or a kind
(``NotificationKind``), ``row.status == "sending"`` reads as a typo waiting to happen: a value the type
does not have would compare False forever, silently. This walks the code of ``alerts/`` and
``monitor/`` and names every comparison of such an attribute with a string that is one of the type's
values.
"""

from __future__ import annotations

import ast
from pathlib import Path

from alerts.model import AlertState
from alerts.outbox import SendStatus
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


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def string_comparisons(source: str, rel: str) -> list[str]:
    """The comparisons in ``source`` (the file ``rel``) of a typed attribute with one of its values."""
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:], strict=False):
            for attr, other in ((a, b), (b, a)):
                if not isinstance(attr, ast.Attribute) or attr.attr not in TYPED:
                    continue
                values, where = TYPED[attr.attr]
                if rel.startswith(where) and any(s in values for s in _strings(other)):
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
        ' or view.kind == "notify" or resp.status == 404 or a.state == "running"\n'
    )
    assert string_comparisons(good, "monitor/delivery/x.py") == []
    assert string_comparisons('x = n.kind == "ack"\n', "monitor/web/x.py") == []  # another kind there
