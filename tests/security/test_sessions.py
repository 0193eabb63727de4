"""Review 2, defect 5: a dashboard session cookie kept from before logging out still acted (sessions lived
only in a signed cookie: nothing could end one). Now sessions are kept server side: logging out ends
the session for whoever holds its cookie, on every replica; a changed API token ends every session of
the old one for good (changing it back does not revive them); a session ends after 12 hours; and a
session survives a restart with the same token."""

from __future__ import annotations

import re

import httpx
import psycopg
import pytest

from monitor.web.auth import SESSION_COOKIE
from tests.security.conftest import TOKEN

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

NEW_TOKEN = "rotated-security-suite-token-9876543210zyxwv"
CATCH_ALL = {"matchers": 'alertname=~".*"', "duration": "2h", "comment": "gone fishing"}


def login(server, name: str = "alice", token: str = TOKEN) -> tuple[httpx.Client, str]:
    c = server.client(headers={"Origin": server.url})
    r = c.post("/login", data={"name": name, "token": token, "next": "/silences/new"})
    assert r.status_code == 200 and SESSION_COOKIE in c.cookies, (r.status_code, r.text[:300])
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    return c, csrf


def stolen(server, cookie: str) -> httpx.Client:
    """Another browser (an attacker's) with a copy of the cookie."""
    return server.client(cookies={SESSION_COOKIE: cookie}, headers={"Origin": server.url})


def acts(client: httpx.Client, csrf: str) -> int:
    """Status of a change made with the session: a silence (303 to the list when made)."""
    return client.post("/silences", data={**CATCH_ALL, "csrf": csrf}, follow_redirects=False).status_code


def reads(client: httpx.Client) -> int:
    return client.get("/silences", follow_redirects=False).status_code


def expire_all(server) -> None:
    api = server.client(headers=server.bearer())
    for s in api.get("/api/silences", params={"state": "active"}).json():
        api.delete(f"/api/silences/{s['id']}")


def test_a_cookie_kept_from_before_logout_no_longer_acts(server):
    c, csrf = login(server)
    copy = stolen(server, c.cookies[SESSION_COOKIE])
    assert reads(copy) == 200, "the copy works while the session lasts"
    out = c.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert reads(copy) == 303, "logged out: the kept cookie is no session (to the login page)"
    before = len(server.client(headers=server.bearer()).get("/api/silences").json())
    r = copy.post("/silences", data={**CATCH_ALL, "csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login"), (r.status_code, r.text[:200])
    assert len(server.client(headers=server.bearer()).get("/api/silences").json()) == before
    anon = copy.get("/api/silences")
    assert anon.status_code == 401, "nor does it read the API"


def test_logging_out_ends_only_that_session(server):
    alice, alice_csrf = login(server, "alice")
    bob, bob_csrf = login(server, "bob")
    assert alice.post("/logout", data={"csrf": alice_csrf}, follow_redirects=False).status_code == 303
    assert reads(bob) == 200 and acts(bob, bob_csrf) == 303
    expire_all(server)


def test_a_changed_token_ends_every_session_of_the_old_one(servers):
    first = servers()
    c, csrf = login(first)
    cookie = c.cookies[SESSION_COOKIE]
    assert acts(c, csrf) == 303
    db = first.db_url
    first.proc.terminate()
    first.proc.wait(15)

    same = servers(db_url=db)  # a restart with the same token: the session goes on
    assert reads(stolen(same, cookie)) == 200
    same.proc.terminate()
    same.proc.wait(15)

    rotated = servers({"HEROWATCH_API_TOKEN": NEW_TOKEN}, db_url=db)
    old = stolen(rotated, cookie)
    assert reads(old) == 303, "the old token's session is over"
    assert old.get("/api/silences").status_code == 401
    new, _ = login(rotated, token=NEW_TOKEN)
    assert reads(new) == 200
    with psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://")) as conn:
        ended = conn.execute("SELECT count(*) FROM login_sessions WHERE revoked_at IS NOT NULL").fetchone()[0]
        live = conn.execute("SELECT count(*) FROM login_sessions WHERE revoked_at IS NULL").fetchone()[0]
    assert (ended, live) == (1, 1), "the old token's session was revoked when the new one started: for good"


def test_sessions_are_rows_that_end(server):
    """What the table holds: no cookie value (only its hash), who, how, until when; logging out marks it."""
    c, csrf = login(server, "carol")
    cookie = c.cookies[SESSION_COOKIE]
    sid = cookie.split(".")[1]
    url = server.db_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, subject, method, expires_at - created_at, revoked_at FROM login_sessions "
            "WHERE subject = 'carol'"
        ).fetchall()
        assert len(rows) == 1
        key, subject, method, lasts, revoked = rows[0]
        assert sid not in key and cookie not in key and len(key) == 64
        assert (subject, method, lasts.total_seconds(), revoked) == ("carol", "token", 12 * 3600, None)
        c.post("/logout", data={"csrf": csrf})
        (revoked,) = conn.execute("SELECT revoked_at FROM login_sessions WHERE id = %s", (key,)).fetchone()
        assert revoked is not None
        conn.execute(  # a session past its 12 hours (moved back in time by hand)
            "UPDATE login_sessions SET expires_at = now() - interval '1 second', revoked_at = NULL "
            "WHERE id = %s",
            (key,),
        )
    assert reads(stolen(server, cookie)) == 303, "expired: no session"
