"""Config errors that point at the file, line and field, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    line: int | None  # 1-based
    field: str  # dotted path, e.g. watch[0].poll_interval
    message: str


def clean(message: str) -> str:
    """A validator's message as the user should read it (pydantic prefixes "Value error, ")."""
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


class ConfigError(Exception):
    """Every problem of one file, in the order of the file (problems of the whole file first)."""

    def __init__(self, path: str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = sorted(
            (Problem(p.line, p.field, clean(p.message)) for p in problems),
            key=lambda p: (p.line is not None, p.line or 0, p.field),
        )
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.path}: {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"]
        for p in self.problems:
            where = f"{self.path}:{p.line}" if p.line else self.path
            field = f" {p.field}:" if p.field else ""
            lines.append(f"  {where}:{field} {p.message}")
        return "\n".join(lines)
