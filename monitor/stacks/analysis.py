"""What a capture says: the ranks grouped by where they are, and the odd ones the rest wait for.

Pure: a function of the nodes' pushes (and how long the run has been stuck, said by the caller).

- A rank's signature is its main thread's frames, innermost first, each as (function, file): no line
  numbers, addresses or interpreter internals (``<frozen importlib...>``), so 703 ranks waiting in the
  same barrier from different lines of a polling loop are one group.
- Where a capture holds ranks (a process whose environment said RANK, SLURM_PROCID, ...), only the
  ranks are grouped: launchers and data-loader workers are listed, never counted against them.
- The largest group is the majority when it holds more than half of the ranks; every other group is
  odd: the minority the majority waits for, smallest first. With no majority the groups are shown and
  none is named odd.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from alerts.durations import format_duration
from monitor.stacks.flight import findings
from monitor.stacks.model import Frame, NodeStacks, ProcessStack
from monitor.stacks.ranges import ranges

NOISE = ("<frozen ", "<shim>")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")  # a native frame's or an object's address differs per process
SHOWN_FRAMES = 8  # innermost frames of a group shown on a page


@dataclass(frozen=True)
class Member:
    node: str
    pid: int
    rank: int | None

    def sort_key(self) -> tuple[int, int, str, int]:
        return (self.rank is None, self.rank or 0, self.node, self.pid)


def frame_text(f: Frame) -> str:
    where = f"{f.file}:{f.line}" if f.line else f.file
    return f"{f.name} ({where})" if where else f.name


def signature(p: ProcessStack) -> tuple[tuple[str, str], ...]:
    main = p.main
    if main is None:
        return ()
    return tuple(
        (ADDRESS.sub("0x", f.name), ADDRESS.sub("0x", f.file))
        for f in main.frames
        if not f.file.startswith(NOISE)
    )


@dataclass(frozen=True)
class StackGroup:
    frames: tuple[Frame, ...]  # the first member's main-thread frames, innermost first
    members: tuple[Member, ...]
    odd: bool = False

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def where(self) -> str:
        """The innermost frame: the call the group is in."""
        return frame_text(self.frames[0]) if self.frames else "no Python frame"

    @property
    def nodes(self) -> list[str]:
        return sorted({m.node for m in self.members})

    def who(self) -> str:
        """ "rank 417 on node-17", "ranks 3, 8-11 on node-1, node-2", "pid 88 on node-3"."""
        ranked = sorted(m.rank for m in self.members if m.rank is not None)
        pids = [f"pid {m.pid}" for m in self.members if m.rank is None]
        parts = []
        if ranked:
            parts.append(("rank " if len(ranked) == 1 else "ranks ") + ranges(ranked))
        if pids:
            parts.append(", ".join(pids[:4]) + (f" (+{len(pids) - 4})" if len(pids) > 4 else ""))
        nodes = self.nodes
        hosts = ", ".join(nodes[:4]) + (f" (+{len(nodes) - 4} more)" if len(nodes) > 4 else "")
        return f"{'; '.join(parts)} on {hosts}"

    def to_dict(self) -> dict:
        return {
            "count": self.count,
            "odd": self.odd,
            "where": self.where,
            "who": self.who(),
            "frames": [frame_text(f) for f in self.frames],
            "members": [{"node": m.node, "pid": m.pid, "rank": m.rank} for m in self.members],
        }


@dataclass(frozen=True)
class StackReport:
    groups: tuple[StackGroup, ...]  # the majority (or largest) first, then the odd ones smallest first
    counted: str  # "ranks" or "processes": what the groups count
    total: int
    others: int  # launchers and workers seen, not counted
    problems: tuple[str, ...]  # "node-3: no permission ...", "rank 5 on node-2: timed out after 10s"
    nodes: tuple[str, ...]
    captured_at: float | None
    flight: tuple[str, ...] = ()  # what PyTorch's flight recorder dumps say (``monitor.stacks.flight``)

    @property
    def odd(self) -> list[StackGroup]:
        return [g for g in self.groups if g.odd]

    @property
    def majority(self) -> StackGroup | None:
        return self.groups[0] if self.groups and any(g.odd for g in self.groups) else None

    def summary(self, stuck_for: float | None = None, now: float | None = None) -> str:
        """One paragraph for a page: "703 of 704 ranks wait in `sync_global_devices` (restore.py:88);
        rank 417 on node-17 is in `read_chunk` (tensorstore_io.py:120) since 14m." """
        since = f" since {format_duration(stuck_for, 2)}" if stuck_for else ""
        said: list[str] = []
        if self.majority is not None:
            m = self.majority
            said.append(f"{m.count} of {self.total} {self.counted} wait in {_call(m)}")
            for g in self.odd:
                verb = "is" if g.count == 1 else "are"
                said.append(f"{g.who()} {verb} in {_call(g)}{since}")
        elif len(self.groups) == 1:
            said.append(f"all {self.total} {self.counted} are in {_call(self.groups[0])}")
        elif self.groups:
            shown = ", ".join(f"{g.count} in {_call(g)}" for g in self.groups[:3])
            more = f", {len(self.groups) - 3} more groups" if len(self.groups) > 3 else ""
            said.append(
                f"no majority: {self.total} {self.counted} in {len(self.groups)} groups: {shown}{more}"
            )
        if self.problems:
            shown = "; ".join(self.problems[:3]) + (
                f" (+{len(self.problems) - 3})" if len(self.problems) > 3 else ""
            )
            said.append(f"stacks not available: {shown}")
        if self.flight:
            said.append("flight recorder: " + "; ".join(self.flight))
        if not said:
            said.append("no Python process found")
        age = ""
        if self.captured_at is not None and now is not None:
            age = f" (stacks of {len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}, "
            age += f"captured {format_duration(max(0.0, now - self.captured_at), 1)} ago)"
        return "; ".join(said) + "." + age

    def to_dict(self, stuck_for: float | None = None, now: float | None = None) -> dict:
        return {
            "summary": self.summary(stuck_for, now),
            "counted": self.counted,
            "total": self.total,
            "others": self.others,
            "nodes": list(self.nodes),
            "problems": list(self.problems),
            "captured_at": self.captured_at,
            "flight": list(self.flight),
            "groups": [g.to_dict() for g in self.groups],
        }


def _call(g: StackGroup) -> str:
    if not g.frames:
        return "no Python frame"
    f = g.frames[0]
    return f"`{f.name}` ({f.file}:{f.line})" if f.line else f"`{f.name}` ({f.file})"


def analyse(pushes: Sequence[NodeStacks]) -> StackReport:
    """Group the ranks (or, where no process said its rank, every Python process) by signature."""
    problems: list[str] = []
    processes: list[tuple[str, ProcessStack]] = []
    said_for_node = set()
    for push in sorted(pushes, key=lambda p: p.node):
        if push.error:
            problems.append(f"{push.node}: {push.error}")
            said_for_node.add(push.node)
        for p in push.processes:
            processes.append((push.node, p))
    ranked = any(p.role == "rank" for _, p in processes)
    counted, others = [], 0
    for node, p in processes:
        if ranked and p.role != "rank":
            others += 1
            continue
        if p.error:
            if node in said_for_node:
                continue
            who = f"rank {p.rank}" if p.rank is not None else f"pid {p.pid}"
            problems.append(f"{who} on {node}: {p.error}")
            continue
        counted.append((node, p))
    by_sig: dict[tuple, list[tuple[str, ProcessStack]]] = defaultdict(list)
    for node, p in counted:
        by_sig[signature(p)].append((node, p))
    groups = []
    for items in by_sig.values():
        members = sorted((Member(n, p.pid, p.rank) for n, p in items), key=Member.sort_key)
        first = next(p for n, p in items if n == members[0].node and p.pid == members[0].pid)
        frames = tuple(first.main.frames) if first.main else ()
        groups.append(StackGroup(frames, tuple(members)))
    groups.sort(key=lambda g: (-g.count, g.members[0].sort_key()))
    total = sum(g.count for g in groups)
    if groups and groups[0].count * 2 > total:
        odd = sorted(
            (StackGroup(g.frames, g.members, odd=True) for g in groups[1:]),
            key=lambda g: (g.count, g.members[0].sort_key()),
        )
        groups = [groups[0], *odd]
    times = [p.t for p in pushes]
    return StackReport(
        groups=tuple(groups),
        counted="ranks" if ranked else "processes",
        total=total,
        others=others,
        problems=tuple(problems),
        nodes=tuple(sorted({p.node for p in pushes})),
        captured_at=min(times) if times else None,
        flight=findings([d for p in pushes for d in p.flight]),
    )
