"""Roles from groups and what each role may do, as tables over pure inputs; the audit trail's filters and
who may read it, through the API on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from monitor.delivery.actor import Actor, Door, Need, Role, Via
from monitor.settings import Settings
from monitor.web.identity import RefusalBudget, role_of_groups
from tests.dashboard.support import bearer, build, client
from tests.helpers import tick

TABLE = "admin=hw-admins;responder=oncall,ml-sre;viewer=staff"


@pytest.mark.parametrize(
    ("groups", "role"),
    [
        ({"staff"}, Role.viewer),
        ({"staff", "oncall"}, Role.responder),  # the highest of one's groups
        ({"ml-sre"}, Role.responder),
        ({"oncall", "hw-admins"}, Role.admin),
        ({"contractors"}, None),  # no group with a role: no role at all
        (set(), None),
    ],
)
def test_groups_to_roles(groups, role) -> None:
    assert role_of_groups(Settings(database_url="sqlite://", role_groups=TABLE), groups) == role


def test_a_star_gives_anyone_signed_in_a_role() -> None:
    settings = Settings(database_url="sqlite://", role_groups="responder=oncall;viewer=*")
    assert role_of_groups(settings, set()) == Role.viewer
    assert role_of_groups(settings, {"oncall"}) == Role.responder


@pytest.mark.parametrize(
    ("role", "read", "respond", "admin"),
    [
        (Role.viewer, True, False, False),
        (Role.responder, True, True, False),
        (Role.admin, True, True, True),
        (Role.automation, True, True, False),
    ],
)
def test_what_each_role_may_do(role, read, respond, admin) -> None:
    actor = Actor(name="x", role=role, door=Door.api, via=Via.proxy)
    assert (actor.may(Need.read), actor.may(Need.respond), actor.may(Need.admin)) == (read, respond, admin)


def test_the_automation_token_is_named_as_such() -> None:
    assert Actor.automation(Door.api).name == "automation"
    assert Actor.automation(Door.cli, "nightly").name == "automation (nightly)"
    person = Actor(name="amy", role=Role.responder, door=Door.api, via=Via.personal)
    assert person.saying("somebody else") is person, "a person is who they signed in as"


def test_refusals_recorded_are_bounded_per_client_and_overall() -> None:
    budget = RefusalBudget(per_client=3, overall=5, window=600)
    assert [budget.take("a", 0) for _ in range(4)] == [True, True, True, False]
    assert [budget.take(f"b{i}", 1) for i in range(3)] == [True, True, False]  # 5 in all
    assert budget.take("a", 601), "after the window it records again"
    assert budget.dropped == 2


def test_the_audit_trail_filters_and_names_people(db_url, clock) -> None:
    service = build(db_url, clock)
    api = client(service)
    tick(service, clock, 30 * 60)  # hero-a stalled: its alert fires
    (alert,) = [
        a for a in api.get("/api/alerts", params={"state": "firing"}).json() if a["run_title"] == "hero-a"
    ]
    acked = api.post(f"/api/alerts/{alert['id']}/ack", json={"by": "ci-bot"}, headers=bearer())
    assert acked.status_code == 200 and acked.json()["acked_by"] == "automation (ci-bot)"
    made = api.post("/api/silences", json={"matchers": ["run=hero-b"], "duration": "1h"}, headers=bearer())
    assert made.status_code == 201, made.text
    assert api.get("/api/audit").status_code == 401, "it names people: never open, even with reads open"
    trail = api.get("/api/audit", headers=bearer()).json()
    assert [(e["action"], e["actor"], e["door"]) for e in trail][:2] == [
        ("silence_create", "automation", "api"),
        ("ack", "automation (ci-bot)", "api"),
    ]
    hero_a = api.get("/api/audit", params={"run": "hero-a"}, headers=bearer()).json()
    assert [e["action"] for e in hero_a] == ["ack"] and hero_a[0]["target"] == f"alert {alert['id']}"
    assert [
        e["action"] for e in api.get("/api/audit", params={"run": "hero-b"}, headers=bearer()).json()
    ] == ["silence_create"]
    later = api.get("/api/audit", params={"since": "2100-01-01T00:00:00Z"}, headers=bearer()).json()
    assert later == []
    assert api.get("/api/audit", params={"since": "soon"}, headers=bearer()).status_code == 422
    assert api.get("/api/audit", params={"action": "nope"}, headers=bearer()).status_code == 422
    service.stop()


def test_a_changed_api_token_ends_token_logins_but_not_peoples_sessions(db_url, clock) -> None:
    """With HEROWATCH_SECRET_KEY signing the cookies, rotating the shared token (it leaked) still ends
    every session started with it; people's OpenID Connect sessions go on."""
    from dataclasses import replace

    from sqlalchemy import select

    from monitor.storage.models import LoginSession
    from monitor.web.auth import end_other_tokens_sessions, start_session

    service = build(db_url, clock)
    key = "people-secret-key-0123456789abcdefghijkl"
    before = Settings(database_url=db_url, api_token="a" * 40, secret_key=key)
    ctx = replace(service.api_context(), settings=before)
    start_session(ctx, "alice")  # the token login
    start_session(ctx, "amy", method="oidc", role="responder")
    assert end_other_tokens_sessions(ctx) == 0, "a restart with the same settings ends nothing"
    rotated = replace(ctx, settings=Settings(database_url=db_url, api_token="b" * 40, secret_key=key))
    assert end_other_tokens_sessions(rotated) == 1
    with service.sessions() as s:
        ended = {r.subject: r.revoked_at is not None for r in s.scalars(select(LoginSession))}
    assert ended == {"alice": True, "amy": False}
    service.stop()


def test_a_proxy_signed_person_signs_in_once_a_session_or_when_their_role_changes() -> None:
    from monitor.web.identity import ProxySignIns

    seen = ProxySignIns()
    assert seen.first_in_a_while("amy", Role.responder, 0)
    assert not seen.first_in_a_while("amy", Role.responder, 3600)
    assert seen.first_in_a_while("amy", Role.admin, 3601), "a new role is a new sign-in"
    assert seen.first_in_a_while("amy", Role.admin, 3601 + 12 * 3600 + 1), "twelve hours later"
