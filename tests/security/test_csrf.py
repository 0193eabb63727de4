"""Row 3: the dashboard's CSRF token was the same for everyone and shown to anonymous visitors; a POST from
another origin on the same host, riding the session cookie, created an 89-day catch-all silence; /logout
had no token. Now each session has its own token, shown only to it, every form POST (logout too) checks
it and the request's Origin / Sec-Fetch-Site; cookies are Secure behind TLS (a trusted proxy's word)."""

from __future__ import annotations

import re

import httpx
import pytest

from monitor.web.auth import SESSION_COOKIE
from tests.security.conftest import HOST, PROXY, TOKEN

CATCH_ALL = {"matchers": 'alertname=~".*"', "duration": "89d", "comment": "gone fishing"}


def csrf_of(html: str) -> str:
    found = re.findall(r'name="csrf" value="([^"]*)"', html)
    assert found and len(set(found)) == 1, found
    return found[0]


def login(server, name: str, client: httpx.Client | None = None, origin: str | None = None) -> httpx.Client:
    c = client or server.client()
    r = c.post(
        "/login",
        data={"name": name, "token": TOKEN, "next": "/silences/new"},
        headers={"Origin": origin or server.url},
    )
    assert r.status_code == 200 and SESSION_COOKIE in c.cookies, (r.status_code, r.text[:300])
    return c


def silence_count(server) -> int:
    return len(server.client(headers=server.bearer()).get("/api/silences").json())


def test_anonymous_visitors_see_no_csrf_token_and_sessions_have_their_own(server):
    anon = server.client().get("/login")
    assert anon.status_code == 200 and 'name="csrf"' not in anon.text
    alice, bob = login(server, "alice"), login(server, "bob")
    a = csrf_of(alice.get("/silences/new").text)
    b = csrf_of(bob.get("/silences/new").text)
    assert a and b and a != b, "one token per session"
    assert a != csrf_of(login(server, "alice").get("/silences/new").text), "even for the same person"
    before = silence_count(server)
    stolen = bob.post("/silences", data={**CATCH_ALL, "csrf": a}, headers={"Origin": server.url})
    assert stolen.status_code == 403 and "out of date" in stolen.text, "alice's token is no good to bob"
    assert silence_count(server) == before


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:1"},  # another port on the same host: same site, another origin
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
        {"Origin": "https://127.0.0.1"},  # same host, another scheme
    ],
    ids=["other-port", "other-site", "null", "same-site", "cross-site", "other-scheme"],
)
def test_a_cross_origin_form_post_with_the_session_and_its_token_changes_nothing(server, headers):
    c = login(server, "alice")
    token = csrf_of(c.get("/silences/new").text)
    before = silence_count(server)
    for path, data in (("/silences", CATCH_ALL), (f"/alerts/{server.alert_id}/ack", {}), ("/logout", {})):
        r = c.post(path, data={**data, "csrf": token}, headers=headers, follow_redirects=False)
        assert r.status_code == 403 and "another" in r.text, (path, r.status_code, r.text[:200])
    assert silence_count(server) == before
    assert c.get("/silences").status_code == 200, "still logged in: the cross-origin logout did nothing"
    made = c.post(
        "/silences", data={**CATCH_ALL, "duration": "1m", "csrf": token}, headers={"Origin": server.url}
    )
    assert made.status_code == 200 and silence_count(server) == before + 1, (
        "the same POST from our own page works"
    )


def test_logout_needs_the_sessions_token(server):
    c = login(server, "alice")
    token = csrf_of(c.get("/silences/new").text)
    forged = c.post("/logout", data={}, headers={"Origin": server.url}, follow_redirects=False)
    assert forged.status_code == 403 and c.get("/silences").status_code == 200
    out = c.post("/logout", data={"csrf": token}, headers={"Origin": server.url}, follow_redirects=False)
    assert out.status_code == 303 and SESSION_COOKIE not in c.cookies
    assert c.get("/silences", follow_redirects=False).status_code == 303, "protected reads: to the login page"


def test_a_tampered_or_forged_session_cookie_is_no_session(server):
    c = login(server, "alice")
    value = c.cookies[SESSION_COOKIE]
    version, sid, mac = value.split(".")
    for forged in (
        f"{version}.{sid[:-2]}AA.{mac}",  # another session id, the same MAC
        f"{version}.{sid}.{'0' * 64}",
        f"v2.{sid}.1780000000.YWxpY2U.{mac}",  # the stateless cookie of before, with a name in it
        "v1." + "a" * 64,  # the old, shared session value's shape
    ):
        jar = server.client(cookies={SESSION_COOKIE: forged})
        assert jar.get("/silences", follow_redirects=False).status_code == 303, forged


def test_cookies_are_secure_behind_a_trusted_tls_proxy_only(server):
    via_proxy = server.client(local_address=PROXY)
    behind_tls = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": HOST, "X-Forwarded-For": "203.0.113.7"}
    r = via_proxy.post(
        "/login",
        data={"name": "alice", "token": TOKEN},
        headers={**behind_tls, "Origin": f"https://{HOST}"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text[:300]
    cookie = r.headers["set-cookie"]
    assert "secure" in cookie.lower() and "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert r.headers["strict-transport-security"].startswith("max-age=")
    # The same headers from anyone else are ignored: plain http, no Secure, and the https Origin is foreign.
    direct = server.client()
    spoofed = direct.post(
        "/login",
        data={"name": "alice", "token": TOKEN},
        headers={**behind_tls, "Origin": server.url},
        follow_redirects=False,
    )
    assert spoofed.status_code == 303 and "secure" not in spoofed.headers["set-cookie"].lower()
    assert "strict-transport-security" not in spoofed.headers
    foreign = direct.post(
        "/login", data={"name": "a", "token": TOKEN}, headers={**behind_tls, "Origin": f"https://{HOST}"}
    )
    assert foreign.status_code == 403
