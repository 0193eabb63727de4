"""Every route that changes something, as each role: allowed exactly where docs/security.md's role table
says. The list of routes comes from the app itself, so a new route without a row in the table fails here
(and a row for a route that is gone, too). Requests go through the real nginx sign-in proxy for the three
roles and straight to herowatch with the automation token (a bearer header for the API, its login session
for the dashboard's forms)."""

from __future__ import annotations

import re

import httpx
from fastapi.routing import APIRoute
from starlette.routing import Route

from alerts.clock import ManualClock
from monitor.settings import Settings
from monitor.web.app import create_app
from monitor.web.context import ApiContext
from tests.conftest import REPO
from tests.people.conftest import AUTOMATION, Served

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
ROLES = ("viewer", "responder", "admin", "automation")
PERSON = {"viewer": "vic", "responder": "amy", "admin": "ada"}
ABSENT_ID = "2000000000"  # no such alert, silence or token: the gate is what answers, or a 404 after it


def role_table() -> dict[tuple[str, str], dict[str, str]]:
    text = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    body = text.split("<!-- role table -->", 1)[1].split("<!-- end role table -->", 1)[0]
    table = {}
    for line in body.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        method, path = cells[0].strip("`").split(" ", 1)
        table[(method, path)] = dict(zip(ROLES, cells[1:5], strict=True))
    return table


def mutating_routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the app that changes something: API and dashboard alike."""
    ctx = ApiContext(sessions=None, clock=ManualClock(0), settings=Settings(database_url="sqlite://"))
    app = create_app(ctx)
    out = []
    for included in app.router.routes:
        router = getattr(included, "original_router", None)
        for route in router.routes if router is not None else [included]:
            if isinstance(route, APIRoute | Route):
                out += [(m, route.path) for m in sorted(route.methods or ()) if m in MUTATING]
    return sorted(set(out))


def test_every_mutating_route_has_a_row_and_every_row_a_route() -> None:
    routes, table = set(mutating_routes()), set(role_table())
    assert routes - table == set(), f"routes without a row in docs/security.md's role table: {routes - table}"
    assert table - routes == set(), f"rows of docs/security.md's role table for no route: {table - routes}"
    assert len(routes) >= 10


def _csrf(client: httpx.Client) -> str:
    page = client.get("/silences/new")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, f"no form token for this person: {page.status_code} {page.text[:200]}"
    return found.group(1)


def _automation_session(served: Served) -> httpx.Client:
    web = httpx.Client(base_url=served.url, timeout=30, follow_redirects=False)
    r = web.post(
        "/login",
        data={"name": "sweep", "token": AUTOMATION, "next": "/"},
        headers={"Origin": served.url},
    )
    assert r.status_code == 303, r.text[:300]
    return web


def _send(served: Served, role: str, method: str, path: str) -> httpx.Response:
    url = re.sub(r"{[^}]+}", ABSENT_ID, path)
    if path.startswith("/api/"):
        if role == "automation":
            client, headers = served.direct(), served.automation()
        else:
            client, headers = served.as_person(PERSON[role]), {}
        return client.request(method, url, json={}, headers=headers)
    client = _automation_session(served) if role == "automation" else served.as_person(PERSON[role])
    origin = served.url if role == "automation" else served.proxy.url
    return client.request(method, url, data={"csrf": _csrf(client)}, headers={"Origin": origin})


def _allowed(r: httpx.Response) -> bool:
    if r.status_code in (401, 403):
        return False
    return not (r.status_code in (302, 303, 307) and r.headers.get("location", "").startswith("/login"))


def test_each_role_is_allowed_exactly_where_the_table_says(served: Served) -> None:
    table = role_table()
    wrong, swept = [], 0
    for method, path in mutating_routes():
        for role, says in table[(method, path)].items():
            if says not in ("yes", "no"):
                continue  # not decided by role: the row says what decides
            r = _send(served, role, method, path)
            swept += 1
            if _allowed(r) != (says == "yes"):
                wrong.append(
                    f"{method} {path} as {role}: table says {says}, got {r.status_code} {r.text[:120]}"
                )
    assert not wrong, "\n".join(wrong)
    assert swept >= 30, swept
