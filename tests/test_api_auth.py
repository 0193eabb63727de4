"""Silences CRUD, the API token, read protection, the dashboard's login cookie, and errors as JSON."""

from __future__ import annotations

import re

import pytest

from alerts.clock import isoformat
from monitor.web.auth import SESSION_COOKIE
from tests.dashboard.support import TOKEN, bearer, build, client
from tests.helpers import tick

SILENCE = {
    "matchers": ["run=sim:hero-a/hero-a"],
    "duration": "1h",
    "created_by": "alice",
    "comment": "maintenance",
}


@pytest.fixture(autouse=True)
def _no_token_in_env(monkeypatch):
    monkeypatch.delenv("HEROWATCH_API_TOKEN", raising=False)
    monkeypatch.delenv("HEROWATCH_PROTECT_READS", raising=False)


def test_without_a_configured_token_changes_are_refused_with_how_to_fix_it(db_url, clock):
    service = build(db_url, clock, token=None)
    assert service.settings.host == "127.0.0.1", "refused even on loopback (see monitor/api/auth.py)"
    api = client(service)
    for method, path, body in (
        ("POST", "/api/silences", SILENCE),
        ("DELETE", "/api/silences/1", None),
        ("POST", "/api/alerts/1/ack", {"by": "x"}),
    ):
        r = api.request(method, path, json=body, headers=bearer("anything"))
        assert r.status_code == 403, (path, r.text)
        assert "HEROWATCH_API_TOKEN" in r.json()["error"]
    assert api.get("/api/silences").json() == [], "reads stay open"
    assert api.get("/api/runs").status_code == 200
    service.stop()


def test_the_audit_trail_without_sign_in_says_it_needs_sign_in_not_that_reads_are_protected(db_url, clock):
    service = build(db_url, clock, token=None)
    r = client(service).get("/api/audit")
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert "the audit trail names people, so it needs sign-in" in error, error
    assert "HEROWATCH_API_TOKEN" in error and "HEROWATCH_OIDC_ISSUER" in error, error
    assert "reads are protected" not in error, "reads are not protected here"
    service.stop()


def test_silences_crud_with_the_token(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)  # hero-a's stall alert is firing
    api = client(service)
    none = api.post("/api/silences", json=SILENCE)
    assert none.status_code == 401 and "Bearer" in none.json()["error"], "no token: says how to send one"
    wrong = api.post("/api/silences", json=SILENCE, headers=bearer("not-it"))
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
    assert "the API token sent is not this server's" in wrong.json()["error"], "a wrong one: says so"

    made = api.post("/api/silences", json=SILENCE, headers=bearer())
    assert made.status_code == 201, made.text
    s = made.json()
    assert (
        s["matchers"] == ["run=sim:hero-a/hero-a"]
        and s["state"] == "active"
        and s["created_by"] == "automation (alice)"
    )
    assert s["muting"] == 1 and s["comment"] == "maintenance"
    assert api.get(f"/api/silences/{s['id']}").json() == s
    assert [x["id"] for x in api.get("/api/silences", params={"state": "active"}).json()] == [s["id"]]

    ends = isoformat(clock.time() + 3 * 3600)
    later = api.post(
        "/api/silences",
        headers=bearer(),
        json={**SILENCE, "duration": None, "starts_at": clock.time() + 3600, "ends_at": ends},
    )
    assert later.status_code == 201 and later.json()["state"] == "pending" and later.json()["muting"] == 0
    assert later.json()["ends_at"] == ends

    gone = api.delete(f"/api/silences/{s['id']}", headers=bearer())
    assert gone.status_code == 200 and gone.json()["state"] == "expired"
    assert api.delete(f"/api/silences/{s['id']}", headers=bearer()).json()["state"] == "expired", "idempotent"
    assert api.delete(f"/api/silences/{later.json()['id']}", headers=bearer()).json()["state"] == "expired"
    assert {x["id"] for x in api.get("/api/silences", params={"state": "expired"}).json()} == {
        s["id"],
        later.json()["id"],
    }
    assert api.get("/api/silences", params={"state": "active"}).json() == []
    assert api.get("/api/alerts", params={"silenced": True}).json() == [], "expired: the alert is loud again"
    assert api.delete("/api/silences/424242", headers=bearer()).status_code == 404
    assert api.get("/api/silences/424242").json() == {"error": "no silence with id 424242"}
    service.stop()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**SILENCE, "matchers": ["run~hero-a"]}, "bad matcher 'run~hero-a'"),
        ({**SILENCE, "matchers": ["alertname=~progress_(("]}, "bad regex in matcher"),
        ({**SILENCE, "matchers": []}, "matchers"),
        ({**SILENCE, "duration": None}, "exactly one of duration"),
        ({**SILENCE, "ends_at": "2030-01-01T00:00:00Z"}, "exactly one of duration"),
        ({**SILENCE, "duration": None, "ends_at": "2001-01-01T00:00:00Z"}, "end after it starts"),
        (
            {**SILENCE, "duration": None, "starts_at": "2000-01-01", "ends_at": "2000-01-02"},
            "already be over",
        ),
        ({**SILENCE, "duration": None, "ends_at": "next tuesday"}, "not a time"),
        ({**SILENCE, "duration": "soon"}, "not a duration"),
        ({**SILENCE, "duration": "100d"}, "at most 90 days"),
        ({**SILENCE, "created_by": ""}, "created_by"),
    ],
)
def test_a_bad_silence_is_a_422_that_says_what_is_wrong(tmp_path, clock, body, message):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    r = client(service).post("/api/silences", json=body, headers=bearer())
    assert r.status_code == 422, r.text
    assert message in r.json()["error"], r.json()
    service.stop()


def test_protected_reads_need_the_token_but_probes_do_not(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, protect_reads=True)
    api = client(service)
    for path in ("/api/runs", "/api/alerts", "/api/silences", "/api/rules", "/metrics", "/api/runs/hero-a"):
        assert api.get(path).status_code == 401, path
    assert api.get("/api/runs", headers=bearer()).status_code == 200
    assert api.get("/healthz").status_code == 200 and api.get("/readyz").status_code in (200, 503)
    page = api.get("/", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=%2F"
    assert api.get("/fragments/overview").status_code == 401
    assert api.get("/static/htmx.min.js").status_code == 200, "the vendored libraries hold no data"
    service.stop()


def test_dashboard_login_sets_a_strict_cookie_and_forms_need_it_and_csrf(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    api = client(service)
    form = {"matchers": 'run="sim:hero-a/hero-a"', "duration": "30m", "comment": "x"}
    anon = api.post("/silences", data={**form, "csrf": "x"}, follow_redirects=False)
    assert anon.status_code == 303 and anon.headers["location"].startswith("/login?next=")
    bad = api.post(
        "/login", data={"name": "alice", "token": "nope", "next": "/silences"}, follow_redirects=False
    )
    assert bad.status_code == 401 and "not the API token" in bad.text and SESSION_COOKIE not in bad.cookies
    ok = api.post(
        "/login", data={"name": "alice", "token": TOKEN, "next": "//evil.example/"}, follow_redirects=False
    )
    assert ok.status_code == 303 and ok.headers["location"] == "/", "no open redirect"
    cookies = ok.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith(SESSION_COOKIE + "="))
    assert "HttpOnly" in session and "SameSite=strict" in session.replace("Strict", "strict")
    assert TOKEN not in session, "the cookie holds an HMAC of the token, not the token"
    no_csrf = api.post("/silences", data=form, follow_redirects=False)
    assert no_csrf.status_code == 403 and "out of date" in no_csrf.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', api.get("/silences/new").text).group(1)
    made = api.post("/silences", data={**form, "csrf": csrf}, follow_redirects=False)
    assert made.status_code == 303 and made.headers["location"].startswith("/silences?created=")
    (silence,) = api.get("/api/silences").json()
    assert silence["created_by"] == "automation (alice)" and silence["matchers"] == [
        'run="sim:hero-a/hero-a"'
    ]
    bad_form = api.post("/silences", data={**form, "matchers": "run~x", "csrf": csrf})
    assert bad_form.status_code == 422 and "bad matcher" in bad_form.text and "run~x" in bad_form.text
    service.stop()


def test_errors_are_json_without_stack_traces(tmp_path, clock, monkeypatch, caplog):
    from monitor.storage import views

    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    api = client(service)

    def boom(*a, **k):
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(views, "all_runs", boom)
    r = api.get("/api/runs")
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    assert r.json()["error"].startswith("internal error (reference ")
    assert "secret" not in r.text and "Traceback" not in r.text
    assert "secret internals" in caplog.text, "the details go to the log"
    page = api.get("/")
    assert page.status_code == 500 and "secret" not in page.text and "Something broke" in page.text
    wrong = api.put("/api/runs")
    assert wrong.status_code == 405 and wrong.json()["error"] == "PUT is not allowed on /api/runs"
    assert "content-security-policy" in api.get("/login").headers
    service.stop()
