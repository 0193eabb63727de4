"""Row 1: a 300 MB body, without a token or a signature, to the three endpoints that take a body. It
used to be read whole before the 401 (the process grew from 130 MB to 1 GB; the pod limit is 1 GiB).
Now the server answers 413 after at most its limit, and its memory stays within a few MB; and (review 2)
the API checks credentials before it reads a body at all, so without them the answer is a 401 at once."""

from __future__ import annotations

import pytest

from tests.security.conftest import TOKEN
from tests.security.wire import MB, Peak, stream_body

HUGE = 300 * MB
TARGETS = {
    "/api/silences": {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    "/api/slack/interactions": {"Content-Type": "application/x-www-form-urlencoded"},
    "/login": {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://127.0.0.1"},
}
MAX_GROWTH_MB = 40  # the server's RSS may grow by this much at most while refusing 300 MB


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "chunked"])
@pytest.mark.parametrize("path", list(TARGETS))
def test_a_300_mb_body_is_refused_with_413_and_the_server_stays_small(server, path, declare):
    with Peak(server.rss_mb) as rss:
        r = stream_body(server.port, path, TARGETS[path], HUGE, declare=declare)
    growth = rss.peak - rss.base
    print(
        f"\n{path} ({'declared' if declare else 'chunked'}): {r.status} after {r.sent / MB:.1f} MB sent of "
        f"{HUGE / MB:.0f} MB in {r.seconds:.2f} s; server RSS {rss.base:.0f} -> peak {rss.peak:.0f} MB "
        f"(+{growth:.1f} MB, {growth / MAX_GROWTH_MB:.2f} of the {MAX_GROWTH_MB} MB bound)"
    )
    assert r.status == 413, (r.status, r.body[:300])
    assert b"request body over" in r.body
    assert r.sent < 64 * MB, f"the server let {r.sent / MB:.0f} MB in before answering"
    assert growth < MAX_GROWTH_MB
    assert server.client().get("/healthz").status_code == 200, "and it still serves"


@pytest.mark.parametrize(
    ("path", "limit"),
    [("/api/silences", 1 << 20), ("/api/slack/interactions", 256 << 10), ("/login", 16 << 10)],
)
def test_each_endpoint_has_its_own_limit_and_a_body_just_under_it_is_read(server, path, limit):
    under = stream_body(server.port, path, TARGETS[path], limit - 1024, declare=True)
    over = stream_body(server.port, path, TARGETS[path], limit + 1, declare=True)
    assert under.status != 413 and under.status < 500, (under.status, under.body[:200])
    assert over.status == 413, over.body[:200]
    assert str(limit).encode() in over.body


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "chunked"])
def test_without_credentials_a_300_mb_body_is_not_read_at_all(server, declare):
    with Peak(server.rss_mb) as rss:
        r = stream_body(server.port, "/api/silences", {"Content-Type": "application/json"}, HUGE, declare)
    print(f"\nno token, {'declared' if declare else 'chunked'}: {r.status} after {r.sent / MB:.1f} MB sent")
    assert r.status == (413 if declare else 401), (r.status, r.body[:300])  # a declared size: refused first
    assert r.sent < 64 * MB and rss.peak - rss.base < MAX_GROWTH_MB
