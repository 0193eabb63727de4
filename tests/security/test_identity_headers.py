"""Identity headers and names from outside (issue 37, minors), against a running server on PostgreSQL:
the API token with forged identity headers from a non-proxy address is refused (403) and recorded; a
UTF-8 ``X-Forwarded-User`` is read as UTF-8 (``élève``, not ``Ã©lÃ¨ve``); a Slack user name holding
Slack markup (``<!channel> admin``) is stored and echoed as plain text."""

from __future__ import annotations

from alerts.notifiers.slack.interactions import slack_actor

SIGN_IN_PROXY = "127.0.0.3"
ENV = {"HEROWATCH_AUTH_PROXIES": SIGN_IN_PROXY, "HEROWATCH_ROLE_GROUPS": "admin=hw-admins;responder=oncall"}


def test_the_token_with_forged_identity_headers_is_refused_and_recorded(servers):
    server = servers(ENV)
    forged = {**server.bearer(), "X-Forwarded-User": "ada", "X-Forwarded-Groups": "hw-admins"}
    r = server.client().post(
        "/api/silences", json={"matchers": ['run="x"'], "duration": "1h"}, headers=forged
    )
    assert r.status_code == 403 and "believed only from the sign-in proxy" in r.json()["error"], r.text
    plain = server.client().get("/api/runs", headers=server.bearer())
    assert plain.status_code == 200, "the token alone still works"
    trail = server.client(headers=server.bearer()).get("/api/audit", params={"outcome": "refused"}).json()
    assert any(e["actor"] == "ada" and "sign-in proxy" in e["detail"] for e in trail), trail


def test_a_utf8_user_from_the_proxy_is_recorded_as_written(servers):
    server = servers(ENV)
    proxy = server.client(local_address=SIGN_IN_PROXY)
    headers = {"X-Forwarded-User": "élève".encode(), "X-Forwarded-Groups": b"oncall"}
    r = proxy.get("/api/runs", headers=headers)
    assert r.status_code == 200, r.text
    trail = server.client(headers=server.bearer()).get("/api/audit").json()
    actors = {e["actor"] for e in trail}
    assert "élève" in actors and "Ã©lÃ¨ve" not in actors, actors


def test_a_slack_user_name_holding_markup_is_plain_text():
    name = slack_actor("U0EVE", "<!channel> admin")
    assert "<" not in name and ">" not in name and name == "!channel admin (Slack U0EVE)"
    assert slack_actor("U0EVE", "a &amp; <@U0BOSS>\nforged") == "a amp; @U0BOSS\\nforged (Slack U0EVE)"
