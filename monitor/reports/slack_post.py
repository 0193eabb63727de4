"""The report in brief as a Slack message: the one place both the scheduled post (``schedule``) and
``/herowatch report`` (``monitor.web.slack.report``) build it.

What runs and rules are called is the user's text: it is escaped for mrkdwn (a pushed run named
``<!channel>`` must read as that name, not ping the channel), in the blocks and in the notification
text alike. Slack's limits are met by cutting at a line's end where possible, never inside an escape
(``&lt;``) or a link (``<url|words>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alerts.notifiers.slack.blocks import esc
from monitor.reports.markdown import summary_lines
from monitor.reports.model import Report

SECTION = 2900  # characters of the summary block (Slack takes 3000 in a section)
TEXT = 3000  # characters of the notification text


@dataclass(frozen=True)
class SlackPost:
    text: str  # the whole message in plain words (notifications, clients without blocks)
    blocks: list[dict[str, Any]]


def fit(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters with an ellipsis: at the end of a line when one ends in the
    second half, else before any escape or link the cut would split."""
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    line_end = cut.rfind("\n")
    if line_end > n // 2:
        return cut[:line_end] + "\n…"
    if (amp := cut.rfind("&")) > cut.rfind(";"):
        cut = cut[:amp]
    if (lt := cut.rfind("<")) > cut.rfind(">"):
        cut = cut[:lt]
    return cut + "…"


def post(r: Report, head: str, link: str | None, no_link: str) -> SlackPost:
    """``head`` in bold, a bullet per summary line, then ``link`` to the whole report (``no_link``
    says where to find it when herowatch has no external URL)."""
    lines = summary_lines(r) if r.runs else ["No run was watched in this period."]
    bullets = "\n".join(f"• {esc(x)}" for x in lines)
    where = esc(link) if link else None
    tail = f"<{where}|The whole report>: pictures, every page, alert quality" if where else esc(no_link)
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": fit(f"*{esc(head)}*", SECTION)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": fit(bullets, SECTION)}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": tail}]},
    ]
    plain_tail = f"The whole report (pictures, every page): {where}" if where else esc(no_link)
    return SlackPost(fit("\n".join([esc(head), bullets, plain_tail]), TEXT), blocks)
