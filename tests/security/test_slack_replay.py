"""Review 2, defect 1: the replay memory keyed on the first ``X-Slack-Signature`` header while the signature
check used the last, so a captured "Silence 4h" click replayed behind an extra junk signature header got
200 every time (a new silence each); a junk leading ``X-Slack-Request-Timestamp: abc`` gave a 500, and
``inf`` was remembered forever, so the memory's cap could be filled until every click got 429. Defect 4:
a lone surrogate in a signed payload field gave a 500. Now a repeated header is a 400, a timestamp that
is not a whole number of seconds a 401, every entry of the memory leaves by time, a full memory never
refuses a valid click, and odd text in a signed payload is a 400."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import httpx
import pytest

from alerts.notifiers.slack.interactions import ACK, SILENCE_4H, encode_button_value
from tests.security.conftest import SECRET
from tests.test_slack_interactions import body_of, click, signed

URL = "/api/slack/interactions"


def silences(server) -> list[dict]:
    return server.client(headers=server.bearer()).get("/api/silences").json()


def expire_all(server) -> None:
    api = server.client(headers=server.bearer())
    for s in api.get("/api/silences", params={"state": "active"}).json():
        api.delete(f"/api/silences/{s['id']}")


def post(server, body: bytes, headers: list[tuple[str, str]]) -> httpx.Response:
    """POST with the headers in this order, repeated names included (as an attacker sends them); values
    as UTF-8 bytes (a header may carry any)."""
    raw = [(k.encode(), v.encode("utf-8")) for k, v in headers]
    return server.client().post(URL, content=body, headers=httpx.Headers(raw))


def captured(server) -> tuple[bytes, dict[str, str]]:
    """A genuine "Silence 4h" click as a proxy log would have kept it."""
    body = body_of(click(SILENCE_4H, encode_button_value(server.group_key, [server.alert_id])))
    return body, signed(body, ts=server.now, secret=SECRET)


def test_a_replay_behind_a_junk_signature_header_is_a_400_and_silences_nothing_twice(server):
    body, h = captured(server)
    before = len(silences(server))
    first = post(server, body, list(h.items()))
    assert first.status_code == 200, first.text
    assert len(silences(server)) == before + 1
    codes = []
    for i in range(5):
        junk = [("X-Slack-Signature", f"v0={i:064x}")]
        r = post(server, body, junk + list(h.items()))  # the junk one first, the real one last
        codes.append(r.status_code)
        assert r.status_code == 400 and "x-slack-signature sent 2 times" in r.json()["error"], r.text
    plain = post(server, body, list(h.items()))
    print(f"\nreplays behind a junk signature header: {codes}; plain replay: {plain.status_code}")
    assert plain.status_code == 409
    assert len(silences(server)) == before + 1, "one click, one silence"
    expire_all(server)


@pytest.mark.parametrize("junk", ["abc", "inf", "nan", "-1", "1e9", "１７８０"])
def test_a_junk_leading_timestamp_header_is_a_400_not_a_500(server, junk):
    body, h = captured(server)
    before = silences(server)
    r = post(server, body, [("X-Slack-Request-Timestamp", junk), *h.items()])
    assert r.status_code == 400 and "x-slack-request-timestamp sent 2 times" in r.json()["error"], r.text
    assert silences(server) == before


@pytest.mark.parametrize(
    "ts", ["abc", "inf", "-inf", "nan", "1e9", "1780001800.5", "+1780001800", "１７８０", ""]
)
def test_a_timestamp_that_is_not_a_whole_number_of_seconds_is_a_401(server, ts):
    body, h = captured(server)
    r = post(server, body, [("X-Slack-Request-Timestamp", ts), ("X-Slack-Signature", h["X-Slack-Signature"])])
    assert r.status_code == 401, (ts, r.status_code, r.text)


def test_the_memory_never_fills_with_entries_that_do_not_expire(server):
    """The attack of the review: entries that never leave, sent until the cap is reached. A refused
    request is never remembered, so the memory does not grow, and a genuine click still works."""
    body, h = captured(server)
    before = len(silences(server))
    for ts in ("inf", "9" * 30, "abc"):
        assert post(server, body, [("X-Slack-Request-Timestamp", ts), *h.items()]).status_code == 400
    fresh = body_of(click(SILENCE_4H, encode_button_value(server.group_key, [])) | {"trigger_id": "t-fresh"})
    r = post(server, fresh, list(signed(fresh, ts=server.now, secret=SECRET).items()))
    assert r.status_code == 200, r.text
    assert len(silences(server)) == before + 1
    expire_all(server)


@pytest.mark.parametrize(
    "where",
    ["user name", "user id", "group key", "channel", "team", "message ts", "alert id"],
)
def test_a_lone_surrogate_in_a_signed_payload_field_is_a_400(server, where):
    value = encode_button_value(server.group_key, [server.alert_id])
    payload = click(SILENCE_4H, value)
    bad = "x\ud800y"
    if where == "user name":
        payload["user"]["username"] = bad
    elif where == "user id":
        payload["user"]["id"] = bad
    elif where == "group key":
        payload["actions"][0]["value"] = json.dumps({"group_key": bad, "alert_ids": []})
    elif where == "channel":
        payload["container"]["channel_id"] = bad
        payload["channel"] = {"id": bad}
    elif where == "team":
        payload["team"] = {"id": bad}
        payload["user"]["team_id"] = bad
    elif where == "message ts":
        payload["container"]["message_ts"] = bad
    else:  # the ids an Acknowledge button carries (herowatch's own: odd ones are ignored, the group acts)
        payload = click(ACK, json.dumps({"group_key": server.group_key, "alert_ids": [bad, "²", "①"]}))
    body = urlencode({"payload": json.dumps(payload)}).encode()  # \ud800 as JSON writes it: an escape
    before = silences(server)
    lines = len(server.log_lines())
    r = post(server, body, list(signed(body, ts=server.now, secret=SECRET).items()))
    logged = server.log_lines()[lines:]
    assert r.status_code < 500, (where, r.status_code, r.text)
    assert not any("Traceback" in line for line in logged), logged
    if where == "alert id":
        assert r.status_code == 200 and "Acknowledged" in r.json()["text"], r.text
        return
    assert r.status_code in (400, 403), (where, r.status_code, r.text)
    assert silences(server) == before
    assert len(logged) <= 1, logged
