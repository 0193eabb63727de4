"""What several benches measure the same way."""

from __future__ import annotations

import os


def rss_mb() -> float:
    """This process's resident memory (VmRSS), in MB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")
