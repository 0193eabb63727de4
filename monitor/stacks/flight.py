"""What the flight recorder dumps say (``flight_model.FrDump``, one per rank): for each process group,
the first collective some rank has not completed, the ranks that never entered it, and what the
others are doing about it. Pure.

A group's collectives are numbered (``collective_seq_id``) the same on every rank, so the collective a
hang waits on is the lowest number not completed on some rank; a rank whose latest collective on the
group is below it never entered it: the rank the others wait for ("collective #412 all_reduce on pg 0:
rank 417 never entered it (703 of 704 entered)"). Ranks that entered but disagree on the operation or
its sizes are named too; all entered and none completed points below Python (NCCL, the network).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.stacks.flight_model import FrDump, FrEntry, FrGroup
from monitor.stacks.ranges import ranges

SHOWN_PROBLEMS = 3


@dataclass(frozen=True)
class Stuck:
    """One process group's first collective not completed everywhere."""

    pg: str  # "pg 0" or "pg 3 (tp_group)"
    seq: int
    op: str  # "all_reduce"
    entered: tuple[int, ...]
    missing: tuple[int, ...]  # dumped ranks that never entered it
    undumped: int  # ranks of the group with no dump read
    started: int  # of the entered, how many started it
    disagree: str = ""  # "rank 5 has all_gather [[4]]"

    def text(self) -> str:
        total = len(self.entered) + len(self.missing) + self.undumped
        head = f"collective #{self.seq} {self.op} on {self.pg}"
        if self.missing:
            who = ("rank " if len(self.missing) == 1 else "ranks ") + ranges(list(self.missing))
            said = f"{head}: {who} never entered it ({len(self.entered)} of {total} entered)"
        elif self.disagree:
            said = f"{head}: the ranks disagree on it: {self.disagree}"
        else:
            said = (
                f"{head}: all {len(self.entered)} ranks with a dump entered it, {self.started} started, none "
                "completed (below Python: NCCL, the network, a GPU)"
            )
        if self.undumped:
            said += f"; {self.undumped} rank{'s' if self.undumped != 1 else ''} of the group without a dump"
        return said


def _op(e: FrEntry) -> str:
    return e.op.split(":", 1)[-1]


def stuck_groups(dumps: Sequence[FrDump]) -> list[Stuck]:
    by_pg: dict[tuple[int, str], dict[int, FrGroup]] = defaultdict(dict)
    for d in dumps:
        if d.error or d.rank is None:
            continue
        for g in d.groups:
            by_pg[(g.pg_id, g.name)][d.rank] = g
    out = []
    for (pg_id, _name), ranks in sorted(by_pg.items(), key=lambda kv: kv[0]):
        pending = [e.seq for g in ranks.values() for e in g.entries if e.state != "completed"]
        if not pending:
            continue
        seq = min(pending)
        entered = {
            r: next((e for e in g.entries if e.seq == seq), None)
            for r, g in ranks.items()
            if g.frontier() >= seq
        }
        missing = sorted(r for r, g in ranks.items() if g.frontier() < seq)
        known = [e for e in entered.values() if e is not None]
        kinds = Counter((_op(e), str(e.sizes)) for e in known)
        disagree = ""
        if len(kinds) > 1:
            common = kinds.most_common(1)[0][0]
            odd = sorted(r for r, e in entered.items() if e is not None and (_op(e), str(e.sizes)) != common)
            first = next(e for r, e in entered.items() if r == odd[0] and e is not None)
            disagree = (
                f"{len(known) - len(odd)} have {common[0]} {common[1]}; "
                f"{'rank' if len(odd) == 1 else 'ranks'} {ranges(odd)} {'has' if len(odd) == 1 else 'have'} "
                f"{_op(first)} {first.sizes}"
            )
        any_group = next(iter(ranks.values()))
        size = max((g.size for g in ranks.values()), default=0)
        label = f"pg {pg_id}" + (
            f" ({any_group.desc})" if any_group.desc and any_group.desc != "undefined" else ""
        )
        out.append(
            Stuck(
                pg=label,
                seq=seq,
                op=_op(known[0]) if known else "?",
                entered=tuple(sorted(entered)),
                missing=tuple(missing),
                undumped=max(0, size - len(ranks)),
                started=sum(1 for e in known if e.state in ("started", "completed")),
                disagree=disagree,
            )
        )
    return out


def findings(dumps: Sequence[FrDump]) -> tuple[str, ...]:
    """The sentences for a capture: each stuck group, then what could not be read (a few, counted)."""
    said = [s.text() for s in stuck_groups(dumps)]
    if dumps and not said and all(not d.error for d in dumps):
        said.append(f"every collective in {len(dumps)} dump{'s' if len(dumps) != 1 else ''} completed")
    read = {d.rank for d in dumps if not d.error and d.rank is not None}
    # PyTorch's own (pickle) dump beside the job's JSON one of the same rank is no news
    errors = sorted(
        (d for d in dumps if d.error and (d.rank is None or d.rank not in read)),
        key=lambda d: (d.rank is None, d.rank or 0, d.file),
    )
    for d in errors[:SHOWN_PROBLEMS]:
        who = f"rank {d.rank}" if d.rank is not None else d.file
        said.append(f"{who}: {d.error}")
    if len(errors) > SHOWN_PROBLEMS:
        said.append(f"{len(errors) - SHOWN_PROBLEMS} more dumps unreadable")
    return tuple(said)
