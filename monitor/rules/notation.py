"""The expanding notation of rule tests, after promtool's:

- ``a+bxn`` and ``a-bxn``: n+1 values a, a+b, ..., a+n*b (``-2+4x3`` is ``-2 2 6 10``);
- ``axn``: n+1 copies of a (also ``NaNx3``);
- ``_``: no value at that point; ``_xn``: n points with no value;
- ``NaN``, ``Inf``, ``+Inf``, ``-Inf`` (any case) and plain numbers.

Words (run states) use the same repeat: ``runningx9 crashed`` is ten times running, then crashed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_SERIES = re.compile(rf"^({_NUM})([-+])({_NUM})x(\d+)$")
_REPEAT = re.compile(r"^(.+?)x(\d+)$")
MAX_POINTS = 1_000_000


def _literal(token: str) -> float:
    special = _SPECIAL.get(token.lower())
    if special is not None:
        return special
    if re.fullmatch(_NUM, token):
        return float(token)
    raise ValueError(f"{token!r} is not a number, NaN, Inf, '_' or a+bxn")


def expand_values(text: str | float | int | None) -> list[float | None]:
    """A values string into one entry per point (None: no value at that point)."""
    if text is None:
        return []
    if isinstance(text, bool):
        raise ValueError("expected a values string such as '1+0.5x10 _ NaN'")
    if isinstance(text, int | float):
        return [float(text)]
    out: list[float | None] = []
    for token in str(text).split():
        m = _SERIES.match(token)
        if m:
            start, sign, step, n = float(m.group(1)), m.group(2), float(m.group(3)), int(m.group(4))
            step = step if sign == "+" else -step
            _check(len(out) + n + 1)
            out.extend(start + i * step for i in range(n + 1))
            continue
        if token == "_":
            out.append(None)
            continue
        m = _REPEAT.match(token)
        if m:
            n = int(m.group(2))
            if m.group(1) == "_":
                _check(len(out) + n)
                out.extend([None] * n)
            else:
                _check(len(out) + n + 1)
                out.extend([_literal(m.group(1))] * (n + 1))
            continue
        out.append(_literal(token))
    return out


def expand_words(text: str | None, allowed: Collection[str]) -> list[str | None]:
    """A words string (``runningx9 crashed _``) into one entry per point."""
    if text is None:
        return []
    out: list[str | None] = []
    for token in str(text).split():
        m = _REPEAT.match(token)
        repeat = m is not None and (m.group(1) in allowed or m.group(1) == "_")
        word, n = (m.group(1), int(m.group(2))) if repeat else (token, -1)
        if word == "_":
            count = max(n, 1)
            _check(len(out) + count)
            out.extend([None] * count)
            continue
        if word not in allowed:
            raise ValueError(f"{word!r} is not one of {', '.join(sorted(allowed))} (or '_')")
        count = n + 1 if n >= 0 else 1
        _check(len(out) + count)
        out.extend([word] * count)
    return out


def _check(n: int) -> None:
    if n > MAX_POINTS:
        raise ValueError(f"more than {MAX_POINTS:,} points: check the repeat counts")
