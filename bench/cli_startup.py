"""How long the `herowatch` command takes to start and finish, per command, against its target and
against the floor (``python -c pass``, the interpreter alone), with what it imported (issue 40).

Each command runs ``--runs`` times in a fresh process; the figures are the median wall time and the
median CPU time (user + system of the child). On a loaded machine wall time waits for a core; CPU time
is what the command itself spends, and is what an idle machine's wall time comes close to. `emit` sends
one sample to a stand-in ingest server on loopback (stdlib, answers 200), so its request is included.
Then ``python -X importtime`` of each command is summarised: the top imports by cumulative time.

    .venv/bin/python bench/cli_startup.py [--runs 7] [--top 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEROWATCH = [sys.executable, "-m", "monitor.cli"]


class _Ingest(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"accepted": 1}')

    def log_message(self, *args: object) -> None:
        pass


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """One run: wall seconds, CPU seconds (user + system of the child), exit code."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, child.returncode


def importtime(argv: list[str], env: dict[str, str], top: int) -> list[tuple[str, float]]:
    """The top-level imports (as `-X importtime` nests them) by cumulative milliseconds."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name.startswith("  "):  # one space: imported by the command itself, not by another module
            rows.append((name.strip(), int(cumulative) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ingest)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    tmp = Path(tempfile.mkdtemp(prefix="hw-cli-bench-"))
    config = tmp / "herowatch.yaml"
    config.write_text((ROOT / "monitor/config/example.yaml").read_text())
    env = {**os.environ, "HEROWATCH_INGEST_TOKEN": "bench-token", "HEROWATCH_DATA_DIR": str(tmp)}
    cases = [  # (what, argv, target seconds)
        ("python -c pass", [sys.executable, "-c", "pass"], None),
        ("herowatch --help", [*HEROWATCH, "--help"], 0.3),
        ("herowatch version", [*HEROWATCH, "version"], 0.3),
        ("herowatch emit log", [*HEROWATCH, "emit", "log", "--run", "b", "--url", url, "loss=1.5"], 0.3),
        ("herowatch emit --help", [*HEROWATCH, "emit", "--help"], 0.3),
        ("herowatch check-config", [*HEROWATCH, "check-config", str(config)], 1.0),
        ("herowatch rules test", [*HEROWATCH, "rules", "test", "docs/examples/rules_test.yaml"], 1.0),
        ("herowatch report --help", [*HEROWATCH, "report", "--help"], None),
        ("herowatch doctor --help", [*HEROWATCH, "doctor", "--help"], None),
    ]
    load = os.getloadavg()[0]
    cores = os.cpu_count()
    print(f"herowatch CLI start-up: median of {args.runs} runs; load average {load:.1f} on {cores} cores")
    head = f"{'wall s':>7} {'cpu s':>6} {'target':>7} {'cpu/target':>10} {'cpu/python':>10}"
    print(f"{'command':<26} {head}  exit")
    floor = None
    for what, argv, target in cases:
        runs = [timed(argv, env) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        floor = floor or cpu
        codes = sorted({r[2] for r in runs})
        ratio = f"{cpu / target:10.2f}" if target else f"{'':>10}"
        shown = f"{target:7.2f}" if target else f"{'':>7}"
        print(f"{what:<26} {wall:7.3f} {cpu:6.3f} {shown} {ratio} {cpu / floor:10.1f}  {codes}")
    print(f"\n-X importtime: the top {args.top} imports of each command, cumulative ms")
    for what, argv, _ in cases[1:]:
        tops = importtime(argv, env, args.top)
        print(f"  {what}: " + ", ".join(f"{name} {ms:.0f}" for name, ms in tops))
    server.shutdown()


if __name__ == "__main__":
    main()
