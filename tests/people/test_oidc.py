"""Sign-in with OpenID Connect against a provider built with authlib's server side
(tests/standins/oidc_provider.py), ``herowatch serve`` as a real process: the code flow with PKCE,
groups to roles, a person without a role, logout (here and at the provider), an expired session, and a
provider that fails or a sign-in that was tampered with."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import _fresh_pg_database
from tests.dashboard.conftest import free_port
from tests.people.conftest import SECRET_KEY, serve_env, start_serve, stop
from tests.standins.oidc_provider import OidcProvider, query_of

PEOPLE = {
    "amy": ("amy-pw", ["staff", "oncall"]),
    "vic": ("vic-pw", ["staff"]),
    "ada": ("ada-pw", ["hw-admins"]),
    "nora": ("nora-pw", ["contractors"]),
}
CLIENT_SECRET = "oidc-client-secret-for-tests-0123456789"


@dataclass
class Oidc:
    url: str
    provider: OidcProvider
    db_url: str

    def browser(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, follow_redirects=False)

    def start(self, web: httpx.Client, next_path: str = "/alerts") -> str:
        """herowatch's sign-in link: where it sends the browser (the provider's authorization URL)."""
        r = web.get("/auth/oidc/login", params={"next": next_path})
        assert r.status_code == 303, r.text[:300]
        return r.headers["location"]

    def at_provider(self, authorize: str, name: str, password: str | None = None) -> str:
        """The person signs in at the provider; where it sends the browser back (herowatch's callback)."""
        pw = PEOPLE[name][0] if password is None else password
        r = httpx.post(authorize, data={"username": name, "password": pw}, timeout=30)
        assert r.status_code == 302, r.text[:300]
        return r.headers["location"]

    def sign_in(self, name: str) -> httpx.Client:
        web = self.browser()
        back = self.at_provider(self.start(web), name)
        r = web.get(back)
        assert r.status_code == 303 and r.headers["location"] == "/alerts", r.text[:300]
        return web


@pytest.fixture(scope="module")
def oidc(tmp_path_factory, pg_server_url) -> Iterator[Oidc]:
    tmp = tmp_path_factory.mktemp("oidc")
    db_url, drop = _fresh_pg_database(pg_server_url)
    port = free_port()
    with OidcProvider(PEOPLE, "herowatch", CLIENT_SECRET) as provider:
        provider.allow_redirect(f"http://127.0.0.1:{port}/auth/oidc/callback")
        env = {k: v for k, v in serve_env(db_url).items() if not k.startswith("HEROWATCH_AUTH_PROX")}
        env.update(
            {
                "HEROWATCH_OIDC_ISSUER": provider.url,
                "HEROWATCH_OIDC_CLIENT_ID": "herowatch",
                "HEROWATCH_OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "HEROWATCH_SECRET_KEY": SECRET_KEY,
                "AUTHLIB_INSECURE_TRANSPORT": "1",  # the test provider speaks http on loopback
            }
        )
        proc, url, _ = start_serve(tmp, env, port)
        try:
            yield Oidc(url, provider, db_url)
        finally:
            stop(proc)
            drop()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no form token on the page"
    return found.group(1)


def test_sign_in_with_pkce_then_act_under_ones_name(oidc: Oidc) -> None:
    web = oidc.browser()
    authorize = oidc.start(web)
    asked = query_of(authorize)
    assert asked["code_challenge_method"] == "S256" and asked["code_challenge"] and asked["nonce"]
    back = oidc.at_provider(authorize, "amy")
    r = web.get(back)
    assert r.status_code == 303 and r.headers["location"] == "/alerts"
    assert oidc.provider.token_requests[-1]["code_verifier"], "the code was exchanged with its PKCE verifier"
    page = web.get("/silences/new")
    assert "amy" in page.text and "responder" in page.text
    made = web.post(
        "/silences",
        data={"matchers": 'run="hero-a"', "duration": "30m", "comment": "oidc", "csrf": csrf_of(page.text)},
        headers={"Origin": oidc.url},
    )
    assert made.status_code == 303, made.text[:300]
    signed = web.get("/api/audit", params={"person": "amy"}).json()
    assert [(e["action"], e["via"], e["role"]) for e in signed][:2] == [
        ("silence_create", "oidc", "responder"),
        ("sign_in", "oidc", "responder"),
    ]
    # a code works once: the same callback again signs nobody in
    again = oidc.browser()
    again.cookies = web.cookies
    assert again.get(back).status_code in (400, 401)


def test_groups_map_to_roles(oidc: Oidc) -> None:
    vic = oidc.sign_in("vic")
    page = vic.get("/silences/new")
    assert "vic" in page.text and "viewer" in page.text and "disabled" in page.text
    r = vic.post(
        "/silences",
        data={"matchers": 'run="hero-a"', "duration": "30m", "csrf": csrf_of(vic.get("/tokens").text)},
        headers={"Origin": oidc.url},
    )
    assert r.status_code == 403 and "vic is a viewer" in r.text
    ada = oidc.sign_in("ada")
    assert "admin" in ada.get("/silences").text


def test_a_person_whose_groups_have_no_role_is_not_signed_in(oidc: Oidc) -> None:
    web = oidc.browser()
    r = web.get(oidc.at_provider(oidc.start(web), "nora"))
    assert r.status_code == 403 and "none of nora&#39;s groups has a role" in r.text
    assert "herowatch_session" not in web.cookies
    trail = oidc.sign_in("ada").get("/api/audit", params={"person": "nora"}).json()
    assert trail and trail[0]["action"] == "refused" and trail[0]["via"] == "oidc"


def test_logout_ends_the_session_here_and_at_the_provider(oidc: Oidc) -> None:
    amy = oidc.sign_in("amy")
    kept = dict(amy.cookies)
    csrf = csrf_of(amy.get("/silences/new").text)
    out = amy.post("/logout", data={"csrf": csrf}, headers={"Origin": oidc.url})
    assert out.status_code == 303 and out.headers["location"].startswith(oidc.provider.url + "/logout")
    assert httpx.get(out.headers["location"], follow_redirects=False).status_code == 302
    assert oidc.provider.ended[-1]["client_id"] == "herowatch"
    stale = oidc.browser()
    stale.cookies.update(kept)  # a copy of the cookie kept from before
    r = stale.post("/silences", data={"matchers": 'run="hero-a"', "duration": "1h", "csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_an_expired_session_is_no_session(oidc: Oidc) -> None:
    amy = oidc.sign_in("amy")
    assert "responder" in amy.get("/silences/new").text
    engine = sa.create_engine(oidc.db_url)
    with engine.begin() as conn:  # twelve hours later
        conn.execute(sa.text("UPDATE login_sessions SET expires_at = now() - interval '1 minute'"))
    engine.dispose()
    page = amy.get("/silences/new")  # reads are protected here: to the login page
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    r = amy.post("/silences", data={"matchers": 'run="hero-a"', "duration": "1h", "csrf": "x"})
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_a_tampered_or_failed_sign_in_is_refused(oidc: Oidc) -> None:
    web = oidc.browser()
    back = oidc.at_provider(oidc.start(web), "amy")
    forged = back.replace("state=", "state=x")
    assert web.get(forged).status_code == 400
    stranger = oidc.browser()  # the callback in another browser (no pending sign-in of its own)
    assert stranger.get(back).status_code == 400
    web = oidc.browser()
    back = oidc.at_provider(oidc.start(web), "amy")
    oidc.provider.token_failures = 1
    r = web.get(back)
    assert r.status_code == 401 and "refused the code" in r.text
    assert "herowatch_session" not in web.cookies


def test_a_personal_token_issued_from_the_dashboard_acts_as_its_person_until_revoked(oidc: Oidc) -> None:
    from typer.testing import CliRunner

    from monitor.cli.main import app

    amy = oidc.sign_in("amy")
    page = amy.get("/tokens")
    issued = amy.post(
        "/tokens", data={"label": "laptop CLI", "csrf": csrf_of(page.text)}, headers={"Origin": oidc.url}
    )
    assert issued.status_code == 201
    token = re.search(r'id="issued-token">(hwp_[^<]+)<', issued.text).group(1)
    assert token not in amy.get("/tokens").text, "shown once"
    env = {"HEROWATCH_URL": oidc.url, "HEROWATCH_API_TOKEN": token, "COLUMNS": "80"}
    cli = CliRunner()
    r = cli.invoke(app, ["silence", "add", "run=hero-a", "-d", "20m", "-c", "from my laptop"], env=env)
    assert r.exit_code == 0, r.output
    listed = httpx.get(f"{oidc.url}/api/silences", headers={"Authorization": f"Bearer {token}"}).json()
    assert any(s["created_by"] == "amy" and s["comment"] == "from my laptop" for s in listed)
    trail = amy.get("/api/audit", params={"person": "amy", "action": "silence_create"}).json()
    assert (trail[0]["door"], trail[0]["via"], trail[0]["role"]) == ("cli", "personal", "responder")
    # revoked from the dashboard: the token is refused from then on, and the refusal is recorded
    token_id = re.search(r'action="/tokens/(\d+)/revoke"', amy.get("/tokens").text).group(1)
    gone = amy.post(
        f"/tokens/{token_id}/revoke",
        data={"csrf": csrf_of(amy.get("/tokens").text)},
        headers={"Origin": oidc.url},
    )
    assert gone.status_code == 303 and "revoked" in amy.get("/tokens").text
    r = cli.invoke(app, ["silence", "add", "run=hero-a", "-d", "20m"], env=env)
    assert r.exit_code != 0 and "the API token sent is not this server's" in r.output, r.output
    actions = [e["action"] for e in amy.get("/api/audit", params={"person": "amy"}).json()]
    assert "token_issue" in actions and "token_revoke" in actions
