"""State has one owner: no module touches another object's private attributes.

An object hands its state to others as a small object they own (``RunMemory``, ``CheckpointCounter``,
``SourcePolls``), never as its private fields: ``eng._cursors`` read in another module is how one
class ends up spread over five files. This walks the code of ``alerts/`` and ``monitor/`` and names
every ``x._name`` where ``x`` is not ``self``, ``cls`` or ``super()`` and no class in the same file
owns ``_name`` (sets ``self._name`` or declares it in its body): another instance of one's own class
is fine, another class's field is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A module that is part of a class defined elsewhere, split out for length: it may touch that class's
# fields as the class's own file may. Prefer a mixin the class inherits (``rules/stall_batch.py``'s
# ``StallBatch``), whose methods reach the fields through ``self``; none is needed now.
PART_OF: dict[str, tuple[str, ...]] = {}

# Private attributes of third-party objects, with why there is no public way.
THIRD_PARTY = {
    ("monitor/sources/wandb_client.py", "_service_api"): "wandb's public Api cannot send one GraphQL query "
    "with a timeout of ours",
}


def owned(tree: ast.AST) -> set[str]:
    """The private attribute names the classes of a module own."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
        for stmt in cls.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if n.startswith("_")}


def _is_own(value: ast.expr) -> bool:
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def reaches(source: str, rel: str, owners: set[str]) -> list[str]:
    """The ``x._name`` in ``source`` (the file ``rel``) that touch a field no class of ``owners`` owns."""
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or _is_own(node.value):
            continue
        if name in owners or (rel, name) in THIRD_PARTY:
            continue
        found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_touches_another_objects_private_fields() -> None:
    files = sorted((ROOT / "alerts").rglob("*.py")) + sorted((ROOT / "monitor").rglob("*.py"))
    found = []
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        tree = ast.parse(f.read_text(), rel)
        owners = owned(tree)
        for part_of in PART_OF.get(rel, ()):
            owners |= owned(ast.parse((ROOT / part_of).read_text()))
        found += reaches(f.read_text(), rel, owners)
    assert not found, "hand the state over as an object the other module owns:\n" + "\n".join(found)


def test_the_walk_sees_a_reach_and_lets_own_fields_be() -> None:
    engine = "class Engine:\n    def __init__(self):\n        self._warm = set()\n"
    other = "def known(eng):\n    return eng._warm, eng.memory\n"
    assert reaches(other, "monitor/engine/x.py", owned(ast.parse(other))) == [
        "monitor/engine/x.py:2: eng._warm"
    ]
    same_file = engine + "    def merge(self, other):\n        return other._warm | self._warm\n"
    assert reaches(same_file, "monitor/engine/x.py", owned(ast.parse(same_file))) == []
    own = "class A(B):\n    def f(self):\n        return super()._g()\n"
    assert reaches(own, "monitor/x.py", owned(ast.parse(own))) == []
