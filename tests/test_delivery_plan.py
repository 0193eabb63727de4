"""What a group's message tells, or why it tells nothing: ``plan`` over pure inputs, no database.

Each row of the table is a group (its members: each alert's state, whether it was announced, whether
its resolution was told, whether it is acknowledged or muted) and its due rows' kinds; the expected
answer is the message kind with the alerts it tells of, or the named reason for dropping it.
"""

from __future__ import annotations

import pytest

from alerts.model import AlertState
from monitor.delivery.plan import DropReason, Plan, plan
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification
from monitor.storage.statuses import NotificationKind as NK

F, R, P = AlertState.FIRING, AlertState.RESOLVED, AlertState.PENDING
T = 1_700_000_000.0


def member(i: int, state: AlertState, announced=False, resolved_told=False, acked=False, muted=False):
    alert = Alert(id=i, state=state.value, acked_at=T if acked else None, labels={"alertname": f"a{i}"})
    m = GroupMember(group_id=1, alert_id=i, announced_at=T if announced else None)
    m.resolved_sent_at = T if resolved_told else None
    return alert, m, muted


def run_plan(members, kinds=(NK.CHANGE,), ack_of=None, send_resolved=True, root=None):
    group = AlertGroup(id=1, timing={"send_resolved": send_resolved}, root_ref=root)
    rows = [Notification(kind=k.value, alert_id=ack_of if k == NK.ACK else None) for k in kinds]
    pairs = [(a, m) for a, m, _ in members]
    muted = {a.id: "silenced by silence 1" for a, _, mu in members if mu}
    return plan(group, rows, pairs, muted)


CASES = [
    # (what, members, rows, options, expected: (kind, told ids) or a DropReason)
    ("a new alert opens the episode", [member(1, F)], (NK.CHANGE,), {}, ("open", [1])),
    (
        "a second alert notifies",
        [member(1, F, announced=True), member(2, F)],
        (NK.CHANGE,),
        {"root": "ts"},
        ("notify", [2]),
    ),
    (
        "a told alert's resolution updates",
        [member(1, R, announced=True)],
        (NK.CHANGE,),
        {"root": "ts"},
        ("update", [1]),
    ),
    ("a muted new alert: muted", [member(1, F, muted=True)], (NK.CHANGE,), {}, DropReason.MUTED),
    (
        "resolved before anyone was told: never announced",
        [member(1, R)],
        (NK.CHANGE,),
        {},
        DropReason.NEVER_ANNOUNCED,
    ),
    (
        "muted and never announced are told apart: muted wins",
        [member(1, R), member(2, F, muted=True)],
        (NK.CHANGE,),
        {},
        DropReason.MUTED,
    ),
    (
        "a resolution told once",
        [member(1, R, announced=True, resolved_told=True)],
        (NK.CHANGE,),
        {},
        DropReason.ALREADY_TOLD,
    ),
    (
        "resolutions off",
        [member(1, R, announced=True)],
        (NK.CHANGE,),
        {"send_resolved": False},
        DropReason.RESOLUTIONS_OFF,
    ),
    (
        "an announced alert again: already told",
        [member(1, F, announced=True)],
        (NK.CHANGE,),
        {"root": "ts"},
        DropReason.ALREADY_TOLD,
    ),
    (
        "an acknowledgement of a told alert updates",
        [member(1, F, announced=True, acked=True)],
        (NK.ACK,),
        {"ack_of": 1, "root": "ts"},
        ("update", [1]),
    ),
    (
        "a reminder of what still fires",
        [member(1, F, announced=True), member(2, R, announced=True)],
        (NK.REPEAT,),
        {"root": "ts"},
        ("repeat", [1]),
    ),
    (
        "no reminder of what someone took",
        [member(1, F, announced=True, acked=True)],
        (NK.REPEAT,),
        {},
        DropReason.ACKNOWLEDGED,
    ),
    (
        "no reminder once all resolved",
        [member(1, R, announced=True, resolved_told=True)],
        (NK.REPEAT,),
        {},
        DropReason.NOTHING_FIRING,
    ),
    (
        "a refresh re-tells the acknowledged too",
        [member(1, F, announced=True, acked=True)],
        (NK.REFRESH,),
        {"root": "ts"},
        ("refresh", [1]),
    ),
    (
        "a refresh of a muted alert: muted",
        [member(1, F, announced=True, muted=True)],
        (NK.REFRESH,),
        {},
        DropReason.MUTED,
    ),
    (
        "news with a reminder is news",
        [member(1, F, announced=True), member(2, F)],
        (NK.REPEAT, NK.CHANGE),
        {"root": "ts"},
        ("notify", [2]),
    ),
    ("a pending member is nothing to tell", [member(1, P)], (NK.CHANGE,), {}, DropReason.NOTHING_FIRING),
    ("an empty group", [], (NK.CHANGE,), {}, DropReason.NO_ALERTS),
]


@pytest.mark.parametrize(
    ("what", "members", "kinds", "options", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_plan(what, members, kinds, options, expected):
    got = run_plan(members, kinds, **options)
    if isinstance(expected, DropReason):
        assert got is expected
        assert got.text == f"nothing to tell: {expected.value}"
    else:
        assert isinstance(got, Plan)
        assert (got.kind, [a.id for a, _ in got.told]) == expected


def test_a_message_shows_the_announced_and_the_told_never_the_muted_news():
    got = run_plan(
        [member(1, F, announced=True), member(2, F), member(3, F, muted=True), member(4, P)], root="ts"
    )
    assert isinstance(got, Plan)
    assert [a.id for a in got.shown] == [1, 2]
    assert [a.id for a in got.new] == [2]
