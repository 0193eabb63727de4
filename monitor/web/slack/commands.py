"""``/herowatch``, from either door (the HTTP endpoint or Socket Mode): the request the text asks for
(``grammar``), done in the caller's transaction through ``monitor.delivery.oncall`` and named after the
Slack user who typed it, and the answer only they see. Besides the caller's transaction it reads
only its port, ``CommandPorts``: the status and the week's report, built on that transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.orm import Session

from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.notifiers.slack.interactions import SlashCommand
from monitor import run_ids
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from monitor.storage import stacks_repo, views
from monitor.storage.models import Run
from monitor.web.context import ApiContext
from monitor.web.slack import grammar
from monitor.web.slack.replies import Reply
from monitor.web.slack.report import weekly_report
from monitor.web.slack.status_blocks import run_reply, runs_reply, slack_time
from monitor.web.snapshot import Snapshot, build
from monitor.web.stacks_view import capture_now, stacks_of

# Ask a run's connected wrappers for their stacks (the run's id, who asks): the capture and the nodes.
Capture = Callable[[Session, str, Actor], tuple[str, list[str]]]

log = logging.getLogger(__name__)
COMMENT = f"from Slack ({grammar.COMMAND})"


@dataclass(frozen=True)
class CommandPorts:
    """What ``/herowatch`` reads besides the database rows it acts on."""

    snapshot: Callable[[Session], Snapshot]  # every run's status now (``status``)
    weekly_report: Callable[[Session], Reply]  # the last 7 days' report, in brief (``report``)
    external_url: str | None  # where people reach the dashboard (links)
    capture: Capture | None = None  # ``stacks``: None where no engine runs (no wrapper polls here)

    @classmethod
    def of(cls, ctx: ApiContext) -> CommandPorts:
        """The ports over the web side's context (both Slack doors)."""
        return cls(
            lambda s: build(ctx, s, 0),
            lambda s: weekly_report(ctx, s),
            ctx.external_url,
            lambda s, run_id, actor: capture_now(ctx, s, run_id, actor),
        )


class _NoRun(Exception):
    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.text)
        self.reply = reply


def answer(ports: CommandPorts, s: Session, cmd: SlashCommand, now: float) -> Reply:
    request = grammar.parse(cmd.text)
    try:
        reply = _run(ports, s, request, Actor.slack_user(cmd.actor), now)
    except _NoRun as exc:
        reply = exc.reply
    except oncall.ActionError as exc:
        reply = Reply(f"Nothing changed: {exc.message}")
    log.info("slack %s %s by %s: %s", cmd.command, cmd.text[:200], cmd.actor, reply.text[:200])
    return reply


def _run(ports: CommandPorts, s: Session, request: grammar.Request, actor: Actor, now: float) -> Reply:
    match request:
        case grammar.Help(problem=None):
            return Reply(grammar.USAGE)
        case grammar.Help(problem=problem):
            return Reply(f"{problem}.\n\n{grammar.USAGE}")
        case grammar.Status(run=None):
            snap = ports.snapshot(s)
            return runs_reply(snap, snap.runs, ports.external_url, "herowatch")
        case grammar.Status(run=key):
            snap = ports.snapshot(s)
            run = _one_run(s, key)
            shown = next((r for r in snap.runs if r.id == run.id), None)
            return run_reply(snap, shown, ports.external_url) if shown else Reply(f"No status for {key} yet.")
        case grammar.Ack(alert_id=int(alert_id)):
            return _ack_alert(s, alert_id, actor, now)
        case grammar.Ack(run=str(key)):
            return _ack_run(s, _one_run(s, key), actor, now)
        case grammar.Silence(run=key, seconds=seconds, reason=reason):
            return _silence(s, _one_run(s, key), seconds, reason, actor, now)
        case grammar.Stacks(run=key):
            return ask_stacks(ports, s, _one_run(s, key), actor, now)
        case grammar.Report():
            return ports.weekly_report(s)
    raise AssertionError(f"unhandled request {request!r}")


def _title(run: Run) -> str:
    return run_ids.title(run.display_name, run.name or run.id, run.project, False)


def _one_run(s: Session, key: str) -> Run:
    """The run ``key`` names (its id, display name or id at its source), or an answer saying why not."""
    found = views.lookup_runs(s, key)
    if not found:
        raise _NoRun(Reply(f"No run is called `{key[:100]}`. `{grammar.COMMAND} status` lists the runs."))
    if len(found) > 1:
        ids = ", ".join(f"`{r.id}`" for r in found[:10])
        raise _NoRun(Reply(f"{len(found)} runs are called `{key[:100]}`: {ids}. Name one by its id."))
    return found[0]


def _ack_alert(s: Session, alert_id: int, actor: Actor, now: float) -> Reply:
    alert = oncall.ack_alert(s, alert_id, actor, COMMENT, now)
    run = s.get(Run, alert.run_id)
    where = f"{alert.rule} on {_title(run) if run else alert.run_id}"
    if alert.acked_by != actor.name:
        return Reply(f"Alert #{alert_id} ({where}) was already acknowledged by {alert.acked_by}.")
    return Reply(
        f"Acknowledged alert #{alert_id} ({where}) as {actor.name}: "
        "no reminders until it resolves or fires again."
    )


def _ack_run(s: Session, run: Run, actor: Actor, now: float) -> Reply:
    done = oncall.ack_run(s, run.id, actor, COMMENT, now)
    title = _title(run)
    if not done:
        taken = {
            a.acked_by for a in views.active_alerts(s, run.id) if a.state == AlertState.FIRING and a.acked_by
        }
        if taken:
            return Reply(
                f"Every alert firing on {title} is already acknowledged (by {', '.join(sorted(taken))})."
            )
        return Reply(f"Nothing to acknowledge: no alert is firing on {title}.")
    names = ", ".join(f"#{a.id} {a.rule}" for a in done[:10]) + (" …" if len(done) > 10 else "")
    plural = "s" if len(done) != 1 else ""
    return Reply(
        f"Acknowledged {len(done)} alert{plural} on {title} as {actor.name} ({names}): "
        "no reminders until they resolve or fire again."
    )


def _silence(s: Session, run: Run, seconds: float, reason: str, actor: Actor, now: float) -> Reply:
    row = oncall.create_silence(
        s, [f'run="{run.id}"'], actor=actor, comment=reason, now=now, duration=seconds
    )
    firing = sum(1 for a in views.active_alerts(s, run.id) if a.state == AlertState.FIRING)
    muted = f"; it mutes the {firing} alert{'s' if firing != 1 else ''} firing now" if firing else ""
    return Reply(
        f"Silenced {_title(run)} for {format_duration(seconds)} (until {slack_time(row.ends_at)}) as "
        f"{actor.name}: {reason}{muted}. Silence {row.id}: `herowatch silence expire {row.id}` ends it, "
        "or the dashboard's Silences page."
    )


def ask_stacks(
    ports: CommandPorts,
    s: Session,
    run: Run,
    actor: Actor,
    now: float,
    thread: tuple[str, str] | None = None,
) -> Reply:
    """Capture now (audited in ``capture_stacks``, refusals too); say where the answer will be, and what
    the previous capture said. ``thread``: (receiver, "channel:ts") of the alert message a "Capture
    stacks" click came from: the answer is posted there too, once the nodes answered
    (``monitor.delivery.stacks_settle``)."""
    if ports.capture is None:
        raise oncall.ActionError(409, "this herowatch runs no engine: no wrapper polls it")
    before = stacks_of(s, run.id, now)
    capture, nodes = ports.capture(s, run.id, actor)
    if thread is not None:
        stacks_repo.reply_in(s, run.id, capture, *thread)
    base = (ports.external_url or "").rstrip("/")
    where = f"{base}/runs/{quote(run.id, safe='')}#stacks" if base else None
    page = f"<{where}|its run page>" if where else "its run page"
    told = "in this thread" if thread is not None else f"on {page} and in `herowatch stacks {run.id}`"
    said = (
        f"Asked {len(nodes)} node{'s' if len(nodes) != 1 else ''} of {_title(run)} for their stacks as "
        f"{actor.name} ({', '.join(nodes[:8])}{' …' if len(nodes) > 8 else ''}): the ranks grouped by "
        f"where they are, {told} once they answer."
    )
    report = (before or {}).get("report")
    if report is not None:
        said += f"\nThe previous capture ({before['reason']}): {report['summary']}"
    return Reply(said)
