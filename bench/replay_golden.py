"""Does a change to the replay or the detectors keep what a replay finds? Records every alert transition
(time, run, rule, fingerprint, state, severity, step, value, reason) and each run's detector figures at
the end, for a set of traces replayed with the built-in packs; a second version of the code must write
the same file, byte for byte.

The traces: the example trace (every built-in pack), the incidents and healthy runs built on the real
logs of ../shared/data/real (bench/detection_quality.py, with its settings), the batched-replay test
scenarios (batched and sample by sample), and a bench trace (bench/replay_throughput.py, with blips).
Not a test: a tool for optimising the replay (``diff`` the files of two versions).

Run:  .venv/bin/python bench/replay_golden.py OUT.jsonl [--bench-steps N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.detection_quality import flaky_outages, healthy, incidents, steady_and_ending_incidents  # noqa: E402
from bench.replay_throughput import write_trace  # noqa: E402
from monitor.rules.loader import RuleSet, load_pack  # noqa: E402
from monitor.samples import Sample  # noqa: E402
from monitor.traces.replay import Replayer  # noqa: E402
from monitor.traces.trace import iter_trace  # noqa: E402
from tests.rules.helpers_rules import hero, llmc_samples  # noqa: E402
from tests.rules.test_replay_batched import SCENARIOS, plain  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "monitor/traces/examples/llmc-gpt2-124m.jsonl"
PACKS = ("hero", "sft", "rl")


def record(out, name: str, samples: Iterable[Sample], specs, end: float | None = None, batched=True) -> int:
    r = Replayer(specs, batched=batched)
    for s in samples:
        r.feed(s)
    events = r.finish(end)
    for e in events:
        row = {"trace": name, **e.to_json(), "fingerprint": e.fingerprint}
        out.write(json.dumps(row, sort_keys=True, default=str) + "\n")
    for run, summary in sorted(r.summaries.items()):
        row = {"trace": name, "run": run, "samples": summary.samples, "last_step": summary.last_step}
        row["stats"] = summary.stats
        out.write(json.dumps(row, sort_keys=True, default=str) + "\n")
    return len(events)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--bench-steps", type=int, default=60_000)
    args = ap.parse_args(argv)
    n = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for pack in PACKS:
            n += record(out, f"example/{pack}", iter_trace(EXAMPLE), load_pack(pack))
            n += record(out, f"llmc/{pack}", llmc_samples(), load_pack(pack))
        for inc in incidents() + steady_and_ending_incidents():
            samples, _, end = inc.build()
            n += record(out, f"incident/{inc.name}", samples, inc.specs(), end)
        specs = RuleSet(tuple(hero())).for_run(settings={"target_step": 19559})
        for name, build in healthy() + flaky_outages():
            samples, end = build()
            n += record(out, f"healthy/{name}", samples, specs, end)
        for name, sc in sorted(SCENARIOS.items()):
            scenario = sc()
            samples = plain(scenario.build())
            for batched in (True, False):
                n += record(out, f"scenario/{name}/{batched}", samples, hero(), scenario.end, batched)
        with tempfile.TemporaryDirectory(prefix="herowatch-golden-") as tmp:
            path = Path(tmp) / "trace.jsonl"
            write_trace(path, args.bench_steps)
            n += record(out, "bench", iter_trace(path), load_pack("hero"))
    print(f"{n} transitions written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
