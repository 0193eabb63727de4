"""The answer to a "Capture stacks" click, as a quiet reply in the alert's thread: the sentence, then
every group (the majority first, then the odd ones) with its count, its ranks and hosts and its
innermost frames, and the run page's link. Pure."""

from __future__ import annotations

from alerts.notifiers.slack.blocks import Message, clip, esc, link, mention
from alerts.views import StackView

MAX_GROUPS = 8  # groups shown; the run page has every one
FRAMES = 6  # innermost frames of each


def capture_reply(view: StackView, asked_by: str) -> Message:
    head = f":mag_right: *Stacks* asked by {mention(asked_by)}: {esc(view.summary)}"
    blocks = [_section(head)]
    for g in view.groups[:MAX_GROUPS]:
        odd = " — *odd*: the others wait for it" if g.odd else ""
        frames = "\n".join(esc(f) for f in g.frames[:FRAMES]) or "no Python frame"
        blocks.append(_section(f"*{g.count}* · {esc(g.who)}{odd}\n```{frames}```"))
    if len(view.groups) > MAX_GROUPS:
        blocks.append(_section(f"…and {len(view.groups) - MAX_GROUPS} more groups on the run page."))
    if view.url:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": link(view.url, "Every stack")}]}
        )
    text = clip(esc(f"Stacks asked by {asked_by}: {view.summary}"), 3000)
    return Message(text=text, blocks=blocks[:50])


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, 2900)}}
