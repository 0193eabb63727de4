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
    lines = out.strip().splitlines()
    summary = next(line for line in lines if line.startswith("caught "))
    m = re.fullmatch(
        r"caught (\d+)/(\d+), false pages (\d+) on healthy logs \+ (\d+) before an onset, "
        r"extra pages (\d+), median time to detect (\d+\.\d) min",
        summary,
    )
    assert m, summary
    caught, total, median = int(m[1]), int(m[2]), float(m[6])
    assert total >= 12 and caught >= total - 1 and median <= 10
    assert re.search(r"hang at an ordinary step .* progress_stalled +[0-5]\.\dm", out), out
    # the hero-cadence section: every incident caught at every cadence, no false or extra page
    cadences = [line for line in lines if re.fullmatch(r"\d+ s/step: .*", line)]
    assert len(cadences) == 3, lines[-5:]
    for line in cadences:
        c = re.fullmatch(r"\d+ s/step: caught (\d+)/(\d+), false pages (\d+), extra (\d+), .*", line)
        assert c and c[1] == c[2] and c[3] == "0" and c[4] == "0", line
