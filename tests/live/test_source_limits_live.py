"""A source's answer is read against a byte limit, live: ``herowatch serve`` polling a Prometheus that
answers a valid 100 MB matrix to each of 4 queries at once. Before, that took herowatch from 293 MB to a
6.9 GB peak (issue 37). Now each answer is dropped once it passes ``max_answer_bytes``: the peak memory
grows by under 100 MB, and the watch says which limit the answer passed."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.live.hostile_prometheus import HostilePrometheus
from tests.live.sources_support import source_stack
from tests.live.support import API_TOKEN, wait_for

QUERIES = ", ".join(f"q{i}: 'gpu_util{{i=\"{i}\"}}'" for i in range(4))


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) of a process, in MB."""
    got = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(value.split()[0]) / 1024
    return got["VmRSS"], got["VmHWM"]


def told(url: str) -> str:
    """What the watch says of its source: /readyz and its alerts (a run's answers over the limit make
    that run unreadable; the probe's, the source)."""
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    ready = httpx.get(url + "/readyz", headers=auth, timeout=5).text
    return ready + httpx.get(url + "/api/alerts?limit=500", headers=auth, timeout=5).text


def test_a_100_mb_prometheus_answer_is_refused_at_the_limit_with_memory_bounded(tmp_path):
    with HostilePrometheus(size=0) as prom, source_stack(tmp_path) as stack:
        source = (
            f"    prometheus: {{url: '{prom.url}', runs: [r1], queries: {{{QUERIES}}}, mode: range, "
            "step: 15s, timeout: 20s, retries: 0}"
        )
        hw = stack.serve(stack.write_config(source, "        {}\n"))
        wait_for(lambda: prom.requests >= 20, 60, "polls of small answers (herowatch warmed up)")
        before, _ = memory_mb(hw.pid)

        prom.size = 100 << 20  # every answer from now on: a valid 100 MB matrix
        asked = prom.requests
        text = wait_for(
            lambda: next((t for t in [told(hw.url)] if "max_answer_bytes" in t), None),
            90,
            "the watch to report the answer over its limit",
            seen=lambda: told(hw.url),
        )
        wait_for(lambda: prom.requests >= asked + 20, 90, "20 huge answers")
        now, peak = memory_mb(hw.pid)
        print(f"RSS before {before:.0f} MB, peak {peak:.0f} MB, now {now:.0f} MB")
        assert f"over the limit of {8 << 20} bytes" in text, text
        assert peak - before < 100, f"peak {peak:.0f} MB from {before:.0f} MB (now {now:.0f} MB)"
        assert not hw.errors(), hw.errors()
