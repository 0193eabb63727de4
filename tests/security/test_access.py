"""Row 8: /readyz answered everyone, source error texts included, with reads protected. Row 9: 100
wrong logins in 0.7 s went unthrottled (and a 6-character token was accepted: test_config_and_demo).
Row 10: a request for ``Host: attacker.example`` was served, so DNS rebinding could read the API."""

from __future__ import annotations

import time

import pytest

from monitor.web.edge import HostCheck
from monitor.web.throttle import LoginThrottle
from tests.security.conftest import HOST, PROXY, TOKEN
from tests.security.wire import raw_request


def test_readyz_tells_probes_the_verdict_and_only_readers_the_details(server):
    anon = server.client().get("/readyz")
    assert anon.status_code in (200, 503)
    assert anon.json()["checks"] == {} and anon.json()["reasons"] == [], anon.text
    full = server.client(headers=server.bearer()).get("/readyz")
    assert full.status_code == anon.status_code
    assert full.json()["checks"]["database"] == "ok" and "source:sim" in full.json()["checks"]
    assert server.client().get("/healthz").json()["status"] == "ok", "the bare liveness probe stays open"
    assert server.client().get("/api/runs").status_code == 401


def test_wrong_logins_are_throttled_per_client(server):
    attacker = server.client(local_address="127.0.0.5")
    codes = []
    t0 = time.monotonic()
    for i in range(100):
        r = attacker.post("/login", data={"name": "x", "token": f"guess-{i}"}, headers={"Origin": server.url})
        codes.append(r.status_code)
    print(
        f"\n100 wrong logins in {time.monotonic() - t0:.2f} s: {codes.count(401)} checked, "
        f"{codes.count(429)} refused unchecked"
    )
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}
    right = attacker.post("/login", data={"name": "x", "token": TOKEN}, headers={"Origin": server.url})
    assert right.status_code == 429 and int(right.headers["retry-after"]) > 0, "not even the right token"
    other = server.client(local_address="127.0.0.6")
    ok = other.post("/login", data={"name": "y", "token": TOKEN}, headers={"Origin": server.url})
    assert ok.status_code == 200, "another client is not locked out"


def test_forwarded_for_counts_only_from_the_trusted_proxy(server):
    """An attacker cannot dodge the throttle by making up X-Forwarded-For; the proxy's word counts."""
    spoofer = server.client(local_address="127.0.0.7")
    for i in range(12):
        spoofer.post(
            "/login",
            data={"name": "x", "token": "nope"},
            headers={"Origin": server.url, "X-Forwarded-For": f"198.51.100.{i}"},
        )
    blocked = spoofer.post("/login", data={"name": "x", "token": TOKEN}, headers={"Origin": server.url})
    assert blocked.status_code == 429
    proxy = server.client(local_address=PROXY)
    for _ in range(12):
        proxy.post(
            "/login",
            data={"name": "x", "token": "nope"},
            headers={"Origin": server.url, "X-Forwarded-For": "198.51.100.99"},
        )
    someone_else = proxy.post(
        "/login",
        data={"name": "y", "token": TOKEN},
        headers={"Origin": server.url, "X-Forwarded-For": "198.51.100.100"},
    )
    assert someone_else.status_code == 200, "behind the proxy, clients are told apart"


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("attacker.example", False),
        ("herowatch.test.attacker.example", False),
        ("localhost.attacker.example:8080", False),
        (HOST, True),
        (HOST.upper() + ".", True),
        (f"{HOST}:8443", True),
        ("127.0.0.1", True),
        ("[::1]:8080", True),
        ("10.1.2.3", True),
        ("localhost", True),
    ],
)
def test_only_allowed_host_names_and_ip_addresses_are_served(server, host, served):
    status, body = raw_request(
        server.port,
        f"GET /api/runs HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    if served:
        assert status == 200, (status, body[:200])
    else:
        assert status == 400 and b"HEROWATCH_ALLOWED_HOSTS" in body, (status, body[:200])


def test_host_rules():
    check = HostCheck(None, ["herowatch.example.com", "*.corp.example"])
    assert check.allows("herowatch.example.com") and check.allows("a.b.corp.example:80")
    assert not check.allows("corp.example.evil") and not check.allows("evilcorp.example")
    assert check.allows("192.0.2.1:8080") and check.allows("[2001:db8::1]")
    assert HostCheck(None, ["*"]).allows("anything.example")
    assert not HostCheck(None, []).allows("herowatch.example.com"), "nothing but IPs and localhost by default"


def test_the_throttle_forgets_after_its_window_and_its_memory_is_bounded():
    now = [0.0]
    t = LoginThrottle(limit=3, window=60, max_clients=2, now=lambda: now[0])
    for _ in range(3):
        t.failed("a")
    assert t.retry_after("a") == 60
    now[0] = 30
    assert t.retry_after("a") == 30
    now[0] = 60
    assert t.retry_after("a") is None, "the oldest failure left the window"
    t.failed("b")
    t.failed("c")
    assert len(t._failures) == 2, "at most max_clients addresses are remembered"
