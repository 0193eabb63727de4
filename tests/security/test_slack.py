"""Row 4: the same signed Slack request sent twice within the five minutes created two silences, and
``team_id`` and the channel were not checked; and (row 5) deeply nested or oddly typed payloads got 500.
Now a replay gets 409, another workspace or another message 403, any malformed payload 4xx, and none of
them changes anything."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alerts.notifiers.slack.interactions import ACK, SILENCE_1H, encode_button_value
from tests.security.conftest import SECRET
from tests.test_slack_interactions import body_of, click, signed

URL = "/api/slack/interactions"


def state(server) -> tuple:
    api = server.client(headers=server.bearer())
    silences = sorted((s["id"], s["ends_at"]) for s in api.get("/api/silences").json())
    alerts = sorted((a["id"], a["acked_by"]) for a in api.get("/api/alerts").json())
    return silences, alerts


def send(server, payload: dict | bytes):  # noqa: ANN201
    body = payload if isinstance(payload, bytes) else body_of(payload)
    return server.client().post(URL, content=body, headers=signed(body, ts=server.now, secret=SECRET))


def test_a_replayed_click_changes_nothing(server):
    body = body_of(click(SILENCE_1H, encode_button_value(server.group_key, [server.alert_id])))
    headers = signed(body, ts=server.now, secret=SECRET)
    c = server.client()
    first = c.post(URL, content=body, headers=headers)
    assert first.status_code == 200, first.text
    after_first = state(server)
    for _ in range(3):
        again = c.post(URL, content=body, headers=headers)
        assert again.status_code == 409 and "already" in again.json()["error"], again.text
    assert state(server) == after_first, "one silence, however often the request is replayed"
    api = server.client(headers=server.bearer())
    for s in api.get("/api/silences", params={"state": "active"}).json():  # leave the alert loud again
        api.delete(f"/api/silences/{s['id']}")


def test_a_click_from_another_workspace_or_on_another_message_changes_nothing(server):
    value = encode_button_value(server.group_key, [server.alert_id])
    before = state(server)
    other_team = click(ACK, value, team={"id": "T0EVIL", "domain": "evil"})
    other_team["user"]["team_id"] = "T0EVIL"
    r = send(server, other_team)
    assert r.status_code == 403 and "workspace" in r.json()["error"], r.text
    moved = click(ACK, value)
    moved["container"] = {**moved["container"], "channel_id": "C0ELSEWHERE"}
    moved["channel"] = {"id": "C0ELSEWHERE", "name": "random"}
    r = send(server, moved)
    assert r.status_code == 403 and "not on herowatch's message" in r.json()["error"], r.text
    other_message = click(ACK, value)
    other_message["container"] = {**other_message["container"], "message_ts": "1780000999.000001"}
    other_message["message"] = {"ts": "1780000999.000001"}
    assert send(server, other_message).status_code == 403
    assert state(server) == before


def _deep(n: int) -> bytes:
    return urlencode({"payload": '{"type": "block_actions", "actions": ' + "[" * n + "]" * n + "}"}).encode()


ODD = {
    "deeply nested JSON": _deep(100_000),
    "nested inside the button value": body_of(click(ACK, "[" * 50_000 + "]" * 50_000)),
    "payload is a list": urlencode({"payload": "[1, 2]"}).encode(),
    "user is a list": body_of(click(ACK, user=["U0ALICE"])),
    "user id is a number": body_of(click(ACK, user={"id": 7})),
    "user name has a NUL": body_of(click(ACK, user={"id": "U0A", "username": "al\x00ice"})),
    "team is a string": body_of(click(ACK, team="T0HERO")),
    "container is a number": body_of(click(ACK, container=5)),
    "actions is an object": body_of(click(ACK, actions={"action_id": ACK})),
    "action_id is a number": body_of(click(ACK, actions=[{"action_id": 3, "value": "x"}])),
    "value is an object": body_of(click(ACK, actions=[{"action_id": ACK, "value": {"group_key": "g"}}])),
    "group_key is a number": body_of(click(ACK, json.dumps({"group_key": 12, "alert_ids": []}))),
    "alert ids are objects": body_of(click(ACK, json.dumps({"group_key": "g", "alert_ids": [{}]}))),
    "60 form fields": urlencode([("payload", "{}")] + [(f"f{i}", "x") for i in range(60)]).encode(),
    "payload twice": urlencode([("payload", "{}"), ("payload", "[]")]).encode(),
    "huge group key": body_of(click(ACK, json.dumps({"group_key": "g" * 3000}))),
}


def test_malformed_signed_payloads_get_4xx_never_500_and_change_nothing(server):
    before = state(server)
    for what, body in ODD.items():
        r = send(server, body)
        assert 400 <= r.status_code < 500, (what, r.status_code, r.text[:200])
        assert r.headers["content-type"].startswith("application/json"), what
    assert state(server) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)
payload_parts = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["block_actions", "view_submission"]) | json_values,
        "user": json_values,
        "team": json_values,
        "channel": json_values,
        "container": json_values,
        "message": json_values,
        "actions": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "action_id": st.sampled_from([ACK, SILENCE_1H]) | json_values,
                    "value": json_values.map(json.dumps) | json_values,
                },
            ),
            max_size=3,
        )
        | json_values,
    },
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=payload_parts)
def test_random_signed_payloads_never_get_a_5xx(server, payload):
    r = send(server, body_of(payload))
    assert r.status_code < 500, (payload, r.text[:200])
