"""bench/detection_quality.py: the figures docs/rules.md shows come from a script that runs in CI time
(in CI) and whose summary says what it measured."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.rules.helpers_rules import REPO


def test_the_detection_quality_bench_sums_up_what_it_measured():
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "detection_quality.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,  # catches a hang; not a timing (the bench takes ~20 s on a quiet machine)
    ).stdout
    last = out.strip().splitlines()[-1]
    m = re.fullmatch(r"caught (\d+)/(\d+), false pages (\d+), median time to detect (\d+\.\d) min", last)
    assert m, last
    caught, total, false_pages, median = int(m[1]), int(m[2]), int(m[3]), float(m[4])
    assert total >= 12 and caught >= total - 1 and false_pages == 0 and median <= 10
    assert re.search(r"hang at an ordinary step .* progress_stalled +[0-5]\.\dm", out), out
