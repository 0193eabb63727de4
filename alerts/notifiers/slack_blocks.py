"""Block Kit for herowatch's Slack messages: the root message of an alert group (kept current with
chat.update) and the thread replies for changes and reminders. Pure: dicts in, dicts out.

Every message has a plain ``text`` too: Slack shows it in notifications and screen readers read it.
User-supplied strings (labels, summaries) are escaped for mrkdwn; lengths are clipped to Slack's limits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from alerts.clock import isoformat
from alerts.notifiers.base import Notification
from alerts.slack_interactions import ACK, SILENCE_1H, SILENCE_4H, encode_button_value

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
_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_MAX_ALERT_LINES = 10
_SLACK_USER_ID = re.compile(r"^[UW][A-Z0-9]{5,}$")


@dataclass(frozen=True)
class Message:
    text: str
    blocks: list[dict[str, Any]]


@dataclass(frozen=True)
class GroupView:
    """What a notification says about its alert group, with defaults for a plain notification."""

    key: str  # the notification's idempotency key
    kind: str  # "open" | "update" | "repeat"
    group_key: str
    group_labels: Mapping[str, str]
    alerts: Sequence[Mapping[str, Any]]
    links: Mapping[str, Any] = field(default_factory=dict)
    series: Mapping[str, Any] = field(default_factory=dict)
    actions: bool = True
    root_ref: str | None = None
    changed: frozenset[str] | None = None  # ids of the alerts whose change this notification reports

    @classmethod
    def from_notification(cls, n: Notification) -> GroupView:
        extra = n.extra or {}
        alerts = [a for a in (extra.get("alerts") or []) if isinstance(a, Mapping)]
        if not alerts:  # a notification that is not about a group (e.g. the watchdog): one alert
            alerts = [
                {
                    "alertname": n.alertname,
                    "severity": n.severity,
                    "state": n.status,
                    "labels": dict(n.labels),
                    "summary": n.summary,
                    "description": n.annotations.get("description"),
                    "runbook_url": n.annotations.get("runbook_url"),
                    "value": n.value,
                    "threshold": None,
                    "step": n.step,
                    "started_at": n.started_at,
                    "ended_at": n.ended_at,
                }
            ]
        changed = extra.get("changed")
        return cls(
            key=n.idempotency_key,
            kind=str(extra.get("kind") or "open"),
            group_key=str(extra.get("group_key") or n.idempotency_key),
            group_labels=dict(extra.get("group_labels") or {}),
            alerts=alerts,
            links=dict(extra.get("links") or {}),
            series=dict(extra.get("series") or {}),
            actions=bool(extra.get("actions", bool(extra.get("group_key")))),  # no group, no buttons
            root_ref=extra.get("root_ref") or None,
            changed=frozenset(str(c) for c in changed) if changed is not None else None,
        )

    # ---- derived ------------------------------------------------------------------------------------
    @property
    def firing(self) -> list[Mapping[str, Any]]:
        return [a for a in self.alerts if a.get("state") == "firing"]

    @property
    def resolved(self) -> bool:
        return all(a.get("state") == "resolved" for a in self.alerts)

    @property
    def lead(self) -> Mapping[str, Any]:
        """The alert a message leads with: firing first, then the most severe, then the oldest."""
        return sorted(
            self.alerts,
            key=lambda a: (
                a.get("state") != "firing",
                _SEVERITY_ORDER.get(str(a.get("severity")), 9),
                a.get("started_at") or 0,
            ),
        )[0]

    @property
    def run(self) -> str | None:
        run = self.group_labels.get("run") or (self.lead.get("labels") or {}).get("run")
        return str(run) if run else None

    def alert_ids(self) -> list[str]:
        return [
            str(a.get("id") or a.get("fingerprint"))
            for a in self.alerts
            if a.get("id") or a.get("fingerprint")
        ]

    def changed_alerts(self) -> list[Mapping[str, Any]]:
        if self.changed is None:
            return list(self.alerts)
        hit = [a for a in self.alerts if str(a.get("id")) in self.changed]
        return hit or list(self.alerts)


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


def when(ts: Any) -> str:
    """A time every reader sees in their own time zone (UTC ISO as the fallback)."""
    if ts is None:
        return "—"
    t = int(float(ts))
    return f"<!date^{t}^{{date_short_pretty}} {{time}}|{isoformat(float(t))}>"


def link(url: Any, label: str) -> str:
    """A mrkdwn link; characters that would end it early are percent-encoded in the URL."""
    safe = str(url).replace("|", "%7C").replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")
    return f"<{esc(safe)}|{esc(label)}>"


def duration(seconds: float) -> str:
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d}d"] * bool(d) + [f"{h}h"] * bool(h) + [f"{m}m"] * bool(m)
    return " ".join(parts[:2]) or f"{s}s"


def state_counts(alerts: Sequence[Mapping[str, Any]]) -> str:
    """E.g. "2 firing, 1 resolved"."""
    counts: dict[str, int] = {}
    for a in alerts:
        counts[str(a.get("state"))] = counts.get(str(a.get("state")), 0) + 1
    known = [s for s in ("firing", "pending", "resolved") if s in counts]
    return ", ".join(f"{counts[s]} {s}" for s in known + sorted(set(counts) - set(known)))


def _user(name: Any) -> str:
    return f"<@{name}>" if _SLACK_USER_ID.match(str(name)) else esc(name)


def _severity_badge(view: GroupView) -> tuple[str, str]:
    if view.resolved:
        return _RESOLVED
    return _SEVERITY.get(
        str(view.lead.get("severity")), (":white_circle:", str(view.lead.get("severity")).upper())
    )


def _value_vs_threshold(a: Mapping[str, Any]) -> str:
    if a.get("value") is None and a.get("threshold") is None:
        return "—"
    out = f"`{num(a.get('value'))}`"
    if a.get("threshold") is not None:
        out += f" vs threshold `{num(a.get('threshold'))}`"
    return out


def _alert_line(a: Mapping[str, Any]) -> str:
    state = str(a.get("state") or "?")
    bits = [f"{_STATE_ICON.get(state, ':grey_question:')} *{esc(a.get('alertname'))}* {esc(state)}"]
    if a.get("summary"):
        bits[0] += f" — {esc(a['summary'])}"
    if a.get("value") is not None:
        bits.append(_value_vs_threshold(a))
    if a.get("step") is not None:
        bits.append(f"step {num(a['step'])}")
    if state == "resolved" and a.get("ended_at") and a.get("started_at"):
        bits.append(f"lasted {duration(float(a['ended_at']) - float(a['started_at']))}")
    if a.get("acked_by"):
        bits.append(f"acked by {_user(a['acked_by'])}")
    if a.get("silenced"):
        bits.append(f"muted ({esc(a['silenced'])})")
    return " · ".join(bits)


def _alert_lines(alerts: Sequence[Mapping[str, Any]]) -> str:
    lines = [_alert_line(a) for a in alerts[:_MAX_ALERT_LINES]]
    if len(alerts) > _MAX_ALERT_LINES:
        lines.append(f"…and {len(alerts) - _MAX_ALERT_LINES} more")
    return clip("\n".join(lines), 2900)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, 2900)}}


def _links(view: GroupView, dashboard_base: str | None) -> list[str]:
    lead = view.lead
    out = []
    wandb = view.links.get("wandb_url")
    dashboard = view.links.get("dashboard_url")
    if not dashboard and dashboard_base and view.run:
        dashboard = f"{dashboard_base.rstrip('/')}/runs/{quote(view.run, safe='')}"
    if wandb:
        out.append(link(wandb, ":bar_chart: W&B run"))
    if dashboard:
        out.append(link(dashboard, ":desktop_computer: herowatch dashboard"))
    if lead.get("runbook_url"):
        out.append(link(lead["runbook_url"], ":book: Runbook"))
    return out


def fallback_text(view: GroupView) -> str:
    """One line for notifications and screen readers."""
    icon_word = _severity_badge(view)[1]
    lead = view.lead
    run = f" on run {view.run}" if view.run else ""
    more = f" (+{len(view.alerts) - 1} more)" if len(view.alerts) > 1 else ""
    text = f"{icon_word}: {lead.get('alertname')}{more}{run} — {lead.get('summary') or ''}".rstrip(" —")
    if lead.get("value") is not None:
        text += f" (value {num(lead.get('value'))}"
        if lead.get("threshold") is not None:
            text += f", threshold {num(lead.get('threshold'))}"
        if lead.get("step") is not None:
            text += f", step {num(lead.get('step'))}"
        text += ")"
    return clip(esc(text), 3000)


# ---- the root message -------------------------------------------------------------------------------
def root_message(view: GroupView, dashboard_base: str | None = None, buttons: bool = True) -> Message:
    lead = view.lead
    icon, word = _severity_badge(view)
    run = f" · run {view.run}" if view.run else ""
    title = str(lead.get("alertname") or "alert")
    if len(view.alerts) > 1:
        title += f" +{len(view.alerts) - 1}"
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": clip(f"{icon} {word} · {title}{run}", 150), "emoji": True},
        },
    ]
    what = f"*{esc(lead.get('summary') or lead.get('alertname'))}*"
    if lead.get("description"):
        what += f"\n{esc(lead['description'])}"
    if view.resolved:
        ends = [float(a["ended_at"]) for a in view.alerts if a.get("ended_at")]
        starts = [float(a["started_at"]) for a in view.alerts if a.get("started_at")]
        if ends and starts:
            what += (
                f"\n:white_check_mark: Resolved {when(max(ends))} after {duration(max(ends) - min(starts))}."
            )
    blocks.append(_section(what))

    fields = [
        f"*Run*\n{esc(view.run) if view.run else '—'}",
        f"*Value*\n{_value_vs_threshold(lead)}",
        f"*Step*\n{num(lead.get('step'))}",
        f"*{'Started' if view.resolved else 'Firing since'}*\n{when(lead.get('started_at'))}",
    ]
    if len(view.alerts) > 1:
        fields.append(f"*Alerts*\n{state_counts(view.alerts)}")
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": clip(f, 1900)} for f in fields]})
    if len(view.alerts) > 1:
        blocks.append(_section(_alert_lines(view.alerts)))

    notes = []
    acked = sorted({str(a["acked_by"]) for a in view.alerts if a.get("acked_by")})
    if acked:
        notes.append(":eyes: Acknowledged by " + ", ".join(_user(u) for u in acked))
    if any(a.get("silenced") for a in view.alerts):
        notes.append(":mute: Silenced")
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
                ],
            }
        )
    return Message(text=fallback_text(view), blocks=blocks)


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
def update_message(view: GroupView) -> Message:
    """A change to the group: alerts that joined or resolved, or the whole group resolved."""
    changed = view.changed_alerts()
    if view.resolved:
        head = f":large_green_circle: *Resolved* — all {len(view.alerts)} alert(s) cleared."
        text = f"RESOLVED: {view.lead.get('alertname')}" + (f" on run {view.run}" if view.run else "")
    else:
        head = f":arrows_counterclockwise: *Update* — {state_counts(view.alerts)}."
        names = ", ".join(f"{a.get('alertname')} {a.get('state')}" for a in changed)
        text = f"Update: {names}" + (f" on run {view.run}" if view.run else "")
    return Message(text=clip(esc(text), 3000), blocks=[_section(head), _section(_alert_lines(changed))])


def repeat_message(view: GroupView) -> Message:
    """A reminder that the group is still firing."""
    firing = [a for a in view.firing if not a.get("acked_by")] or view.firing or list(view.alerts)
    run = f" on run {esc(view.run)}" if view.run else ""
    since = min((float(a["started_at"]) for a in firing if a.get("started_at")), default=None)
    head = f":repeat: *Reminder* — still firing{run}: {len(firing)} alert(s)"
    if since is not None:
        head += f", since {when(since)}"
    lead = view.lead
    text = f"Reminder: {lead.get('alertname')} still firing" + (f" on run {view.run}" if view.run else "")
    if lead.get("summary"):
        text += f" — {lead['summary']}"
    return Message(text=clip(esc(text), 3000), blocks=[_section(head + "."), _section(_alert_lines(firing))])


def metadata_for(view: GroupView) -> dict[str, Any]:
    return {"event_type": EVENT_TYPE, "event_payload": {"key": view.key, "group_key": view.group_key}}


def plot_alt_text(metric: str, series: Mapping[str, Any], run: str | None) -> str:
    where = f"{series.get('axis') or 'step'} {num(series.get('event_x'))}"
    text = f"Plot of {metric}" + (f" for run {run}" if run else "") + f" around {where}"
    if series.get("threshold") is not None:
        text += f", threshold {num(series.get('threshold'))} as a dashed red line"
    return clip(text + "; the alert is marked in orange.", 1000)
