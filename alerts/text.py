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


# ---- text from outside, stored or logged: bounded here, and only here ----------------------------
MAX_TEXT = 2000  # an error, a summary, a label value as stored (characters)
MAX_SHOWN = 200  # a name in a log line
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def bounded(text: object, limit: int = MAX_TEXT) -> str:
    """``text`` as herowatch may store it: at most ``limit`` characters (cut before anything else is
    done with it: a 50 MB error from a source costs no more than its first ``limit``), saying how long it
    was when cut; no NUL (PostgreSQL's text cannot hold it) and no lone surrogate (not UTF-8)."""
    text = text if isinstance(text, str) else str(text)
    if len(text) > limit:
        cut = f"... ({len(text):,} characters, cut to {limit:,})"
        text = text[: max(0, limit - len(cut))] + cut
    if "\x00" in text:
        text = text.replace("\x00", "\\0")
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def one_line(text: object, limit: int = MAX_TEXT) -> str:
    """``text`` bounded (:func:`bounded`) and on one line: control, format and separator characters
    escaped (``\\n``, ``\\u202e``), so that a name or an error from outside cannot forge a log line or
    print as something else."""
    text = bounded(text, limit)
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return text
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif (c.isascii() and _ASCII_CONTROL.match(c)) or (
            not c.isascii() and unicodedata.category(c) in _REFUSED_CATEGORIES and c not in _ALLOWED_FORMAT
        ):
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


def shown(name: object) -> str:
    """A name (a run's, a file's, a person's) as a log line shows it: one line, at most ``MAX_SHOWN``."""
    return one_line(name, MAX_SHOWN)
