"""How fast is ``herowatch replay``? Replay time next to the time to merely parse the same trace.

Generates a trace of N steps (default 1,000,000) with the 10 Levanter metrics of the hero pack
(a healthy run, 1 step/s, with noise and a few one-step loss blips), writes it to a temp file,
then times, in one process and side by side:

  parse   iterate monitor.traces.trace.iter_trace over the file (JSON decoding, validation, Samples);
  replay  the same parse feeding the Evaluator with the hero pack on a simulated clock.

The bar: replay within 2x of parsing (issue 16). Both are measured chunk by chunk, alternately (see
measure()), and the ratio is taken on this process's CPU time, which other processes on a shared
machine disturb far less than wall time (both are printed). Then a profile of the replay (cProfile
over the first ``--profile-lines`` lines, parse included) shows where the time goes: the functions
with the most time of their own, as a share of the profiled replay. Profiling inflates the cost of
each Python call, so read the shares, not the seconds.
Run:  .venv/bin/python bench/replay_throughput.py [--steps N]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import json
import math
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.rules.loader import load_pack  # noqa: E402
from monitor.traces.replay import Replayer  # noqa: E402
from monitor.traces.trace import iter_trace  # noqa: E402

T0 = 1_700_000_000.0
BAR = 2.0


def write_trace(path: Path, steps: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    gauss = rng.gauss
    dumps = json.dumps
    size = 0
    with open(path, "w", encoding="utf-8") as fh:
        for s in range(steps):
            loss = 2.1 + 8.4 / math.sqrt(1.0 + s / 150.0)
            loss *= 1.0 + 0.012 * gauss(0.0, 1.0)
            if s % 50_000 == 25_000:
                loss *= 1.5  # a one-step blip a healthy run recovers from
            duration = 1.0 * (1.0 + 0.03 * max(-3.0, min(3.0, gauss(0.0, 1.0))))
            metrics = {
                "train/loss": loss,
                "global_step": float(s),
                "throughput/tokens_per_second": 4_194_304 / duration,
                "throughput/mfu": 42.0 / duration,
                "throughput/duration": duration,
                "grad/norm/total": 0.22 + 0.04 * abs(gauss(0.0, 1.0)),
                "optim/learning_rate": 3e-4 * min(1.0, s / 2000.0),
                "optim/skipped_step": 0.0,
                "moe/drop_fraction": 0.02 + 0.005 * abs(gauss(0.0, 1.0)),
                "train/router/routing_entropy_mean": 6.2 + 0.02 * gauss(0.0, 1.0),
            }
            row = {"t": T0 + s, "run": "bench-run", "step": s, "metrics": metrics}
            if s == 0:
                row["state"] = "running"
                row["source"] = "wandb"
            line = dumps(row, separators=(",", ":")) + "\n"
            size += len(line)
            fh.write(line)
    return size


def measure(path: Path, chunk: int = 50_000) -> dict[str, float]:
    """Parse-only and replay CPU (and wall) seconds over the whole trace, measured side by side.

    The trace is read in chunks of ``chunk`` lines; each chunk is parsed alone, then parsed and
    replayed (one Replayer over the whole trace), in alternating order so that neither gets the warmer
    cache. On a shared machine, load that comes and goes then weighs on both figures alike."""
    rules = load_pack("hero")
    replayer = Replayer(rules)
    feed = replayer.feed
    out = {"parse_cpu": 0.0, "parse_wall": 0.0, "replay_cpu": 0.0, "replay_wall": 0.0, "lines": 0}

    def parse_only(lines: list[bytes]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in iter_trace(lines, str(path)):
            pass
        out["parse_cpu"] += time.process_time() - cpu
        out["parse_wall"] += time.perf_counter() - wall

    def replay(lines: list[bytes]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        for sample in iter_trace(lines, str(path)):
            feed(sample)
        out["replay_cpu"] += time.process_time() - cpu
        out["replay_wall"] += time.perf_counter() - wall

    gc.collect()
    with open(path, "rb") as fh:
        for i in itertools.count():
            lines = list(itertools.islice(fh, chunk))
            if not lines:
                break
            out["lines"] += len(lines)
            for step in (parse_only, replay) if i % 2 == 0 else (replay, parse_only):
                step(lines)
    wall, cpu = time.perf_counter(), time.process_time()
    events = replayer.finish()
    out["replay_cpu"] += time.process_time() - cpu
    out["replay_wall"] += time.perf_counter() - wall
    out["events"] = len(events)
    out["above_info"] = sum(1 for e in events if e.state == "firing" and e.severity != "info")
    return out


def profile(path: Path, lines: int, top: int = 12) -> list[str]:
    """The replay of the first ``lines`` lines under cProfile: the ``top`` functions by own time."""
    with open(path, "rb") as fh:
        head = list(itertools.islice(fh, lines))
    replayer = Replayer(load_pack("hero"))
    feed = replayer.feed
    prof = cProfile.Profile()
    prof.enable()
    for sample in iter_trace(head, str(path)):
        feed(sample)
    replayer.finish()
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (calls, ncalls, own, cumulative, callers)
    total = sum(own for _, _, own, _, _ in stats.values()) or 1.0
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    root = str(Path(__file__).resolve().parents[1]) + os.sep
    out = [f"where replay's time goes (cProfile, first {len(head):,} lines; own time, share of the replay):"]
    for (file, line, name), (_, ncalls, own, _cum, _) in rows:
        where = f"{file.removeprefix(root)}:{line}({name})" if line else name
        out.append(f"  {100 * own / total:5.1f}%  {ncalls / len(head):5.2f} calls/line  {where}")
    parts: dict[str, float] = {}
    for (file, _, name), (_, _, own, _, _) in stats.items():
        parts[_part(file, name)] = parts.get(_part(file, name), 0.0) + own
    shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
    out.append(f"  by part: {shares}")
    return out


def _part(file: str, name: str) -> str:
    """Which part of the replay a profiled function belongs to."""
    if "monitor/rules/" in file:
        return "detectors"
    if "monitor/engine/" in file:
        return "evaluator"
    if "monitor/traces/trace" in file or "json" in file or "decode" in name:
        return "parse"
    if "monitor/traces/" in file or "monitor/profiles/" in file:
        return "replayer"
    return "other"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--keep", action="store_true", help="keep the generated trace")
    ap.add_argument("--profile-lines", type=int, default=50_000, help="lines profiled (0: no profile)")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="herowatch-bench-"))
    path = tmp / "trace.jsonl"
    start = time.perf_counter()
    size = write_trace(path, args.steps)
    print(
        f"trace: {args.steps:,} steps x 10 metrics, {size / 1e6:,.0f} MB, generated in "
        f"{time.perf_counter() - start:.1f}s ({path})"
    )
    try:
        m = measure(path)
        prof = profile(path, args.profile_lines) if args.profile_lines > 0 else []
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
            os.rmdir(tmp)
    n = m["lines"]
    ratio = m["replay_cpu"] / m["parse_cpu"]
    print(f"{'':8}{'CPU s':>9}{'us/line':>10}{'wall s':>9}{'lines/s':>12}{'x parse':>9}")
    for name in ("parse", "replay"):
        cpu, wall = m[f"{name}_cpu"], m[f"{name}_wall"]
        print(
            f"{name:8}{cpu:9.2f}{cpu / n * 1e6:10.2f}{wall:9.2f}{n / cpu:12,.0f}{cpu / m['parse_cpu']:9.2f}"
        )
    print(f"{'bar':8}{BAR * m['parse_cpu']:9.2f}{BAR * m['parse_cpu'] / n * 1e6:10.2f}{'':21}{BAR:9.2f}")
    print(
        f"replay / parse = {ratio:.2f}x in CPU time, {m['replay_wall'] / m['parse_wall']:.2f}x wall "
        f"(bar: {BAR:g}x) -> {'OK' if ratio <= BAR else 'TOO SLOW'}"
    )
    print(
        f"alert transitions: {m['events']} ({m['above_info']} firing above info: a healthy run must have 0)"
    )
    for line in prof:
        print(line)
    return 0 if ratio <= BAR else 1


if __name__ == "__main__":
    raise SystemExit(main())
