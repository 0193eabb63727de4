"""What counts as plain text in a name, a comment or a label matcher typed by a person (the API, the
dashboard, Slack, rule files): the one place that says so.

Refused: control characters (C0 such as NUL and escape, DEL, and the C1 range such as U+0085 NEXT LINE
and U+009B CONTROL SEQUENCE INTRODUCER, which terminals obey), the line and paragraph separators, format
characters (U+202E RIGHT-TO-LEFT OVERRIDE makes ``alice`` print as something else in a log; zero-width
spaces make two names look alike), except the zero-width joiner that emoji sequences need, and lone
surrogates (half a UTF-16 pair: not Unicode text, and PostgreSQL's driver cannot encode them).
Newlines and tabs are allowed only where a text may span lines (a comment).
"""

from __future__ import annotations

import re
import unicodedata

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ALLOWED_FORMAT = frozenset({"\u200d"})  # ZERO WIDTH JOINER: family and flag emoji are built with it
_MULTILINE = frozenset({"\n", "\r", "\t"})
_KINDS = {
    "Cc": "a control character",
    "Cf": "a format character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ASCII_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def describe(c: str) -> str:
    """What ``c`` is, for a message: ``a format character (U+202E RIGHT-TO-LEFT OVERRIDE)``."""
    kind = _KINDS.get(unicodedata.category(c), "a character plain text may not hold")
    name = unicodedata.name(c, "")
    return f"{kind} (U+{ord(c):04X}{' ' + name if name else ''})"


def bad_character(text: str, multiline: bool = False) -> str | None:
    """The first character of ``text`` that plain text may not hold, described (``a control character
    (U+0085)``), or None."""
    if text.isascii():  # the common case: only C0 controls and DEL can be wrong (searched in C)
        found = (_ASCII_CONTROL_MULTILINE if multiline else _ASCII_CONTROL).search(text)
        return describe(found.group()) if found else None
    for c in text:
        if multiline and c in _MULTILINE:
            continue
        if unicodedata.category(c) in _REFUSED_CATEGORIES and c not in _ALLOWED_FORMAT:
            return describe(c)
    return None


def check_plain(text: str, multiline: bool = False) -> str:
    """``text`` unless it holds a character plain text may not (ValueError saying which)."""
    bad = bad_character(text, multiline)
    if bad is not None:
        raise ValueError(f"holds {bad}: plain text only")
    return text
