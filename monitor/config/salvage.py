"""Every problem of a config file in one pass: when some fields are invalid, the checks across fields
(references to receivers, rule overrides, matchers) still run, on the file with the invalid parts
taken out.

``salvage`` validates; for each error it removes the field it names (the value of a dict key, or, when
that does not help, the list item holding it: a receiver of an unknown kind) and validates again, a
few rounds at most. Problems found in later rounds are new only where nothing was removed; the list
items removed are remembered by name, so that a reference to them ("'console' is not a receiver") is
not reported as a second, false problem. Field paths of later checks are mapped back to the file's
own indices (removing ``watch[0]`` does not rename ``watch[1]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from monitor.config.errors import Problem
from monitor.config.yamlpos import Path_, format_loc, parse_loc, problems_from

ROUNDS = 8
_ITEM = re.compile(r"\b([a-z_]+)\[(\d+)\]")  # a top-level list item named in a message: watch[0]


@dataclass
class Salvaged:
    model: BaseModel | None  # the config without its invalid parts, or None when nothing was left valid
    problems: list[Problem]  # the validation problems, each with its line
    removed_names: set[str] = field(default_factory=set)  # names of the list items taken out
    _index: dict[Path_, list[int]] = field(default_factory=dict)  # list path -> the file's indices left

    def original(self, loc: Path_) -> Path_:
        """A path in the salvaged data as a path in the file."""
        out: list[str | int] = []
        for part in loc:
            here = tuple(out)
            if isinstance(part, int) and here in self._index and part < len(self._index[here]):
                part = self._index[here][part]
            out.append(part)
        return tuple(out)

    def relocate(self, problems: list[Problem]) -> list[Problem]:
        """Later problems (named in the salvaged data's terms) in the file's terms; those that refer to a
        removed item by name are dropped: the item's own problem was reported."""
        out = []
        for p in problems:
            if any(repr(name) in p.message for name in self.removed_names):
                continue
            message = _ITEM.sub(lambda m: format_loc(self.original((m[1], int(m[2])))), p.message)
            out.append(Problem(p.line, format_loc(self.original(parse_loc(p.field))), message))
        return out


def _data_loc(data: Any, loc: tuple[Any, ...]) -> Path_:
    """The part of an error's location that exists in the data (pydantic adds tags of its validators)."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            out.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            out.append(part)
    return tuple(out)


def _remove(data: Any, loc: Path_, salvaged: Salvaged, orig_lists: dict[Path_, int]) -> Path_ | None:
    """Remove what ``loc`` names: its value when a dict holds it, else the list item holding it. Returns
    the path removed (in the data's terms), or None when nothing could be."""
    if not loc:
        return None
    *head, last = loc
    parent = data
    for part in head:
        parent = parent[part]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
        return loc
    if isinstance(parent, list) and isinstance(last, int):
        item = parent.pop(last)
        orig_path = salvaged.original(tuple(head))
        index = salvaged._index.setdefault(orig_path, list(range(orig_lists.get(orig_path, len(parent) + 1))))
        index.pop(last)
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            salvaged.removed_names.add(item["name"])
        return loc
    return None


def _list_sizes(data: Any, here: Path_ = (), out: dict[Path_, int] | None = None) -> dict[Path_, int]:
    out = {} if out is None else out
    if isinstance(data, dict):
        for k, v in data.items():
            _list_sizes(v, (*here, k), out)
    elif isinstance(data, list):
        out[here] = len(data)
        for i, v in enumerate(data):
            _list_sizes(v, (*here, i), out)
    return out


def salvage(
    model: type[BaseModel], data: dict[str, Any], positions: dict[Path_, int], context: dict | None = None
) -> Salvaged:
    sizes = _list_sizes(data)
    salvaged = Salvaged(None, [])
    tried: set[Path_] = set()
    touched: list[Path_] = []  # paths removed, in the file's terms
    for round_ in range(ROUNDS):
        try:
            salvaged.model = model.model_validate(data, context=context)
            return salvaged
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            found = problems_from(exc, {}, model=model)
            for err, problem in zip(errors, found, strict=True):
                orig = salvaged.original(_data_loc(data, tuple(err["loc"])))
                new = round_ == 0 or (
                    err["type"] != "missing" and not any(orig[: len(t)] == t for t in touched)
                )
                named = salvaged.original(parse_loc(problem.field))
                said = Problem(_line(named, positions), format_loc(named), problem.message)
                if new and said not in salvaged.problems:
                    salvaged.problems.append(said)
            targets: set[Path_] = set()
            for err in errors:
                loc = _data_loc(data, tuple(err["loc"]))
                while loc in tried and loc:  # removing it did not help: remove what holds it
                    loc = loc[:-1]
                if loc:
                    targets.add(loc)
            # outermost first wins over what it holds; then the last list items first, so that removing
            # one does not move the others
            chosen = [t for t in targets if not any(o != t and t[: len(o)] == o for o in targets)]
            if not chosen:
                return salvaged
            for loc in sorted(chosen, key=_order, reverse=True):
                orig = salvaged.original(loc)
                try:
                    removed = _remove(data, loc, salvaged, sizes)
                except (KeyError, IndexError, TypeError):
                    removed = None
                if removed is not None:
                    tried.add(loc)
                    touched.append(orig)
    return salvaged


def _order(loc: Path_) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in loc)


def _line(loc: Path_, positions: dict[Path_, int]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in positions:
            return positions[loc[:n]]
    return None
