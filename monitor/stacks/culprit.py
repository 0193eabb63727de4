"""The culprit of a hang as its stacks named it: the call the odd ranks are in (the innermost frame of
the smallest odd group), where it is, on which hosts and ranks. Stored with the hang's alerts
(``Alert.culprit``) once a capture settles (``monitor.delivery.stacks_settle``), so that the weekly
report's incident can say "hung in read_chunk (tensorstore_io.py:120) on node-17 (rank 417)"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monitor.stacks.analysis import StackReport
from monitor.stacks.ranges import ranges

MAX_HOSTS = 4  # hosts named; the rest are counted


@dataclass(frozen=True)
class Culprit:
    call: str  # the function, e.g. "read_chunk"
    where: str  # "tensorstore_io.py:120" (file:line as py-spy shortens it; no line: the file)
    hosts: tuple[str, ...]
    ranks: tuple[int, ...]  # empty where the processes said no rank
    count: int  # processes (ranks) in the group
    of: int  # ranks (processes) counted in all
    other_groups: int = 0  # further odd groups not named here

    def text(self) -> str:
        """ "hung in read_chunk (tensorstore_io.py:120) on node-17 (rank 417)"."""
        hosts = ", ".join(self.hosts[:MAX_HOSTS])
        if len(self.hosts) > MAX_HOSTS:
            hosts += f" (+{len(self.hosts) - MAX_HOSTS} more)"
        where = f" ({self.where})" if self.where else ""
        if self.ranks:
            who = ("rank " if len(self.ranks) == 1 else "ranks ") + ranges(list(self.ranks), 4)
        else:
            who = f"{self.count} process{'es' if self.count != 1 else ''}"
        more = f"; {self.other_groups} more odd group{'s' if self.other_groups != 1 else ''}"
        return f"hung in {self.call}{where} on {hosts} ({who}){more if self.other_groups else ''}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "where": self.where,
            "hosts": list(self.hosts),
            "ranks": list(self.ranks),
            "count": self.count,
            "of": self.of,
            "other_groups": self.other_groups,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Culprit:
        return cls(
            call=str(d.get("call") or "?"),
            where=str(d.get("where") or ""),
            hosts=tuple(str(h) for h in d.get("hosts") or ()),
            ranks=tuple(int(r) for r in d.get("ranks") or ()),
            count=int(d.get("count") or 0),
            of=int(d.get("of") or 0),
            other_groups=int(d.get("other_groups") or 0),
        )


def culprit_of(report: StackReport) -> Culprit | None:
    """The smallest odd group's call, or None where the stacks name no odd group (no majority, or all
    ranks in one place, or nothing could be read)."""
    odd = report.odd
    if not odd:
        return None
    g = odd[0]
    f = g.frames[0] if g.frames else None
    ranks = tuple(sorted(m.rank for m in g.members if m.rank is not None))
    return Culprit(
        call=f.name if f is not None else "no Python frame",
        where=(f"{f.file}:{f.line}" if f.line else f.file) if f is not None else "",
        hosts=tuple(g.nodes),
        ranks=ranks,
        count=g.count,
        of=report.total,
        other_groups=len(odd) - 1,
    )
