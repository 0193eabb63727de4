"""``/herowatch report``: the hero-run report of the last 7 days, in brief (goodput, GPU-hours lost and
to what, the costliest incident, recurring causes, the noisiest rule), with a link to the whole report.
The command, both doors and their tests call only this."""

from __future__ import annotations

from sqlalchemy.orm import Session

from alerts.notifiers.slack.blocks import clip, esc
from monitor.reports.markdown import summary_lines
from monitor.web.context import ApiContext
from monitor.web.reports import report_for
from monitor.web.slack.replies import Reply


def weekly_report(ctx: ApiContext, s: Session) -> Reply:
    r = report_for(ctx, s, since="7d")
    head = f"herowatch report: the last 7 days ({r.period.label})"
    lines = summary_lines(r) if r.runs else ["No run was watched in these 7 days."]
    link = f"{ctx.external_url.rstrip('/')}/reports" if ctx.external_url else None
    tail = (
        f"The whole report (last full week, pictures, every page): {link}"
        if link
        else ("The whole report: the dashboard's /reports page, or `herowatch report`")
    )
    text = "\n".join([head, *(f"• {x}" for x in lines), tail])
    blocks = (
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{esc(head)}*"}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip("\n".join(f"• {esc(x)}" for x in lines), 2900)},
        },
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": esc(tail)
                    if not link
                    else f"<{link}|The whole report>: pictures, every page, alert quality",
                }
            ],
        },
    )
    return Reply(clip(text, 3000), blocks)
