"""How long `pytest -n 4 --dist loadfile` takes for given per-test durations, in xdist's own order
(files with most tests first) and in the order tests/conftest.py gives (live, then slow files first,
kept by `--no-loadscope-reorder`). Not a test: a planning aid for scripts/test.

    .venv/bin/python bench/xdist_schedule.py DURATIONS.xml [MORE.xml ...] [--workers 4]

The durations come from JUnit XML files (`pytest --junitxml=...`, each test's setup, call and teardown);
a test with no measured time counts as the median of those measured (or --default). The model follows
xdist.scheduler.loadscope: one file per worker, then another whenever a worker has two tests or fewer
left; a worker's tests run in the order they were handed out; workers do not slow each other down (on 2
cores 4 workers do, so read the figures as the shape of the tail, not the CI's minutes).
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collected() -> list[str]:
    """Node ids in the order pytest hands them to xdist (after tests/conftest.py sorted them)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line.strip() for line in out.splitlines() if "::" in line and not line.startswith(" ")]


def durations(paths: list[Path]) -> dict[str, float]:
    out: dict[str, float] = {}
    for path in paths:
        for case in ET.parse(path).iter("testcase"):
            file = case.get("classname", "").replace(".", "/")
            name = case.get("name", "")
            out[f"{file}.py::{name}"] = float(case.get("time", 0))
    return out


def queue(ids: list[str], reorder: bool) -> list[tuple[str, list[str]]]:
    files: dict[str, list[str]] = {}
    for nodeid in ids:
        files.setdefault(nodeid.split("::")[0], []).append(nodeid)
    units = list(files.items())
    if reorder:  # xdist's default: files with most tests first (a stable sort)
        units.sort(key=lambda u: -len(u[1]))
    return units


def makespan(
    units: list[tuple[str, list[str]]], took: dict[str, float], workers: int, default: float
) -> tuple[float, list]:
    todo = list(units)
    pending: list[list[str]] = [[] for _ in range(workers)]
    finish = [0.0] * workers
    last: list[str] = [""] * workers

    def hand(w: int) -> None:
        if todo:
            name, tests = todo.pop(0)
            pending[w].extend(tests)
            last[w] = name

    for w in range(workers):
        hand(w)
    for w in range(workers):
        if len(pending[w]) <= 2:
            hand(w)
    events = [(0.0, w) for w in range(workers)]
    heapq.heapify(events)
    while events:
        now, w = heapq.heappop(events)
        if not pending[w]:
            finish[w] = now
            continue
        test = pending[w].pop(0)
        if len(pending[w]) + 1 <= 2:  # xdist asks after a test completes; the running one counted
            hand(w)
        heapq.heappush(events, (now + took.get(test, default), w))
    return max(finish), finish


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("xml", nargs="+", type=Path)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--default", type=float, help="seconds for a test not measured (default: the median)")
    args = ap.parse_args()
    took = durations(args.xml)
    ids = collected()
    default = args.default if args.default is not None else statistics.median(took.values())
    known = sum(1 for i in ids if i in took)
    print(f"{len(ids)} tests collected, {known} with a measured time ({sum(took.values()) / 60:.1f} min)")
    for reorder, label in ((True, "xdist reorder (before)"), (False, "--no-loadscope-reorder (after)")):
        span, finish = makespan(queue(ids, reorder), took, args.workers, default)
        spread = ", ".join(f"{f / 60:.1f}" for f in sorted(finish))
        print(f"{label:32} {span / 60:5.1f} min; workers end at {spread} min")
        tail = queue(ids, reorder)[-6:]
        print(
            "  last handed out:",
            ", ".join(f"{n} {sum(took.get(t, default) for t in ts):.0f}s" for n, ts in tail),
        )


if __name__ == "__main__":
    main()
