"""Packed forms of the long runs of numbers in a detector's snapshot (``rules.snapshot``, state version 3).

A window of floats is most of a detector's state, and written as JSON text each value costs a Python
call to encode it, a shortest-repr conversion to print it and ~18 bytes to compress and store. Packed,
the values are one base64 text of their IEEE 754 doubles (little-endian), made and read back in C: exact
to the bit (non-finite values included), ~11 bytes a value. A list of equal-length tuples (a window of
buckets) is packed by column: each column of floats as doubles, a column of plain values (int, bool,
text, None) as a JSON list, so that every value comes back as the very type it had.

``packed`` gives the packed form of a sequence, or None when it does not pack (too short, other types,
a float column mixed with other types): the caller then writes the items one by one, as before.
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from typing import Any

PACK_MIN = 4  # shorter sequences are written item by item (a packed form costs a little more)
_PLAIN = frozenset({type(None), bool, int, str})
_FLOAT = frozenset({float})
_SWAP = sys.byteorder == "big"  # the stored doubles are little-endian


class PackError(ValueError):
    pass


def pack_doubles(values: Any) -> str:
    """``values`` (floats, or an array of doubles) as base64 text of little-endian doubles."""
    a = values if type(values) is array and not _SWAP else array("d", values)
    if _SWAP:
        a.byteswap()
    return base64.b64encode(a.tobytes()).decode("ascii")


def unpack_doubles(text: Any) -> array:
    """The array of doubles ``pack_doubles`` wrote."""
    if not isinstance(text, str):
        raise PackError("unreadable packed doubles")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PackError("unreadable packed doubles") from exc
    if len(raw) % 8:
        raise PackError("unreadable packed doubles")
    a = array("d", raw)
    if _SWAP:
        a.byteswap()
    return a


def packed(values: Any) -> str | dict[str, list[Any]] | None:
    """The packed form of a list, tuple or deque: a text of doubles (every item a float), or its
    columns (``{"$z": [...]}``: every item a tuple of one length, each column all floats or all plain
    values); None if it does not pack."""
    if len(values) < PACK_MIN:
        return None
    kinds = set(map(type, values))
    if kinds == _FLOAT:
        return pack_doubles(values)
    if len(kinds) != 1 or tuple not in kinds or len(set(map(len, values))) != 1:
        return None
    cols: list[Any] = []
    for col in zip(*values, strict=True):
        kinds = set(map(type, col))
        if kinds == _FLOAT:
            cols.append(pack_doubles(col))
        elif kinds <= _PLAIN:
            cols.append(list(col))
        else:
            return None
    return {"$z": cols} if cols else None


def unpacked(data: Any) -> list[Any]:
    """The items ``packed`` packed, as a list (of floats, or of tuples)."""
    if isinstance(data, str):
        return unpack_doubles(data).tolist()
    if not isinstance(data, dict) or len(data) != 1 or not isinstance(data.get("$z"), list) or not data["$z"]:
        raise PackError("unreadable packed values")
    cols = []
    for col in data["$z"]:
        if isinstance(col, str):
            cols.append(unpack_doubles(col).tolist())
        elif isinstance(col, list) and all(type(v) in _PLAIN for v in col):
            cols.append(col)
        else:
            raise PackError("unreadable packed values")
    if len(set(map(len, cols))) != 1:
        raise PackError("unreadable packed values")
    return list(zip(*cols, strict=True))


def packed_map(mapping: dict[Any, Any]) -> list[Any] | None:
    """A dict of text keys and float values (a sample's metrics) as ``[keys, doubles]``, or None."""
    if len(mapping) < PACK_MIN or set(map(type, mapping.values())) != _FLOAT:
        return None
    keys = list(mapping)
    if set(map(type, keys)) != {str}:
        return None
    return [keys, pack_doubles(mapping.values())]


def unpacked_map(data: Any) -> dict[str, float]:
    """The dict ``packed_map`` packed."""
    if not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], list):
        raise PackError("unreadable packed values")
    keys, values = data[0], unpack_doubles(data[1]).tolist()
    if len(keys) != len(values) or not all(type(k) is str for k in keys):
        raise PackError("unreadable packed values")
    return dict(zip(keys, values, strict=True))
