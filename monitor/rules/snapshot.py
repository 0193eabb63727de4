"""Detector state as a versioned, bounded, JSON-able snapshot, so that a restarted (or taking-over)
replica resumes every rule where it was instead of warming up again and resolving what fires.

A detector's state is its instance attributes. They are plain values (numbers, text, None), lists,
tuples, dicts, sets, deques with a ``maxlen`` (bounded windows) and small objects of the rule modules
(``SortedValues``, a spike baseline) made of the same. ``encode`` turns such a value into JSON-able
data (non-finite floats spelled out, containers tagged), ``decode`` rebuilds it. A value of any other
type makes the detector's snapshot fail with ``SnapshotError``: that detector then starts cold, which
is safe (the evaluator keeps a restored alert from resolving until the detector is ready again).

The snapshot of a detector names its kind and a hash of its rule's parameters: a rule changed in the
config between two runs of herowatch starts cold rather than from state made for other parameters.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections import deque
from enum import Enum
from typing import Any

VERSION = 1
SKIP = frozenset({"rule", "run"})  # given anew when the detector is built
MAX_DEPTH = 8
_ALLOWED_MODULES = ("monitor.rules.", "alerts.")


class SnapshotError(ValueError):
    pass


def rule_hash(rule: Any) -> str:
    # ``expect`` says what coverage expects of a run, not how the detector computes: not in the hash
    return hashlib.sha256(rule.model_dump_json(exclude={"expect"}).encode()).hexdigest()[:16]


def _float(v: float) -> Any:
    if math.isfinite(v):
        return v
    return {"$f": "nan" if v != v else ("inf" if v > 0 else "-inf")}


def encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise SnapshotError("state nested too deeply")
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        return _float(value)
    d = depth + 1
    if t is list:
        return [encode(v, d) for v in value]
    if t is tuple:
        return {"$t": [encode(v, d) for v in value]}
    if t is dict:
        return {"$d": [[encode(k, d), encode(v, d)] for k, v in value.items()]}
    if t is deque:
        return {"$q": [encode(v, d) for v in value], "n": value.maxlen}
    if t is set or t is frozenset:
        return {"$s": [encode(v, d) for v in value]}
    if isinstance(value, Enum):
        return {"$e": f"{t.__module__}:{t.__qualname__}", "v": value.value}
    if t.__module__.startswith(_ALLOWED_MODULES):
        return {"$o": f"{t.__module__}:{t.__qualname__}", "a": encode_attrs(value, d)}
    raise SnapshotError(f"cannot snapshot a {t.__name__}")


def encode_attrs(obj: Any, depth: int = 0, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        names += [n for n in getattr(cls, "__slots__", ()) if n not in names]
    return {n: encode(getattr(obj, n), depth) for n in names if n not in skip and hasattr(obj, n)}


def _cls(path: str) -> type:
    module, _, name = path.partition(":")
    if not module.startswith(_ALLOWED_MODULES):
        raise SnapshotError(f"refusing to rebuild {path}")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def decode(data: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise SnapshotError("state nested too deeply")
    if data is None or isinstance(data, bool | int | float | str):
        return data
    d = depth + 1
    if isinstance(data, list):
        return [decode(v, d) for v in data]
    if not isinstance(data, dict) or len(data) > 2:
        raise SnapshotError("unreadable state")
    if "$f" in data:
        return float(data["$f"])
    if "$t" in data:
        return tuple(decode(v, d) for v in data["$t"])
    if "$d" in data:
        return {decode(k, d): decode(v, d) for k, v in data["$d"]}
    if "$q" in data:
        return deque((decode(v, d) for v in data["$q"]), maxlen=data.get("n"))
    if "$s" in data:
        return {decode(v, d) for v in data["$s"]}
    if "$e" in data:
        return _cls(data["$e"])(data["v"])
    if "$o" in data:
        cls = _cls(data["$o"])
        obj = cls.__new__(cls)
        restore_attrs(obj, data["a"], d)
        return obj
    raise SnapshotError("unreadable state")


def restore_attrs(obj: Any, attrs: dict[str, Any], depth: int = 0) -> None:
    if not isinstance(attrs, dict):
        raise SnapshotError("unreadable state")
    for name, value in attrs.items():
        setattr(obj, name, decode(value, depth))
