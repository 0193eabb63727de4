"""Block Kit for herowatch's Slack messages, from a ``GroupView``: the root message of an alert group
episode (kept current with chat.update) and the thread replies (news, changes, reminders). Pure.

Every message has a plain ``text`` too: Slack shows it in notifications and screen readers read it.
User-supplied strings (labels, summaries) are escaped for mrkdwn; lengths are clipped to Slack's limits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from alerts.clock import isoformat
from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.notifiers.slack.interactions import ACK, SILENCE_1H, SILENCE_4H, STACKS, encode_button_value
from alerts.views import AlertView, GroupView

EVENT_TYPE = "herowatch_notification"  # message metadata: event_payload {"key": idempotency key}

_SEVERITY = {
    "critical": (":red_circle:", "CRITICAL"),
    "warning": (":large_orange_circle:", "WARNING"),
    "info": (":large_blue_circle:", "INFO"),
}
_RESOLVED = (":large_green_circle:", "RESOLVED")
_STATE_ICON = {
    "firing": ":red_circle:",
    "pending": ":hourglass_flowing_sand:",
    "resolved": ":white_check_mark:",
}
_MAX_ALERT_LINES = 10
_SLACK_USER_ID = re.compile(r"^[UW][A-Z0-9]{5,}$")
# a Slack user as on-call actions name one (interactions.slack_actor): "amy (Slack U0AMY)", "Slack U0AMY"
_SLACK_ACTOR = re.compile(r"(?:^|\()Slack ([UW][A-Z0-9]{5,})\)?$")


@dataclass(frozen=True)
class Message:
    text: str
    blocks: list[dict[str, Any]]


# ---- small formatting helpers ---------------------------------------------------------------------------
def esc(s: Any) -> str:
    """Escape a string for Slack mrkdwn (and for ``text``)."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def num(v: Any) -> str:
    if v is None:
        return "—"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return esc(v)
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    return f"{f:.4g}"


def when(ts: float | None) -> str:
    """A time every reader sees in their own time zone (UTC ISO as the fallback)."""
    if ts is None:
        return "—"
    t = int(float(ts))
    return f"<!date^{t}^{{date_short_pretty}} {{time}}|{isoformat(float(t))}>"


def link(url: Any, label: str) -> str:
    """A mrkdwn link; characters that would end it early are percent-encoded in the URL."""
    safe = str(url).replace("|", "%7C").replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")
    return f"<{esc(safe)}|{esc(label)}>"


def state_counts(alerts: Sequence[AlertView]) -> str:
    """E.g. "2 firing, 1 resolved"."""
    counts: dict[str, int] = {}
    for a in alerts:
        counts[a.state] = counts.get(a.state, 0) + 1
    known = [s for s in ("firing", "pending", "resolved") if s in counts]
    return ", ".join(f"{counts[s]} {s}" for s in known + sorted(set(counts) - set(known)))


def mention(name: Any) -> str:
    """Who acted, as Slack shows it: a mention of a Slack user (by id), else the name."""
    if _SLACK_USER_ID.match(str(name)):
        return f"<@{name}>"
    actor = _SLACK_ACTOR.search(str(name))
    return f"<@{actor.group(1)}>" if actor else esc(name)


def _badge(view: GroupView, alert: AlertView) -> tuple[str, str]:
    if view.resolved:
        return _RESOLVED
    return _SEVERITY.get(alert.severity.value, (":white_circle:", alert.severity.value.upper()))


def _value_vs_threshold(a: AlertView) -> str:
    if a.value is None and a.threshold is None:
        return "—"
    out = f"`{num(a.value)}`"
    if a.threshold is not None:
        out += f" vs threshold `{num(a.threshold)}`"
    return out


def _alert_line(a: AlertView) -> str:
    bits = [f"{_STATE_ICON.get(a.state, ':grey_question:')} *{esc(a.alertname)}* {esc(a.state)}"]
    if a.summary:
        bits[0] += f" — {esc(a.said_now)}"
    if a.value is not None and a.state != AlertState.RESOLVED:  # a resolved alert's value is of the past
        bits.append(_value_vs_threshold(a))
    if a.step is not None:
        bits.append(f"step {num(a.step)}")
    if a.state == AlertState.RESOLVED and a.ended_at:
        bits.append(f"lasted {format_duration(a.ended_at - a.started_at, 2)}")
    if a.acked_by:
        bits.append(f"acked by {mention(a.acked_by)}")
    if a.silenced:
        bits.append(f"muted ({esc(a.silenced)})")
    return " · ".join(bits)


def _alert_lines(alerts: Sequence[AlertView]) -> str:
    lines = [_alert_line(a) for a in alerts[:_MAX_ALERT_LINES]]
    if len(alerts) > _MAX_ALERT_LINES:
        lines.append(f"…and {len(alerts) - _MAX_ALERT_LINES} more")
    return clip("\n".join(lines), 2900)


def hints_text(a: AlertView) -> str | None:
    """The alert's culprit hints as mrkdwn: the fleet members that stood out, or that none did."""
    if not a.hints:
        return None
    odd = [h for h in a.hints if h.member]
    if not odd:
        return f":mag: {esc(a.hints[0].text)}."
    span = f" over the last {format_duration(a.hints_window, 2)}" if a.hints_window else ""
    lines = [f":mag: *Stands out from the fleet*{span}:"]
    lines += [f"• {esc(h.text)}" for h in odd[:_MAX_ALERT_LINES]]
    return "\n".join(lines)


def stacks_text(a: AlertView) -> str | None:
    """Where the job's processes are, as mrkdwn: the sentence, then the innermost frames of each odd
    group (the ranks the others wait for)."""
    if a.stacks is None:
        return None
    lines = [f":mag_right: *Stacks*: {esc(a.stacks.summary)}"]
    for g in a.stacks.odd[:3]:
        frames = "\n".join(esc(f) for f in g.frames[:6])
        lines.append(f"*{esc(g.who)}*:\n```{frames}```")
    return "\n".join(lines)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, 2900)}}


def _links(view: GroupView, dashboard_base: str | None) -> list[str]:
    out = []
    dashboard = view.links.get("dashboard_url")
    if not dashboard and dashboard_base and view.run:
        dashboard = f"{dashboard_base.rstrip('/')}/runs/{quote(view.run, safe='')}"
    if view.links.get("wandb_url"):
        out.append(link(view.links["wandb_url"], ":bar_chart: W&B run"))
    if dashboard:
        out.append(link(dashboard, ":desktop_computer: herowatch dashboard"))
    if view.lead.runbook_url:
        out.append(link(view.lead.runbook_url, ":book: Runbook"))
    return out


def headline(view: GroupView, alert: AlertView) -> str:
    """One line for notifications and screen readers, about ``alert``."""
    word = "RESOLVED" if alert.state == AlertState.RESOLVED else _badge(view, alert)[1]
    run = f" on {view.where}" if view.run else ""
    text = f"{word}: {alert.alertname}{run} — {alert.said_now}".rstrip(" —")
    if alert.value is not None and alert.state != AlertState.RESOLVED:
        text += f" (value {num(alert.value)}"
        if alert.threshold is not None:
            text += f", threshold {num(alert.threshold)}"
        if alert.step is not None:
            text += f", step {num(alert.step)}"
        text += ")"
    return clip(esc(text), 3000)


# ---- the root message -------------------------------------------------------------------------------
def root_message(view: GroupView, dashboard_base: str | None = None, buttons: bool = True) -> Message:
    lead = view.lead
    icon, word = _badge(view, lead)
    run = f" · {view.where}" if view.run else ""
    title = lead.alertname + (f" +{len(view.alerts) - 1}" if len(view.alerts) > 1 else "")
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": clip(f"{icon} {word} · {title}{run}", 150), "emoji": True},
        }
    ]
    what = f"*{esc(lead.summary)}*"
    if lead.state == AlertState.RESOLVED:  # what is true now first; what it fired with as past
        what = f"*Now: {esc(lead.resolved_reason or 'resolved')}*\nWas: {esc(lead.summary)}"
    if lead.description and lead.state != AlertState.RESOLVED:
        what += f"\n{esc(lead.description)}"
    if view.resolved:
        ends = [a.ended_at for a in view.alerts if a.ended_at]
        if ends:
            lasted = format_duration(max(ends) - min(a.started_at for a in view.alerts), 2)
            what += f"\n:white_check_mark: Resolved {when(max(ends))} after {lasted}."
    blocks.append(_section(what))
    subject = esc(view.run_title) if view.run_title else "—"
    fields = [
        f"*{view.where.split(' ')[0].title() if view.run else 'Run'}*\n{subject}",
        f"*Value*\n{_value_vs_threshold(lead)}",
        f"*Step*\n{num(lead.step)}",
        f"*{'Started' if view.resolved else 'Firing since'}*\n{when(lead.started_at)}",
    ]
    if len(view.alerts) > 1:
        fields.append(f"*Alerts*\n{state_counts(view.alerts)}")
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": clip(f, 1900)} for f in fields]})
    hints = hints_text(lead)
    if hints:
        blocks.append(_section(hints))
    stacks = stacks_text(lead)
    if stacks:
        blocks.append(_section(stacks))
    if len(view.alerts) > 1:
        blocks.append(_section(_alert_lines(view.alerts)))
    notes = []
    acked = sorted({a.acked_by for a in view.alerts if a.acked_by})
    if acked:
        notes.append(":eyes: Acknowledged by " + ", ".join(mention(u) for u in acked))
    if any(a.silenced for a in view.alerts):
        notes.append(":mute: Silenced")
    if view.plot is not None:
        notes.append(f":chart_with_upwards_trend: Plot in the thread: {esc(view.plot.caption)}")
    links = _links(view, dashboard_base)
    if links:
        notes.append("  ·  ".join(links))
    if notes:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(x, 1900)} for x in notes]}
        )
    if buttons and view.actions and not view.resolved:
        value = encode_button_value(view.group_key, view.alert_ids())
        blocks.append(
            {
                "type": "actions",
                "block_id": "herowatch_actions",
                "elements": [
                    _button(":eyes: Acknowledge", ACK, value, style="primary"),
                    _button(":mute: Silence 1 h", SILENCE_1H, value),
                    _button(":mute: Silence 4 h", SILENCE_4H, value),
                    # a hang of a run whose wrappers answered: ask them again, answered in the thread
                    *([_button(":mag_right: Capture stacks", STACKS, value)] if _capturable(view) else []),
                ],
            }
        )
    text = headline(view, lead)
    odd = [h for h in lead.hints if h.member]
    if odd and not view.resolved:
        text = clip(f"{text} · stands out: {esc(odd[0].text)}", 3000)
    if lead.stacks is not None and not view.resolved:
        text = clip(f"{text} · stacks: {esc(lead.stacks.summary)}", 3000)
    return Message(text=text, blocks=blocks)


def _capturable(view: GroupView) -> bool:
    """A firing alert of the group carries stacks: its run has ``herowatch emit run`` wrappers."""
    return any(a.stacks is not None and a.state == AlertState.FIRING for a in view.alerts)


def _button(label: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style:
        b["style"] = style
    return b


# ---- thread replies ---------------------------------------------------------------------------------
def reply_message(view: GroupView) -> Message:
    """The thread reply of a ``notify``, ``update`` or ``repeat``: what this notification is about."""
    changed = view.changed_alerts
    news = view.news
    run = f" on {esc(view.where)}" if view.run else ""
    if view.kind == "repeat":
        since = min(a.started_at for a in changed)
        head = f":repeat: *Reminder* — still firing{run}: {len(changed)} alert(s), since {when(since)}."
        text = f"Reminder: {news.alertname} still firing" + (f" on {view.where}" if view.run else "")
        return Message(
            text=clip(esc(text + f" — {news.summary}"), 3000),
            blocks=[_section(head), _section(_alert_lines(changed))],
        )
    if view.kind == "notify":
        icon, word = _SEVERITY.get(news.severity.value, (":white_circle:", news.severity.value.upper()))
        head = f"{icon} *New {word}*{run}: *{esc(news.alertname)}* — {esc(news.summary)}"
        blocks = [_section(head), _section(_alert_lines(changed))]
        hints = hints_text(news)
        if hints:
            blocks.append(_section(hints))
        stacks = stacks_text(news)
        text = headline(view, news)
        if stacks:
            blocks.append(_section(stacks))
            text = clip(f"{text} · stacks: {esc(news.stacks.summary)}", 3000)
        return Message(text=text, blocks=blocks)
    resolved = [a for a in changed if a.state == AlertState.RESOLVED]
    names = ", ".join(esc(a.alertname) for a in resolved)
    if resolved and view.resolved:
        head = f":large_green_circle: *Resolved* — {names}; all alerts cleared."
    elif resolved:
        head = f":large_green_circle: *Resolved*: {names} ({state_counts(view.alerts)})."
    elif all(a.acked_by for a in changed):
        who = ", ".join(sorted({mention(a.acked_by) for a in changed}))
        names = ", ".join(esc(a.alertname) for a in changed)
        head = f":eyes: *Acknowledged* by {who}: no reminders for {names}."
        text = f"Acknowledged by {', '.join(sorted({str(a.acked_by) for a in changed}))}: {news.alertname}"
        return Message(text=clip(esc(text), 3000), blocks=[_section(head), _section(_alert_lines(changed))])
    else:
        head = f":arrows_counterclockwise: *Update* — {state_counts(view.alerts)}."
    return Message(text=headline(view, news), blocks=[_section(head), _section(_alert_lines(changed))])


def metadata_for(view: GroupView) -> dict[str, Any]:
    return {"event_type": EVENT_TYPE, "event_payload": {"key": view.key, "group_key": view.group_key}}
