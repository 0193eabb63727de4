"""``/herowatch status``'s answer in Block Kit: each run's verdict, step, ETA, goodput, firing alerts and
links, from one :class:`~monitor.web.snapshot.Snapshot` (the figures the dashboard shows, as of the
moment it was built, said in the answer's footer; each figure that is older says its age)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.notifiers.slack.blocks import clip, esc, link
from monitor.web.schemas import AlertOut, RunOut
from monitor.web.slack.replies import Reply
from monitor.web.snapshot import Snapshot
from monitor.web.status import epoch_of, urgency

MAX_RUNS = 15  # runs in one answer (Slack: 50 blocks); the rest are counted, with the dashboard's link
MAX_ALERTS = 8  # firing alerts listed per run
ICON = {
    "critical": ":red_circle:",
    "warning": ":large_orange_circle:",
    "unknown": ":white_circle:",
    "ok": ":large_green_circle:",
    "ended": ":checkered_flag:",
}


def _ago(snap: Snapshot, iso: str | None) -> str:
    """How long ago, to the second."""
    t = epoch_of(iso)
    return "" if t is None else format_duration(max(0.0, round(snap.now - t)), 2)


def slack_time(t: float) -> str:
    """A moment as Slack shows it: in each reader's own time zone (``<!date^...>``), UTC where it cannot."""
    fallback = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(t)}^{{date_short_pretty}} {{time_secs}}|{fallback}>"


def _href(url: str | None) -> str | None:
    """Only web links: a source's URL is not trusted to be one."""
    text = (url or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else None


def run_link(run: RunOut, base: str | None) -> str:
    """The run's title, linked to its page on the dashboard when herowatch's address is known."""
    if not base:
        return f"*{esc(run.title)}*"
    return f"*{link(base.rstrip('/') + '/runs/' + quote(run.id, safe=''), run.title)}*"


def progress(snap: Snapshot, run: RunOut) -> str:
    """Step (of the target), rate, ETA, goodput, restarts, and how old the step is."""
    bits = []
    if run.step is not None:
        step = f"step {run.step:,}" + (f" of {run.target_step:,}" if run.target_step else "")
        polled = _ago(snap, run.last_polled_at)
        bits.append(step + (f" (polled {polled} ago)" if polled else ""))
    if run.steps_per_second:
        bits.append(f"{run.steps_per_second:.3g} steps/s")
    if run.eta_seconds is not None:
        bits.append(f"ETA {format_duration(run.eta_seconds, 2)}")
    if run.goodput is not None and run.goodput.ratio is not None:
        since = _ago(snap, run.goodput.since)
        bits.append(f"goodput {run.goodput.ratio:.1%}" + (f" over {since}" if since else ""))
    if run.restarts:
        bits.append(f"{run.restarts} restart{'s' if run.restarts != 1 else ''}")
    return " · ".join(bits) or "no step yet"


def alert_line(snap: Snapshot, a: AlertOut) -> str:
    """``#12`` (what ``/herowatch ack 12`` takes), severity, rule, summary, for how long, who took it."""
    fired = _ago(snap, a.fired_at or a.active_at)
    bits = [f"`#{a.id}` {a.severity} *{esc(a.rule)}*: {esc(clip(a.summary, 200))}"]
    bits.append(f"{a.state} {fired}" if fired else a.state)
    if a.acknowledged:
        bits.append(f"acked by {esc(a.acked_by or '?')}")
    if a.silenced:
        bits.append(f"silenced (silence {a.silenced_by})")
    return " · ".join(bits)


def run_text(snap: Snapshot, run: RunOut, base: str | None, alerts: Sequence[AlertOut], detail: bool) -> str:
    lines = [f"{ICON.get(run.health, ':white_circle:')} {run_link(run, base)}: {esc(run.problem)}"]
    lines.append(progress(snap, run))
    firing = [a for a in alerts if a.state == AlertState.FIRING or detail]
    for a in firing[:MAX_ALERTS]:
        lines.append("• " + alert_line(snap, a))
    if len(firing) > MAX_ALERTS:
        lines.append(f"• and {len(firing) - MAX_ALERTS} more")
    links = []
    if (wandb := _href(run.url)) is not None:
        links.append(link(wandb, "W&B run"))
    if detail:
        links += [link(u, f"runbook: {a.rule}") for a in firing[:3] if (u := _href(a.runbook_url))]
    if links:
        lines.append(" · ".join(links))
    return clip("\n".join(lines), 2900)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _footer(snap: Snapshot, base: str | None) -> dict[str, Any]:
    words = f"as of {slack_time(snap.now)}"
    if base:
        words += " · " + link(base.rstrip("/") + "/", "herowatch dashboard")
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": words}]}


def runs_reply(snap: Snapshot, runs: Sequence[RunOut], base: str | None, heading: str) -> Reply:
    """Every run of ``runs`` (those needing on-call first), each with its firing alerts."""
    by_run: dict[str, list[AlertOut]] = {}
    for a in snap.urgent_alerts():
        by_run.setdefault(a.run, []).append(a)
    ordered = sorted(runs, key=urgency)
    texts = [run_text(snap, r, base, by_run.get(r.id, []), detail=False) for r in ordered[:MAX_RUNS]]
    bad = sum(1 for r in runs if r.health in ("critical", "warning"))
    head = f"{heading}: {len(runs)} run{'s' if len(runs) != 1 else ''}" + (
        f", {bad} need{'s' if bad == 1 else ''} attention" if bad else ", none needs attention"
    )
    if not runs:
        head = f"{heading}: no run is watched yet"
    more = len(ordered) - MAX_RUNS
    blocks = [_section(f"*{esc(head)}*"), *(_section(t) for t in texts)]
    if more > 0:
        blocks.append(_section(f"…and {more} more run{'s' if more != 1 else ''} on the dashboard"))
    blocks.append(_footer(snap, base))
    plain = "\n\n".join([head, *texts] + ([f"…and {more} more"] if more > 0 else []))
    return Reply(clip(plain, 3000), tuple(blocks))


def run_reply(snap: Snapshot, run: RunOut, base: str | None) -> Reply:
    """One run in detail: its firing and pending alerts with their ids, and its links."""
    alerts = [a for a in snap.urgent_alerts() if a.run == run.id]
    text = run_text(snap, run, base, alerts, detail=True)
    return Reply(clip(text, 3000), (_section(text), _footer(snap, base)))
