"""What a notifier is given: a typed view of one alert group at one moment, built once by the
notification pipeline and rendered by each notifier in its own way (Block Kit, JSON, text).

- ``AlertView``: one alert instance as on-call should read it, with its culprit ``hints``: the members
  of the run's fleet (a GPU, a host) that stood out when it fired (``Hint``), or one hint saying that
  none did.
- ``Plot``: what to draw for the lead alert, and what the picture means (``caption``).
- ``GroupView``: the group's alerts, which of them this notification is about (``changed``), and what
  kind of message it is:

  - ``open``: the first message of a group episode: a new top-level message (it notifies);
  - ``notify``: a new alert (or a more severe one) joined a group that already has a message: the root
    is updated and the news goes into the thread as a reply also shown in the channel (it notifies);
  - ``update``: what was announced changed state (resolved, acknowledged): the root is edited and a
    quiet thread reply says what changed (it does not notify);
  - ``repeat``: a reminder that the group still fires (shown in the channel: it notifies);
  - ``refresh``: the group's firing alerts told again, for a receiver that forgets what it is not
    re-told (Alertmanager; see ``Notifier.refresh_every``): nothing changed, it does not notify;
  - ``single``: a notification outside any group (the watchdog's heartbeat).

One rule picks the alert a message leads with (``lead``): firing before resolved, then the most
severe (``Severity.rank``), then the oldest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from alerts.model import AlertState, Severity

Kind = Literal["open", "notify", "update", "repeat", "refresh", "single"]
NOTIFYING: frozenset[str] = frozenset({"open", "notify", "repeat", "single"})


def json_number(x: float | None) -> float | None:
    """``x`` as JSON can carry it: a NaN or infinite value (a NaN loss) becomes null, which every JSON
    parser reads, where ``NaN`` would make the whole document unsendable."""
    return x if x is None or math.isfinite(x) else None


@dataclass(frozen=True)
class Hint:
    """A fleet member that stood out when the alert fired ("node-17 GPU 3: SM active 0.02, fleet median
    0.97"), or, with ``member`` None, the verdict that none did. ``text`` is the sentence to show."""

    text: str
    member: str | None = None
    metric: str | None = None
    value: float | None = None
    median: float | None = None
    score: float | None = None  # robust sigmas from the fleet median

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Hint:
        def number(key: str) -> float | None:
            v = d.get(key)
            return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        member, metric = d.get("member"), d.get("metric")
        return cls(
            text=str(d.get("text") or ""),
            member=str(member) if member else None,
            metric=str(metric) if metric else None,
            value=number("value"),
            median=number("median"),
            score=number("score"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "member": self.member,
            "metric": self.metric,
            "value": json_number(self.value),
            "median": json_number(self.median),
            "score": json_number(self.score),
        }


@dataclass(frozen=True)
class StackGroupView:
    """Processes of a job that are in the same place: how many, which (``who``: "rank 417 on node-17"),
    the call they are in (``where``) and their innermost frames (``frames``). ``odd``: a minority the
    majority waits for."""

    count: int
    who: str
    where: str
    frames: tuple[str, ...] = ()
    odd: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "who": self.who,
            "where": self.where,
            "frames": list(self.frames),
            "odd": self.odd,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackGroupView:
        return cls(
            count=int(d.get("count") or 0),
            who=str(d.get("who") or ""),
            where=str(d.get("where") or ""),
            frames=tuple(str(f) for f in d.get("frames") or ()),
            odd=bool(d.get("odd")),
        )


@dataclass(frozen=True)
class StackView:
    """Why a job hangs, from its processes' stacks: one sentence (``summary``: who waits, where the odd
    ones are, since when, how old the stacks are, what could not be read) and the groups, the majority
    first, then the odd ones."""

    summary: str
    groups: tuple[StackGroupView, ...] = ()
    captured_at: float | None = None
    url: str = ""

    @property
    def odd(self) -> list[StackGroupView]:
        return [g for g in self.groups if g.odd]

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "groups": [g.to_dict() for g in self.groups],
            "captured_at": self.captured_at,
            "url": self.url,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackView:
        return cls(
            summary=str(d.get("summary") or ""),
            groups=tuple(
                StackGroupView.from_dict(g) for g in d.get("groups") or () if isinstance(g, Mapping)
            ),
            captured_at=d.get("captured_at"),
            url=str(d.get("url") or ""),
        )


@dataclass(frozen=True)
class AlertView:
    id: str
    alertname: str
    severity: Severity
    state: AlertState
    labels: Mapping[str, str]
    summary: str
    started_at: float
    description: str = ""
    runbook_url: str = ""
    value: float | None = None
    threshold: float | None = None
    step: int | None = None
    metric: str | None = None
    ended_at: float | None = None
    acked_by: str | None = None
    silenced: str | None = None  # why it is muted, if it is
    holds_for: float | None = None  # a heartbeat: seconds it holds unless beaten again (its next beat is due)
    hints: tuple[Hint, ...] = ()
    hints_window: float | None = None  # seconds the members were compared over
    run_title: str | None = None  # what people call the run (its display name, with its project if shared)
    resolved_reason: str = ""  # a resolved alert: why it ended, true now (``summary`` is what it fired with)
    stacks: StackView | None = None  # a hang: where the job's processes are (the odd ranks named)

    @property
    def said_now(self) -> str:
        """The alert's text as of now: a resolved one says why it ended, and what it was as past."""
        if self.state != AlertState.RESOLVED:
            return self.summary
        return f"{self.resolved_reason or 'resolved'}; was: {self.summary}"

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", AlertState(self.state))  # built from a plain string too

    @property
    def run(self) -> str | None:
        return self.labels.get("run")

    @property
    def run_shown(self) -> str | None:
        """The run as people read it: its title, else its id (the ``run`` label)."""
        return self.run_title or self.run

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "alertname": self.alertname,
            "severity": self.severity.value,
            "state": self.state.value,
            "labels": dict(self.labels),
            "summary": self.summary,
            "resolved_reason": self.resolved_reason,
            "description": self.description,
            "runbook_url": self.runbook_url,
            "value": json_number(self.value),
            "threshold": json_number(self.threshold),
            "step": self.step,
            "metric": self.metric,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "acked_by": self.acked_by,
            "silenced": self.silenced,
            "holds_for": self.holds_for,
            "hints": [h.to_dict() for h in self.hints],
            "hints_window": self.hints_window,
            "run_title": self.run_title,
            "stacks": None if self.stacks is None else self.stacks.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AlertView:
        return cls(
            id=str(d.get("id", "")),
            alertname=str(d["alertname"]),
            severity=Severity(d.get("severity", "warning")),
            state=AlertState(d.get("state", "firing")),
            labels={str(k): str(v) for k, v in (d.get("labels") or {}).items()},
            summary=str(d.get("summary") or d["alertname"]),
            started_at=float(d["started_at"]),
            description=str(d.get("description") or ""),
            runbook_url=str(d.get("runbook_url") or ""),
            value=d.get("value"),
            threshold=d.get("threshold"),
            step=d.get("step"),
            metric=d.get("metric"),
            ended_at=d.get("ended_at"),
            acked_by=d.get("acked_by"),
            silenced=d.get("silenced"),
            holds_for=d.get("holds_for"),
            hints=tuple(Hint.from_dict(h) for h in d.get("hints") or () if isinstance(h, Mapping)),
            hints_window=d.get("hints_window"),
            run_title=d.get("run_title"),
            stacks=StackView.from_dict(d["stacks"]) if isinstance(d.get("stacks"), Mapping) else None,
        )


@dataclass(frozen=True)
class Plot:
    """A picture for the lead alert. ``kind``: ``metric`` (the metric around the event, by step or
    time, with the threshold as a line) or ``progress`` (the step reached against time, the stall
    shaded from ``shade[0]`` to ``shade[1]``, the limit drawn as a time span from the last step)."""

    kind: Literal["metric", "progress"]
    title: str
    caption: str  # what the picture shows, in words (alt text, and said in the message)
    x: Sequence[float]
    y: Sequence[float]
    y_min: Sequence[float] = ()
    axis: Literal["step", "time"] = "step"
    y_label: str = ""
    event_x: float | None = None
    threshold: float | None = None
    shade: tuple[float, float] | None = None
    limit: float | None = None  # seconds (progress plots)


@dataclass(frozen=True)
class GroupView:
    key: str  # the notification's idempotency key
    receiver: str
    kind: Kind
    group_key: str
    group_labels: Mapping[str, str]
    alerts: Sequence[AlertView]
    changed: frozenset[str] = frozenset()  # ids of the alerts this notification reports
    root_ref: str | None = None  # the receiver's reference of the group's first message
    links: Mapping[str, str] = field(default_factory=dict)  # wandb_url, dashboard_url
    actions: bool = True  # show Acknowledge / Silence buttons
    plot: Plot | None = None
    episode: int | None = None  # which episode of the group (a new one opens after all resolved)

    @classmethod
    def single(cls, key: str, receiver: str, alert: AlertView) -> GroupView:
        return cls(key, receiver, "single", key, {}, (alert,), frozenset({alert.id}), actions=False)

    @property
    def notifies(self) -> bool:
        """Does this message notify people (a top-level message or a reply shown in the channel)?"""
        return self.kind in NOTIFYING

    @property
    def firing(self) -> list[AlertView]:
        return [a for a in self.alerts if a.state == AlertState.FIRING]

    @property
    def resolved(self) -> bool:
        return all(a.state == AlertState.RESOLVED for a in self.alerts)

    @property
    def status(self) -> str:
        return "resolved" if self.resolved else "firing"

    @property
    def changed_alerts(self) -> list[AlertView]:
        return [a for a in self.alerts if a.id in self.changed] or list(self.alerts)

    @property
    def lead(self) -> AlertView:
        """The alert the whole group's message leads with."""
        return lead_of(self.alerts)

    @property
    def news(self) -> AlertView:
        """The alert this notification is about (a resolution names the alert that resolved)."""
        return lead_of(self.changed_alerts)

    @property
    def run(self) -> str | None:
        return self.group_labels.get("run") or self.lead.run

    @property
    def run_title(self) -> str | None:
        """The group's run as people read it: its display name (with its project where that name is
        shared), else its id."""
        run = self.run
        if not run:
            return None
        titled = next((a.run_title for a in self.alerts if a.run == run and a.run_title), None)
        return titled or run

    @property
    def where(self) -> str:
        """What the group is about, in words: "run hero-1" (its display name, "run qwen-7b-v3 (acme/sft)"
        when another run has that name too), or "watch pretrain" for herowatch's own alerts about a whole
        watch (a source it cannot read)."""
        if not self.run:
            return ""
        return f"{'watch' if self.lead.labels.get('scope') == 'watch' else 'run'} {self.run_title}"

    def alert_ids(self) -> list[str]:
        return [a.id for a in self.alerts if a.id]


def lead_of(alerts: Sequence[AlertView]) -> AlertView:
    """Firing before resolved, then the most severe, then the oldest."""
    return min(alerts, key=lambda a: (a.state != AlertState.FIRING, a.severity.rank, a.started_at))
