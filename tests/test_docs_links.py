"""What the documentation cites exists: every tests/..., monitor/..., alerts/..., scripts/... and docs/...
path named in README.md and docs/*.md (docs/trace-format.md named a module that had moved)."""

from __future__ import annotations

import re

from tests.conftest import REPO

CITED = re.compile(r"`((?:tests|monitor|alerts|scripts|docs)/[\w/.-]+)`")


def test_every_cited_test_file_or_folder_exists():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    cited = {(doc.name, path) for doc in docs for path in CITED.findall(doc.read_text(encoding="utf-8"))}
    assert ("deploy.md", "tests/deploy/") in cited
    assert ("trace-format.md", "monitor/traces/trace.py") in cited
    placeholders = ("foo", "<", "NN")  # "a source kind foo": a pattern, not a file
    missing = sorted(
        (doc, path)
        for doc, path in cited
        if not (REPO / path).exists() and not any(p in path for p in placeholders)
    )
    assert missing == [], f"cited but missing: {missing}"
