"""What ``herowatch doctor`` found, for people (80 columns) and programs (``--json``), and its exit code.

Every item is one of: ``ok``; ``warn`` (works, but worth a look); ``fail``, a problem found (a run
would be watched blind, a query is wrong, the bot is not in the channel); ``unchecked``, could not be
looked at, with its cause (``alerts.reachability.Cause``: connection refused, timeout, DNS, TLS, auth,
missing secret). A set-up is "ready" only when nothing failed and everything could be checked.

Exit codes (``ExitCode``): 0 ready; 1 a problem found; 2 an unusable config (check-config's); 3 nothing
failed, but something could not be checked (so readiness is unknown).
"""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

OK, WARN, FAIL, UNCHECKED = "ok", "warn", "fail", "unchecked"
MARK = {OK: "ok  ", WARN: "warn", FAIL: "FAIL", UNCHECKED: "????"}


class ExitCode(IntEnum):
    READY = 0
    PROBLEM = 1
    UNUSABLE_CONFIG = 2
    UNCHECKED = 3


@dataclass
class Item:
    level: str  # ok, warn, fail or unchecked
    subject: str  # what was checked: "watch w: wandb", "run hero-7b", "receiver oncall (slack)"
    what: str
    fix: str = ""
    cause: str = ""  # for "unchecked": why it could not be looked at (alerts.reachability.Cause)


@dataclass
class Report:
    items: list[Item] = field(default_factory=list)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # watch/run -> details (JSON only)
    library_log: list[str] = field(default_factory=list)  # what libraries logged meanwhile (JSON only)

    def add(self, level: str, subject: str, what: str, fix: str = "", cause: str = "") -> None:
        self.items.append(Item(level, subject, what, fix, cause))

    def count(self, level: str) -> int:
        return sum(1 for i in self.items if i.level == level)

    @property
    def exit_code(self) -> ExitCode:
        if self.count(FAIL):
            return ExitCode.PROBLEM
        if self.count(UNCHECKED):
            return ExitCode.UNCHECKED
        return ExitCode.READY

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == ExitCode.READY,
            "exit": int(self.exit_code),
            "problems": self.count(FAIL),
            "warnings": self.count(WARN),
            "unchecked": self.count(UNCHECKED),
            "items": [asdict(i) for i in self.items],
            "runs": self.runs,
            "library_log": self.library_log,
        }

    def item_lines(self, item: Item, width: int = 80) -> list[str]:
        head = f"{MARK[item.level]} {item.subject}: "
        what = f"could not check ({item.cause}): {item.what}" if item.level == UNCHECKED else item.what
        out = _wrap(head + what, width, " " * 5)
        if item.fix:
            out.extend(_wrap(f"fix: {item.fix}", width, " " * 5, " " * 5))
        return out

    def verdict(self) -> str:
        fails, warns, unchecked = self.count(FAIL), self.count(WARN), self.count(UNCHECKED)
        counts = f"{fails} problem{'s' if fails != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
        if unchecked:
            counts += f", {unchecked} could not be checked"
        if fails:
            return f"{counts}: not ready"
        if unchecked:
            return f"{counts}: readiness unknown"
        return f"{counts}: ready, everything the watched runs need is there"

    def lines(self, width: int = 80) -> list[str]:
        out = [line for i in self.items for line in self.item_lines(i, width)]
        out.append(self.verdict())
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
