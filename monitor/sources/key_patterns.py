"""Which keys (tags) a source reads: exact names and ``*`` wildcards, as the configs write them."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable


def key_filter(patterns: list[str]) -> Callable[[str], bool]:
    if "*" in patterns:
        return lambda key: True
    exact = {p for p in patterns if not any(c in p for c in "*?[")}
    wild = [re.compile(fnmatch.translate(p)) for p in patterns if p not in exact]
    return lambda key: key in exact or any(w.match(key) for w in wild)
