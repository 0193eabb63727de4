"""Detector state as a versioned, bounded, JSON-able snapshot, so that a restarted (or taking-over)
replica resumes every rule where it was instead of warming up again and resolving what fires.

A detector's state is its instance attributes. They are plain values (numbers, text, None), lists,
tuples, dicts, sets, deques with a ``maxlen`` (bounded windows), arrays of doubles and small objects of
the rule modules (``SortedValues``, a spike baseline) made of the same (such an object's
``_after_restore``, if it has one, brings a form an older version wrote up to date). ``encode`` turns
such a value into JSON-able data (non-finite floats spelled out, containers tagged), ``decode``
rebuilds it. Long runs of floats (a window, a list of buckets) are packed (``snapshot_pack``: the
doubles as base64 text, by column for tuples) unless ``PACK`` is off. A ``RunState`` is
kept as its text, as snapshots had it before there was one; restored, the text compares equal to it.
A ``Sample`` (the newest one a threshold, drop, flat-line or spike detector judged) is kept as its
time, run, step, metrics and source, what the detectors read of it.
A value of any other type makes the detector's snapshot fail with ``SnapshotError``: that detector
then starts cold, which is safe (the evaluator keeps a restored alert from resolving until the
detector is ready again).

The snapshot of a detector names its kind and a hash of its rule's parameters: a rule changed in the
config between two runs of herowatch starts cold rather than from state made for other parameters.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import threading
from array import array
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from itertools import chain
from typing import Any

from monitor.rules.snapshot_pack import (
    PackError,
    pack_doubles,
    packed,
    packed_map,
    unpack_doubles,
    unpacked,
    unpacked_map,
)
from monitor.samples import RunState, Sample

VERSION = 1
SKIP = frozenset({"rule", "run"})  # given anew when the detector is built
MAX_DEPTH = 8
_ALLOWED_MODULES = ("monitor.rules.", "alerts.")


class SnapshotError(ValueError):
    pass


_HASHES: dict[int, tuple[Any, str]] = {}  # id(rule) -> (the rule, kept so its id stays its own; hash)
_HASHES_MAX = 4096


def rule_hash(rule: Any) -> str:
    """A hash of the rule's parameters (computed once per rule object: rules are not changed in place,
    a reloaded config makes new ones)."""
    hit = _HASHES.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    # ``expect`` says what coverage expects of a run, not how the detector computes: not in the hash
    digest = hashlib.sha256(rule.model_dump_json(exclude={"expect", "importance"}).encode()).hexdigest()[:16]
    if len(_HASHES) >= _HASHES_MAX:
        _HASHES.clear()
    _HASHES[id(rule)] = (rule, digest)
    return digest


def _float(v: float) -> Any:
    if math.isfinite(v):
        return v
    return {"$f": "nan" if v != v else ("inf" if v > 0 else "-inf")}


_PLAIN = frozenset({type(None), bool, int, str})  # taken as they are
PACK = True  # long runs of numbers packed (``snapshot_pack``, state version 3); False: as version 2 wrote


def encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise SnapshotError("state nested too deeply")
    t = type(value)
    if t in _PLAIN:
        return value
    if t is float:
        return value if value - value == 0.0 else _float(value)  # inf - inf and nan - nan are nan
    d = depth + 1
    if t is list:
        p = packed(value) if PACK else None
        return _items(value, d) if p is None else {"$l": p}
    if t is tuple:
        p = packed(value) if PACK else None
        return {"$t": _items(value, d) if p is None else p}
    if t is dict:
        p = packed_map(value) if PACK else None
        return {"$d": _pairs(value, d)} if p is None else {"$m": p}
    if t is deque:
        p = packed(value) if PACK else None
        return {"$q": _items(value, d) if p is None else p, "n": value.maxlen}
    if t is array and value.typecode == "d":
        return {"$a": pack_doubles(value) if PACK else _items(value, d)}
    if t is set or t is frozenset:
        return {"$s": _items(value, d)}
    if t is RunState:
        return value.value  # as text, as snapshots had it before RunState: it compares equal to one
    if t is Sample:
        return _sample(value, d)
    if isinstance(value, Enum):
        return {"$e": f"{t.__module__}:{t.__qualname__}", "v": value.value}
    if t.__module__.startswith(_ALLOWED_MODULES):
        return {"$o": f"{t.__module__}:{t.__qualname__}", "a": encode_attrs(value, d)}
    raise SnapshotError(f"cannot snapshot a {t.__name__}")


_SHARED = threading.local()  # .samples: id -> (sample, its encoding) while ``sharing``


@contextmanager
def sharing() -> Iterator[None]:
    """Encode each sample once within: the detectors of a run mostly hold the same newest sample, and
    its encoding (a list JSON writes as often as it is held) is shared by them."""
    _SHARED.samples = {}
    try:
        yield
    finally:
        _SHARED.samples = None


def _sample(value: Sample, d: int) -> Any:
    if d > MAX_DEPTH:
        raise SnapshotError("state nested too deeply")
    memo = getattr(_SHARED, "samples", None)
    if memo is not None:
        hit = memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
    metrics = value.metrics
    p = packed_map(metrics) if PACK and type(metrics) is dict else None
    form = {"$d": _pairs(metrics, d + 1)} if p is None else {"$m": p}
    out = {"$p": [_float(value.t), value.run, value.step, form, value.source]}
    if memo is not None:
        memo[id(value)] = (value, out)
    return out


def _items(values: Any, depth: int) -> list[Any]:
    """``encode`` of each item, with plain numbers and text (most of a window) taken as they are."""
    if depth > MAX_DEPTH:
        raise SnapshotError("state nested too deeply")
    out = []
    add = out.append
    plain = _PLAIN
    for v in values:
        t = type(v)
        if t is float:
            add(v if v - v == 0.0 else _float(v))
        elif t in plain:
            add(v)
        else:
            add(encode(v, depth))
    return out


def _pairs(mapping: Any, depth: int) -> list[list[Any]]:
    """A dict's items as ``[key, value]`` pairs, each ``encode``d (plain ones taken as they are)."""
    if depth > MAX_DEPTH and mapping:
        raise SnapshotError("state nested too deeply")
    plain = _PLAIN
    out = []
    add = out.append
    for k, v in mapping.items():
        if type(k) not in plain:
            k = encode(k, depth)
        t = type(v)
        if t is float:
            add([k, v if v - v == 0.0 else _float(v)])
        elif t in plain:
            add([k, v])
        else:
            add([k, encode(v, depth)])
    return out


_NAMES: dict[tuple[type, frozenset[str]], tuple[str, ...]] = {}  # (class, skip) -> its slots' names
_UNSET = object()


def encode_attrs(obj: Any, depth: int = 0, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    cls = type(obj)
    slots = _NAMES.get((cls, skip))
    if slots is None:  # (its bases' included, less ``skip``)
        names = (n for c in cls.__mro__ for n in getattr(c, "__slots__", ()) if n != "__dict__")
        slots = _NAMES[(cls, skip)] = tuple(n for n in dict.fromkeys(names) if n not in skip)
    attrs = getattr(obj, "__dict__", None) or {}
    out = {}
    plain = _PLAIN
    # the instance's own attributes first, then its slots (those set), in one pass
    own = ((n, v) for n, v in attrs.items() if n not in skip)
    set_slots = ((n, getattr(obj, n, _UNSET)) for n in slots if n not in attrs)
    for n, v in chain(own, set_slots):
        t = type(v)
        if t is float:
            out[n] = v if v - v == 0.0 else _float(v)
        elif t in plain:
            out[n] = v
        elif v is not _UNSET:
            out[n] = encode(v, depth)
    return out


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
        return tuple(_seq(data["$t"], d))
    if "$d" in data:
        return {decode(k, d): decode(v, d) for k, v in data["$d"]}
    if "$q" in data:
        return deque(_seq(data["$q"], d), maxlen=data.get("n"))
    if "$a" in data:
        if isinstance(data["$a"], str):
            return _packed(unpack_doubles, data["$a"])
        return array("d", [float(decode(v, d)) for v in data["$a"]])
    if "$l" in data:
        return _packed(unpacked, data["$l"])
    if "$m" in data:
        return _packed(unpacked_map, data["$m"])
    if "$s" in data:
        return {decode(v, d) for v in data["$s"]}
    if "$p" in data:
        at, run, step, metrics, source = data["$p"]
        return Sample(decode(at, d), str(run), step, decode(metrics, d), source=source)
    if "$e" in data:
        return _cls(data["$e"])(data["v"])
    if "$o" in data:
        cls = _cls(data["$o"])
        obj = cls.__new__(cls)
        restore_attrs(obj, data["a"], d)
        after = getattr(cls, "_after_restore", None)  # brings the forms older versions wrote up to date
        if after is not None:
            after(obj)
        return obj
    raise SnapshotError("unreadable state")


def _seq(data: Any, depth: int) -> Any:
    """The items of a list, tuple or deque: as version 2 wrote them (a list) or packed."""
    if isinstance(data, list):
        return (decode(v, depth) for v in data)
    return _packed(unpacked, data)


def _packed(read: Any, data: Any) -> Any:
    try:
        return read(data)
    except PackError as exc:
        raise SnapshotError(str(exc)) from exc


def restore_attrs(obj: Any, attrs: dict[str, Any], depth: int = 0) -> None:
    if not isinstance(attrs, dict):
        raise SnapshotError("unreadable state")
    for name, value in attrs.items():
        try:
            setattr(obj, name, decode(value, depth))
        except AttributeError:
            if hasattr(obj, "__dict__"):
                raise
            # a field of an older version on a class with ``__slots__`` now: unused, as it was in a __dict__
