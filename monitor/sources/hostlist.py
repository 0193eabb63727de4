"""Slurm's host list notation (``node[01-04,07],gpu-a``, ``rack[1-2]-n[1-2]``) expanded to host names:
what a job's ``hosts`` label says, as the names Prometheus' exporters give (dcgm-exporter's
``Hostname``, node-exporter's ``instance``). Pure; bounded."""

from __future__ import annotations

import re

MAX_HOSTS = 4096  # names one list may expand to
_GROUP = re.compile(r"\[([^\[\]]*)\]")


class HostListError(ValueError):
    pass


def expand(hostlist: str, limit: int = MAX_HOSTS) -> list[str]:
    """The names of a Slurm host list, in order. HostListError: malformed, or over ``limit`` names."""
    out: list[str] = []
    for item in _split(hostlist.strip()):
        names = [""]
        rest = item
        while (m := _GROUP.search(rest)) is not None:
            prefix, rest = rest[: m.start()], rest[m.end() :]
            numbers = _range(m.group(1), limit)
            names = [n + prefix + x for n in names for x in numbers]
            if len(names) > limit:
                raise HostListError(f"{hostlist[:80]!r} names more than {limit} hosts")
        if "[" in rest or "]" in rest:
            raise HostListError(f"unbalanced brackets in {hostlist[:80]!r}")
        out.extend(n + rest for n in names)
        if len(out) > limit:
            raise HostListError(f"{hostlist[:80]!r} names more than {limit} hosts")
    return out


def _split(text: str) -> list[str]:
    """Top-level comma-separated items (commas inside brackets belong to a range)."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [s.strip() for s in items if s.strip()]


def _range(spec: str, limit: int) -> list[str]:
    out: list[str] = []
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise HostListError(f"not a range of numbers: [{spec[:80]}]")
        a, b = int(lo), int(hi or lo)
        if b < a or len(out) + b - a + 1 > limit:
            raise HostListError(f"range [{spec[:80]}] is reversed or names more than {limit} hosts")
        out.extend(str(n).zfill(len(lo)) for n in range(a, b + 1))
    return out
