"""``/herowatch report``: the hero-run report of the last 7 days, in brief (goodput, GPU-hours lost and
to what, the costliest incident, recurring causes, the noisiest rule), with a link to the whole report.
The command, both doors and their tests call only this; the message itself is
``monitor.reports.slack_post`` (the scheduled post's too)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.reports.slack_post import post
from monitor.web.context import ApiContext
from monitor.web.reports import report_for
from monitor.web.slack.replies import Reply


def weekly_report(ctx: ApiContext, s: Session) -> Reply:
    r = report_for(ctx, s, since="7d")
    link = f"{ctx.external_url.rstrip('/')}/reports" if ctx.external_url else None
    message = post(
        r,
        f"herowatch report: the last 7 days ({r.period.label})",
        link,
        "The whole report: the dashboard's /reports page, or `herowatch report`",
    )
    return Reply(message.text, tuple(message.blocks))
