"""What the documentation cites exists: every tests/... path named in README.md and docs/*.md."""

from __future__ import annotations

import re

from tests.conftest import REPO

CITED = re.compile(r"`(tests/[\w/.-]+)`")


def test_every_cited_test_file_or_folder_exists():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    cited = {(doc.name, path) for doc in docs for path in CITED.findall(doc.read_text(encoding="utf-8"))}
    assert ("deploy.md", "tests/deploy/") in cited
    missing = sorted((doc, path) for doc, path in cited if not (REPO / path).exists())
    assert missing == [], f"cited but missing: {missing}"
