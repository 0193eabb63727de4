"""``source_unavailable``: a source that cannot be read is its own alert, never a stalled run.

While a watch's source fails, the data rules of its runs are not evaluated (their alerts keep the state
they had); this alert says so instead, with its own labels so that routing can send it apart.
"""

from __future__ import annotations

import functools
from typing import Literal

from alerts.model import Finding, Severity
from monitor.rules.spec import RuleSpec


class SourceHealthSpec(RuleSpec):
    kind: Literal["source_unavailable"] = "source_unavailable"


@functools.cache  # built once per source kind, not per run and poll
def source_rule(source: str) -> SourceHealthSpec:
    return SourceHealthSpec(
        name="source_unavailable",
        kind="source_unavailable",
        severity=Severity.WARNING,
        for_=120.0,
        labels={"source": source, "category": "herowatch"},
        annotations={
            "summary": f"{{run}}: cannot read {source}: {{reason}}",
            "description": "herowatch cannot read this run's data. Its training rules are paused "
            "(no false stall pages) until the source answers again.",
            "runbook_url": "{runbooks}#source-unavailable",
        },
    )


def finding(error: str | None, scope: str | None = None) -> Finding:
    """``scope="watch"``: the watch itself carries the outage (no run of it is known yet)."""
    extra = {"scope": scope} if scope else {}
    if error:
        return Finding(True, reason=error[:300], extra_labels=extra)
    return Finding(False, reason="source answers again", extra_labels=extra)
