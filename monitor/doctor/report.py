"""What ``herowatch doctor`` found, for people (80 columns) and programs (``--json``), and its exit code:
0 when everything a watched run needs is there, 1 when a run would be watched blind, a source cannot
be read or a receiver cannot deliver (2, an unusable config, is check-config's)."""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"
MARK = {OK: "ok  ", WARN: "warn", FAIL: "FAIL"}


@dataclass
class Item:
    level: str  # ok, warn or fail
    subject: str  # what was checked: "wandb", "run hero-7b", "receiver oncall (slack)"
    what: str
    fix: str = ""


@dataclass
class Report:
    items: list[Item] = field(default_factory=list)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # watch/run -> details (JSON only)

    def add(self, level: str, subject: str, what: str, fix: str = "") -> None:
        self.items.append(Item(level, subject, what, fix))

    @property
    def exit_code(self) -> int:
        return 1 if any(i.level == FAIL for i in self.items) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "exit": self.exit_code,
            "problems": sum(1 for i in self.items if i.level == FAIL),
            "warnings": sum(1 for i in self.items if i.level == WARN),
            "items": [asdict(i) for i in self.items],
            "runs": self.runs,
        }

    def lines(self, width: int = 80) -> list[str]:
        out: list[str] = []
        for i in self.items:
            head = f"{MARK[i.level]} {i.subject}: "
            out.extend(_wrap(head + i.what, width, " " * 5))
            if i.fix:
                out.extend(_wrap(f"fix: {i.fix}", width, " " * 5, " " * 5))
        fails = sum(1 for i in self.items if i.level == FAIL)
        warns = sum(1 for i in self.items if i.level == WARN)
        verdict = "everything the watched runs need is there" if not fails else "not ready"
        counts = f"{fails} problem{'s' if fails != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
        out.append(f"{counts}: {verdict}")
        return out


def _wrap(text: str, width: int, indent: str, first: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=True,
    ) or [first.rstrip()]
