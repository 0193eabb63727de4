"""``/herowatch report``: this week's summary.

The weekly report is not built yet (issue #30). Until it is, the command answers with the status of
every run, and says so. This one function is the seam: the report replaces its body, nothing else
changes (the command, both doors and their tests call only this).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.web.context import ApiContext
from monitor.web.slack.replies import Reply
from monitor.web.slack.status_blocks import runs_reply
from monitor.web.snapshot import build


def weekly_report(ctx: ApiContext, s: Session) -> Reply:
    snap = build(ctx, s, 0)
    return runs_reply(snap, snap.runs, ctx.external_url, "No weekly report yet; the status of every run")
