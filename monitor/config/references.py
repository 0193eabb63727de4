"""Checks across a watch config's parts, made after each part is valid on its own: every name a route,
the watchdog or an inhibit rule refers to exists, a scheduled report goes to a receiver of a kind that
can take one, and watch and receiver names are unique. Each problem names the field that holds the bad
reference, so the user is sent to its line, not to the top of the file."""

from __future__ import annotations

from monitor.config.errors import Problem
from monitor.config.schema import REPORT_RECEIVER_KINDS, RouteConfig, WatchConfig


def reference_problems(cfg: WatchConfig) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for i, w in enumerate(cfg.watch):
        if w.name in first:
            problems.append(
                Problem(None, f"watch[{i}].name", f"{w.name!r} is already the name of watch[{first[w.name]}]")
            )
        first.setdefault(w.name, i)
    named: dict[str, int] = {}
    for i, r in enumerate(cfg.receivers):
        if r.name in named:
            problems.append(
                Problem(
                    None,
                    f"receivers[{i}].name",
                    f"{r.name!r} is already the name of receivers[{named[r.name]}]",
                )
            )
        named.setdefault(r.name, i)
    known = sorted(named)

    def unknown(name: str) -> str:
        return f"{name!r} is not a receiver; known: {', '.join(known) or 'none (add one under receivers)'}"

    def walk(route: RouteConfig, where: str) -> None:
        if route.receiver not in known:
            problems.append(Problem(None, f"{where}.receiver", unknown(route.receiver)))
        for i, child in enumerate(route.routes):
            walk(child, f"{where}.routes[{i}]")

    walk(cfg.route, "route")
    if cfg.watchdog and cfg.watchdog.receiver not in known:
        problems.append(Problem(None, "watchdog.receiver", unknown(cfg.watchdog.receiver)))
    watches = {w.name for w in cfg.watch}
    kinds: dict[str, str] = {}
    for r in cfg.receivers:
        kinds.setdefault(r.name, r.kind)
    for i, rep in enumerate(cfg.reports):
        if rep.receiver not in known:
            problems.append(Problem(None, f"reports[{i}].receiver", unknown(rep.receiver)))
        elif kinds[rep.receiver] not in REPORT_RECEIVER_KINDS:
            problems.append(
                Problem(
                    None,
                    f"reports[{i}].receiver",
                    f"{rep.receiver!r} is a {kinds[rep.receiver]} receiver, which cannot take a report; "
                    f"name a receiver of kind {', '.join(REPORT_RECEIVER_KINDS)}",
                )
            )
        if rep.watch is not None and rep.watch not in watches:
            problems.append(Problem(None, f"reports[{i}].watch", f"{rep.watch!r} is not a watch"))
    return problems
