"""The tables: what herowatch needs to resume after a restart, and to show."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import NAMING, Base  # noqa: F401 (NAMING: for the migrations)
from monitor.storage.statuses import OutboxStatus
from monitor.storage.types import EpochTime


class Run(Base):
    """A watched run. ``id`` is source-qualified (``wandb:entity/project/run id``, monitor.run_ids);
    ``name`` is the run's own id at its source, ``project`` the scope that name is unique in (shown
    beside a display name that several runs share), ``kind`` what the run is (pretraining, sft, rl,
    other: configured, or inferred from the packs in force and the metrics it logs)."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_kind", "kind"),)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    watch: Mapped[str] = mapped_column(String(128))
    source: Mapped[str] = mapped_column(String(32))
    name: Mapped[str | None] = mapped_column(String(200))
    project: Mapped[str | None] = mapped_column(String(200))
    kind: Mapped[str | None] = mapped_column(String(32))
    display_name: Mapped[str | None] = mapped_column(String(300))
    url: Mapped[str | None] = mapped_column(Text)
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str | None] = mapped_column(String(32))
    last_step: Mapped[int | None] = mapped_column(BigInteger)
    last_step_at: Mapped[float | None] = mapped_column(EpochTime)  # when last_step was first seen
    last_seen_at: Mapped[float | None] = mapped_column(EpochTime)  # newest sample of any kind
    last_polled_at: Mapped[float | None] = mapped_column(EpochTime)
    source_error: Mapped[str | None] = mapped_column(Text)
    restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    first_seen_at: Mapped[float] = mapped_column(EpochTime)
    # Derived figures for the API and dashboard (rate, latest values, goodput): monitor.runs.run_stats.
    stats: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")


class SourceCursor(Base):
    __tablename__ = "source_cursors"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    source: Mapped[str] = mapped_column(String(32), primary_key=True)
    cursor: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[float] = mapped_column(EpochTime)


class Alert(Base):
    """One alert instance: from the first time its condition held until it resolved (or never fired)."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index("ix_alerts_fingerprint_state", "fingerprint", "state"),
        Index("ix_alerts_run_id", "run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    rule: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(32))
    run_id: Mapped[str] = mapped_column(String(200))
    metric: Mapped[str | None] = mapped_column(String(200))
    severity: Mapped[str] = mapped_column(String(16))
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    annotations: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(16))
    active_at: Mapped[float] = mapped_column(EpochTime)
    fired_at: Mapped[float | None] = mapped_column(EpochTime)
    resolved_at: Mapped[float | None] = mapped_column(EpochTime)
    last_true_at: Mapped[float | None] = mapped_column(EpochTime)
    # When the evidence began, as the rule reported it (``Finding.onset``): time to detect runs from here.
    onset_at: Mapped[float | None] = mapped_column(EpochTime)
    onset_step: Mapped[int | None] = mapped_column(BigInteger)
    value: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float | None] = mapped_column(Float)
    step: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[float] = mapped_column(EpochTime)
    acked_by: Mapped[str | None] = mapped_column(String(200))
    acked_at: Mapped[float | None] = mapped_column(EpochTime)
    silenced_by: Mapped[int | None] = mapped_column(Integer)  # id of the silence muting it, if any
    # Fleet members that stood out when it fired (``monitor.fleet.hints``); None: no fleet data.
    hints: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # A hang: the call its stacks found the odd ranks in (``monitor.stacks.culprit.Culprit``), for reports.
    culprit: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class AlertTransition(Base):
    """Every state change of every alert, with its reason: the incident timeline."""

    __tablename__ = "alert_transitions"
    __table_args__ = (Index("ix_alert_transitions_run_id_at", "run_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(String(200))
    at: Mapped[float] = mapped_column(EpochTime)
    from_state: Mapped[str] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    value: Mapped[float | None] = mapped_column(Float)
    step: Mapped[int | None] = mapped_column(BigInteger)


class AlertGroup(Base):
    """One episode of alerts routed to one receiver with the same group_by labels: one Slack thread,
    one set of timers. It opens with its first alert and closes once all of its alerts have resolved
    (and the resolution went out); the next alert with the same key opens a new episode, a new thread.
    ``open_key`` is the group key while open, NULL once closed: at most one open episode per key."""

    __tablename__ = "alert_groups"
    __table_args__ = (UniqueConstraint("open_key"), Index("ix_alert_groups_group_key", "group_key"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    group_key: Mapped[str] = mapped_column(String(200))
    open_key: Mapped[str | None] = mapped_column(String(200))
    receiver: Mapped[str] = mapped_column(String(128))
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    timing: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # group_wait, group_interval, ...
    root_ref: Mapped[str | None] = mapped_column(String(200))  # the receiver's id of the first message
    created_at: Mapped[float] = mapped_column(EpochTime)
    last_sent_at: Mapped[float | None] = mapped_column(EpochTime)
    closed_at: Mapped[float | None] = mapped_column(EpochTime)


class GroupMember(Base):
    """An alert in a group episode, and what its receiver was told of it."""

    __tablename__ = "alert_group_members"

    group_id: Mapped[int] = mapped_column(ForeignKey("alert_groups.id", ondelete="CASCADE"), primary_key=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"), primary_key=True)
    joined_at: Mapped[float] = mapped_column(EpochTime)
    announced_at: Mapped[float | None] = mapped_column(EpochTime)  # its firing went out in a message
    resolved_sent_at: Mapped[float | None] = mapped_column(EpochTime)  # its resolution went out


class Notification(Base):
    """The durable outbox: written with the transition that caused it, delivered by the dispatcher."""

    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("idempotency_key"),
        Index("ix_notifications_status_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    idempotency_key: Mapped[str] = mapped_column(String(200))
    alert_id: Mapped[int | None] = mapped_column(ForeignKey("alerts.id", ondelete="SET NULL"))
    group_id: Mapped[int | None] = mapped_column(
        ForeignKey("alert_groups.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(
        String(16), default="change", server_default="change"
    )  # NotificationKind
    merged_into: Mapped[int | None] = mapped_column(Integer)  # sent as part of that notification
    receiver: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default=OutboxStatus.PENDING.value)  # an OutboxStatus
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[float] = mapped_column(EpochTime)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claim_expires_at: Mapped[float | None] = mapped_column(EpochTime)
    sent_at: Mapped[float | None] = mapped_column(EpochTime)
    external_ref: Mapped[str | None] = mapped_column(String(200))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(EpochTime)


class RuleState(Base):
    """A run's detector snapshot (``Evaluator.export_state``, zlib-compressed JSON): a restarted or
    taking-over replica resumes every rule from it instead of warming up again."""

    __tablename__ = "rule_state"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    saved_at: Mapped[float] = mapped_column(EpochTime)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Silence(Base):
    __tablename__ = "silences"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    matchers: Mapped[dict[str, Any]] = mapped_column(JSON)  # {"matchers": ["run=hero-1", ...]}
    starts_at: Mapped[float] = mapped_column(EpochTime)
    ends_at: Mapped[float] = mapped_column(EpochTime)
    created_by: Mapped[str] = mapped_column(String(200))
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(EpochTime)


class SeriesMeta(Base):
    """Per run and metric: the current bucket width of its bounded, min/max-preserving series."""

    __tablename__ = "series_meta"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    axis: Mapped[str] = mapped_column(String(8), default="step")  # step | time
    width: Mapped[float] = mapped_column(Float, default=1.0)
    buckets: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    points: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class SeriesBucket(Base):
    """One bucket: every point with x in [x0, x0 + width) folded into min, max, sum, count and last."""

    __tablename__ = "series_buckets"

    run_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    x0: Mapped[float] = mapped_column(Float, primary_key=True)
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    sum: Mapped[float] = mapped_column(Float, default=0.0)
    count: Mapped[int] = mapped_column(Integer, default=0)
    nonfinite: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last: Mapped[float | None] = mapped_column(Float)
    t_last: Mapped[float | None] = mapped_column(EpochTime)


class FleetRaster(Base):
    """Per run and fleet metric: its members (row order of the raster) and the layout of its columns
    (``monitor.storage.raster``): fine columns of ``step`` seconds for the recent past, coarse ones of
    ``width`` seconds before that."""

    __tablename__ = "fleet_rasters"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    label: Mapped[str] = mapped_column(String(200))
    unit: Mapped[str] = mapped_column(String(32), default="")
    device_word: Mapped[str | None] = mapped_column(String(32))  # "GPU"; None: the members are hosts
    members: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [[host, device or null], ...]
    step: Mapped[float] = mapped_column(Float)  # width of a fine column, seconds
    width: Mapped[float] = mapped_column(Float)  # width of a coarse column, seconds (doubles as needed)
    fine: Mapped[int] = mapped_column(Integer, default=0)  # fine columns stored
    coarse: Mapped[int] = mapped_column(Integer, default=0)  # coarse columns stored
    newest: Mapped[float | None] = mapped_column(Float)  # epoch seconds of the newest value
    level: Mapped[float] = mapped_column(Float, default=0.0)  # the metric's magnitude so far (score floor)


class FleetColumn(Base):
    """One time column of a raster: every member's min, max, mean and count, packed (``raster.Cells``)."""

    __tablename__ = "fleet_columns"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    tier: Mapped[int] = mapped_column(Integer, primary_key=True)  # 0: fine, 1: coarse
    x0: Mapped[float] = mapped_column(Float, primary_key=True)  # epoch seconds
    width: Mapped[float] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)  # members packed in ``data``
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Lease(Base):
    """Who does a piece of work (polling one watch, the reminders, the heartbeat) until when.

    Replicas sharing a PostgreSQL database take leases; a replica that dies stops renewing and another
    takes the work over once the lease expires.
    """

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    expires_at: Mapped[float] = mapped_column(EpochTime)
    acquired_at: Mapped[float] = mapped_column(EpochTime)


class SlackDelivery(Base):
    """A request from Slack that herowatch acted on (a button click, a ``/herowatch`` command) over
    Socket Mode, by its identity: Slack's ``trigger_id`` for the person's action (else the envelope
    id). The replica that acts claims the row in the same transaction as the action, so a re-delivered
    envelope, or the same action reaching another replica's connection, finds it and is answered with
    the stored reply instead of acting twice (monitor/web/slack/socket_mode.py). Kept for a day."""

    __tablename__ = "slack_deliveries"
    __table_args__ = (UniqueConstraint("key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200))  # "trigger:<trigger id>" or "envelope:<envelope id>"
    envelope_id: Mapped[str] = mapped_column(String(200))  # the first envelope that carried it
    kind: Mapped[str] = mapped_column(String(32))  # the envelope type: slash_commands, interactive
    actor: Mapped[str] = mapped_column(String(200))  # who asked: "amy (Slack U0AMY)"
    received_at: Mapped[float] = mapped_column(EpochTime, index=True)
    handled_by: Mapped[str] = mapped_column(String(200))  # the replica, host:pid
    reply: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # what the person was answered


class LoginSession(Base):
    """A dashboard sign-in, kept here so that logging out, a changed API token or an expiry ends it
    everywhere at once (every replica reads the same rows).

    ``id`` is the SHA-256 of the random value in the browser's cookie: the table alone cannot be used to
    sign in. ``subject`` is who the session acts as (acks and silences carry it), ``method`` how they
    proved it (``token``: the API token, and the name typed at the login form; later sign-in methods add
    theirs), ``key_id`` which API token it was started under (a session of another token is no session).
    """

    __tablename__ = "login_sessions"
    __table_args__ = (Index("ix_login_sessions_expires_at", "expires_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    subject: Mapped[str] = mapped_column(String(200))
    method: Mapped[str] = mapped_column(String(32))
    key_id: Mapped[str] = mapped_column(String(32))
    role: Mapped[str] = mapped_column(String(16), server_default="automation")  # monitor.delivery.actor.Role
    created_at: Mapped[float] = mapped_column(EpochTime)
    expires_at: Mapped[float] = mapped_column(EpochTime)
    revoked_at: Mapped[float | None] = mapped_column(EpochTime)


class GoodputSlot(Base):
    """A run's wall time in one quarter hour (``monitor.runs.goodput_ledger``): seconds per bucket."""

    __tablename__ = "goodput_slots"
    __table_args__ = (Index("ix_goodput_slots_slot", "slot"),)

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    slot: Mapped[float] = mapped_column(Float, primary_key=True)  # epoch seconds, a multiple of 900
    bucket: Mapped[str] = mapped_column(String(16), primary_key=True)  # productive, paused, stalled, ...
    seconds: Mapped[float] = mapped_column(Float, default=0.0)


class GoodputEvent(Base):
    """A goodput incident (stall, restart, down, startup) or pause of a run, once it ended."""

    __tablename__ = "goodput_events"
    __table_args__ = (Index("ix_goodput_events_run_start", "run_id", "start"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    start: Mapped[float] = mapped_column(Float)  # epoch seconds
    end: Mapped[float] = mapped_column(Float)
    seconds_lost: Mapped[float] = mapped_column(Float)
    step: Mapped[int | None] = mapped_column(BigInteger)  # the step it ended with (a restart: resumed at)
    before_step: Mapped[int | None] = mapped_column(BigInteger)  # the last step before it began
    steps_redone: Mapped[int] = mapped_column(Integer, default=0)


class ReportSent(Base):
    """A scheduled report's period, claimed by the replica that sends it (``monitor.reports.schedule``):
    one row per schedule and period, so every period goes out once across replicas and restarts."""

    __tablename__ = "reports_sent"

    schedule: Mapped[str] = mapped_column(String(200), primary_key=True)
    period_start: Mapped[float] = mapped_column(Float, primary_key=True)  # epoch seconds
    claimed_by: Mapped[str] = mapped_column(String(200))
    claimed_at: Mapped[float] = mapped_column(Float)
    sent_at: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)


# the audit trail and personal API tokens, and the stack captures, live in their own modules, registered
# on the same Base
from monitor.storage.attempt_models import SupersededBucket  # noqa: E402, F401
from monitor.storage.people_models import ApiToken, AuditEvent  # noqa: E402, F401
from monitor.storage.stack_models import StackCapture, StackDump  # noqa: E402, F401
