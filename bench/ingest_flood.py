"""The ingest flood of issue 37 against a real ``herowatch serve``: 3 clients for 20 s, each request one
sample of 2,000 metric names of 195 characters (413 KB). Before, 1,338 requests were all 202 and the
spool grew 547 MB (27 MB/s); the database then grew to 1.42 GB.

    .venv/bin/python bench/ingest_flood.py                      # the flood as reported
    .venv/bin/python bench/ingest_flood.py --names 1000 --chars 120 --seconds 20   # names that fit

It serves one push watch on SQLite in a temporary folder (127.0.0.1 only), floods it, and prints the
answers by status, the spool's size beside its budget (``push.spool_bytes``) and the byte rate beside
``push.rate_bytes``, each as a ratio; then the server's resident memory and its database's size.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.sources.push_spool import backlog  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKEN = "bench-ingest-token-" + "0123456789abcdef" * 2
API_TOKEN = "bench-api-token-" + "fedcba9876543210" * 2
RATE_BYTES, BURST_BYTES, SPOOL_BYTES = 1 << 20, 32 << 20, 64 << 20  # the defaults


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(i: int, names: int, chars: int) -> dict:
    metrics = {f"m{i}-{k:05d}-".ljust(chars, "x"): 1.0 for k in range(names)}
    return {"run": f"flood-{i % 3}", "samples": [{"step": i, "metrics": metrics}]}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--names", type=int, default=2000)
    ap.add_argument("--chars", type=int, default=195)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="herowatch-flood-"))
    cfg = tmp / "herowatch.yaml"
    cfg.write_text(
        "watch:\n  - name: jobs\n    poll_interval: 5s\n    push: {token_env: FLOOD_TOKEN}\n"
        "receivers: [{name: c, kind: console}]\nroute: {receiver: c}\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "HEROWATCH_DATABASE_URL": f"sqlite:///{tmp / 'hw.db'}",
        "HEROWATCH_API_TOKEN": API_TOKEN,
        "HEROWATCH_INGEST_DIR": str(tmp / "ingest"),
        "FLOOD_TOKEN": TOKEN,
    }
    cmd = [sys.executable, "-m", "monitor.cli", "serve", "-c", str(cfg), "--listen", f"127.0.0.1:{port}"]
    log = (tmp / "serve.log").open("ab")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        rss_before = rss_mb(proc.pid)
        codes: collections.Counter[int] = collections.Counter()
        lock = threading.Lock()
        end = time.monotonic() + args.seconds
        peak_spool = [0]

        def client(c: int) -> None:
            with httpx.Client(timeout=30) as http:
                i = c
                while time.monotonic() < end:
                    r = http.post(
                        url + "/api/ingest",
                        json=body(i, args.names, args.chars),
                        headers={"Authorization": f"Bearer {TOKEN}"},
                    )
                    with lock:
                        codes[r.status_code] += 1
                    i += args.clients

        def spool_size() -> int:
            return sum(p.stat().st_size for p in (tmp / "ingest").rglob("*.jsonl"))

        def unread() -> int:  # what push.spool_bytes bounds: accepted, not yet read by the poller
            return backlog(tmp / "ingest", "jobs") if (tmp / "ingest").exists() else 0

        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
        start = time.monotonic()
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak_spool[0] = max(peak_spool[0], unread())
            time.sleep(0.2)
        took = time.monotonic() - start
        spool = spool_size() if (tmp / "ingest").exists() else 0
        print(f"{args.clients} clients x {took:.0f}s, one sample of {args.names} names x {args.chars} chars")
        print(f"answers: {dict(sorted(codes.items()))}  ({sum(codes.values())} requests)")
        peak = peak_spool[0]
        budget = f"budget {SPOOL_BYTES / 1e6:.0f} MB  ratio {peak / SPOOL_BYTES:.2f}"
        print(f"unread spool at most: {peak / 1e6:.1f} MB  {budget}")
        print(f"spool on disk (read and unread): {spool / 1e6:.1f} MB")
        rate = spool / took
        limit = RATE_BYTES + BURST_BYTES / took
        allowed = f"allowed {limit / 1e6:.2f} MB/s (rate + burst over the run)"
        print(f"spool growth: {rate / 1e6:.2f} MB/s  {allowed}  ratio {rate / limit:.2f}")
        time.sleep(10)  # two polls: the poller reads what was taken
        db = sum(p.stat().st_size for p in tmp.glob("hw.db*"))
        print(f"server RSS: {rss_before:.0f} MB -> {rss_mb(proc.pid):.0f} MB; database {db / 1e6:.1f} MB")
        print(f"server log: {(tmp / 'serve.log').stat().st_size / 1e3:.0f} KB")
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            print("the server did not stop within 60 s of SIGTERM: killed")
            proc.kill()


if __name__ == "__main__":
    main()
