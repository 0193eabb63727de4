"""Sign-in through a trusted reverse proxy, with a real nginx in front of ``herowatch serve``: nginx signs
people in and sets the identity headers; herowatch believes them from nginx only, gives each person the
role of their groups, enforces it per route, and writes every change and refusal to the audit trail."""

from __future__ import annotations

import re

from tests.people.conftest import Served

SILENCE = {"matchers": ['run="hero-a"'], "duration": "1h", "comment": "maintenance"}


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no form token on the page"
    return found.group(1)


def test_a_responder_signed_in_by_nginx_silences_under_her_own_name(served: Served) -> None:
    amy = served.as_person("amy")
    made = amy.post("/api/silences", json={**SILENCE, "created_by": "somebody else"})
    assert made.status_code == 201, made.text
    assert made.json()["created_by"] == "amy", "the person nginx signed in, not a name the body claims"
    trail = amy.get("/api/audit", params={"person": "amy", "action": "silence_create"}).json()
    assert [(e["actor"], e["role"], e["via"], e["door"], e["target"]) for e in trail] == [
        ("amy", "responder", "proxy", "api", f"silence {made.json()['id']}")
    ]
    signed = amy.get("/api/audit", params={"person": "amy", "action": "sign_in"}).json()
    assert len(signed) == 1 and signed[0]["via"] == "proxy", "her first request was her sign-in, once"
    # she edits it (it is replaced by a new one, as in Alertmanager), then expires the new one
    old = made.json()["id"]
    edited = amy.put(f"/api/silences/{old}", json={**SILENCE, "duration": "2h", "comment": "longer"})
    assert edited.status_code == 200 and edited.json()["id"] != old and edited.json()["created_by"] == "amy"
    assert amy.get(f"/api/silences/{old}").json()["state"] == "expired"
    gone = amy.delete(f"/api/silences/{edited.json()['id']}")
    assert gone.status_code == 200 and gone.json()["state"] == "expired"
    assert amy.put(f"/api/silences/{old}", json=SILENCE).status_code == 409, "an ended silence is not edited"
    lines = amy.get("/api/audit", params={"person": "amy"}).json()
    actions = list(dict.fromkeys(e["action"] for e in lines))  # one line per run an action touched
    assert actions[:3] == ["silence_expire", "silence_edit", "silence_create"]
    edit = next(e for e in lines if e["action"] == "silence_edit")
    assert edit["target"] == f"silence {old}"
    assert f"replaced by silence {edited.json()['id']}" in edit["detail"]


def test_a_viewer_reads_but_may_not_change_and_the_refusal_is_recorded(served: Served) -> None:
    vic = served.as_person("vic")
    assert vic.get("/api/alerts").status_code == 200
    refused = vic.post("/api/silences", json=SILENCE)
    assert refused.status_code == 403 and "vic is a viewer" in refused.json()["error"]
    ada = served.as_person("ada")
    trail = ada.get("/api/audit", params={"person": "vic", "action": "refused"}).json()
    assert trail and trail[0]["target"] == "POST /api/silences" and trail[0]["outcome"] == "refused"


def test_a_person_without_a_role_is_refused_and_nginx_refuses_strangers(served: Served) -> None:
    nora = served.as_person("nora")
    r = nora.get("/api/alerts")
    assert r.status_code == 403 and "none of nora's groups has a role" in r.json()["error"]
    stranger = served.proxy.client("amy", "wrong-password")
    assert stranger.get("/api/alerts").status_code == 401  # nginx itself: no such person


def test_identity_headers_not_from_the_proxy_are_refused(served: Served) -> None:
    """Anyone on the network can send X-Forwarded-User: herowatch believes it from nginx's address only."""
    direct = served.direct()
    forged = {"X-Forwarded-User": "ada", "X-Forwarded-Groups": "hw-admins"}
    for method, path in (("GET", "/api/alerts"), ("POST", "/api/silences"), ("GET", "/api/audit")):
        r = direct.request(method, path, headers=forged, json=SILENCE if method == "POST" else None)
        assert r.status_code == 403 and "believed only from the sign-in proxy" in r.json()["error"], r.text
    page = direct.get("/silences", headers=forged)
    assert page.status_code == 303 and page.headers["location"].startswith("/login"), "no one is signed in"
    ada = served.as_person("ada")
    count = len(ada.get("/api/audit", params={"action": "refused", "limit": 5000}).json())
    form = direct.post("/silences", data={"matchers": 'run="hero-a"', "duration": "1h"}, headers=forged)
    assert form.status_code == 403 and "believed only from the sign-in proxy" in form.text
    after = len(ada.get("/api/audit", params={"action": "refused", "limit": 5000}).json())
    assert after == count + 1, "one refused request, one line in the audit trail"
    # and through nginx a client cannot override who nginx signed in
    vic = served.as_person("vic")
    r = vic.post("/api/silences", json=SILENCE, headers=forged)
    assert r.status_code == 403 and "vic is a viewer" in r.json()["error"]
    trail = served.as_person("ada").get("/api/audit", params={"action": "refused"}).json()
    assert any("not from 127.0.0.1" in e["detail"] and e["via"] == "proxy" for e in trail), trail


def test_the_dashboard_knows_the_person_and_their_role(served: Served) -> None:
    amy = served.as_person("amy")
    page = amy.get("/silences")
    assert page.status_code == 200 and "amy" in page.text and "responder" in page.text
    assert "Log out" not in page.text, "the proxy signs people out, not herowatch"
    origin = {"Origin": served.proxy.url}
    form = amy.get("/silences/new")
    made = amy.post(
        "/silences",
        data={
            "matchers": 'run="hero-a"',
            "duration": "30m",
            "comment": "from the form",
            "csrf": csrf_of(form.text),
        },
        headers=origin,
    )
    assert made.status_code == 303 and made.headers["location"].startswith("/silences?created=")
    listed = amy.get("/api/silences").json()
    assert any(s["created_by"] == "amy" and s["comment"] == "from the form" for s in listed)
    # a viewer's page has no action buttons, and a forged form post is refused with the reason
    vic = served.as_person("vic")
    vpage = vic.get("/silences/new")
    assert "disabled" in vpage.text
    audit_page = vic.get("/audit")
    assert audit_page.status_code == 200 and "amy" in audit_page.text and "silence_create" in audit_page.text


def test_the_automation_token_is_named_as_such(served: Served) -> None:
    r = served.direct().post(
        "/api/silences", json={**SILENCE, "created_by": "nightly-job"}, headers=served.automation()
    )
    assert r.status_code == 201 and r.json()["created_by"] == "automation (nightly-job)"
    trail = served.as_person("ada").get("/api/audit", params={"person": "automation (nightly-job)"}).json()
    assert trail[0]["role"] == "automation" and trail[0]["via"] == "token"
