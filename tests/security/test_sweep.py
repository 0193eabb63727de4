"""Review 2, defect 4, swept: every route of the OpenAPI document and every dashboard route, with lone
surrogates, huge numbers and digits that are not ASCII in every path parameter, query parameter, JSON
field and form field, with credentials (so each request gets as deep as it can) and without. No answer
may be a 5xx, no traceback may reach the log, and the log may grow by at most one line a request (the
review saw 8.4 KB of log for one request to ``/silences/new?alert=²``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx
import pytest
from starlette.routing import Route

from alerts.clock import ManualClock
from monitor.settings import Settings
from monitor.web.app import create_app
from monitor.web.context import ApiContext
from tests.security.conftest import TOKEN
from tests.test_slack_interactions import body_of, click, signed

TEXT = {
    "lone surrogate": "\ud800",
    "surrogate pair halves swapped": "\udc00\ud800",
    "huge number": "9" * 40,
    "huge negative": "-" + "9" * 40,
    "past 64 bits": "18446744073709551616",
    "superscript two": "²",
    "circled one": "①",
    "arabic-indic three": "٣",
    "fullwidth twelve": "１２",
    "exponent": "1e999",
    "nan": "NaN",
    "right-to-left override": "a\u202eb",
    "next line": "a\u0085b",
}
NUMBERS = {"huge int": 10**40, "negative huge int": -(10**40), "largest float": 1.7976931348623157e308}
RAW_NUMBERS = ["1e999", "-1e999", "NaN", "Infinity", "1" * 5000]  # JSON Python reads as inf/nan/bigint
DASHBOARD_QUERY = ["alert", "created", "kind", "since", "axis", "part", "next"]
FORM_FIELDS = ["name", "token", "next", "matchers", "duration", "comment", "alert"]


def url_text(value: str) -> str:
    """``value`` percent-encoded as UTF-8, lone surrogates as the bytes they would be (invalid UTF-8)."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


@dataclass
class Sweep:
    server: object
    sent: int = 0
    worst: tuple[int, str] = (0, "")

    def send(self, client: httpx.Client, method: str, url: str, **kw) -> httpx.Response:  # noqa: ANN003
        r = client.request(method, url, follow_redirects=False, **kw)
        self.sent += 1
        assert r.status_code < 500, (
            f"{method} {url} {kw.get('content', '')!r:.200}: {r.status_code} {r.text[:300]}"
        )
        if r.status_code > self.worst[0]:
            self.worst = (r.status_code, f"{method} {url}")
        return r


def dashboard_routes() -> list[tuple[str, str]]:
    """(method, path) of every route the app serves that the OpenAPI document leaves out."""
    ctx = ApiContext(sessions=None, clock=ManualClock(0), settings=Settings(database_url="sqlite://"))
    app = create_app(ctx)
    out = []
    for included in app.router.routes:
        router = getattr(included, "original_router", None)  # an included APIRouter, or a route itself
        for route in router.routes if router is not None else [included]:
            if isinstance(route, Route) and not getattr(route, "include_in_schema", True):
                out += [(m, route.path) for m in sorted(route.methods or ()) if m != "HEAD"]
    assert len(out) >= 15, out
    return out


def fill(path: str, value: str, defaults: dict[str, str]) -> Iterator[str]:
    """``path`` with ``value`` in each of its parameters in turn (the others at their defaults)."""
    names = re.findall(r"{([^}:]+)(?::path)?}", path)
    for name in names:
        url = path
        for other in names:
            put = value if other == name else defaults.get(other, "1")
            url = url.replace(f"{{{other}}}", put).replace(f"{{{other}:path}}", put)
        yield url


def schema_of(spec: dict, op: dict) -> dict:
    content = (op.get("requestBody") or {}).get("content", {}).get("application/json", {})
    ref = content.get("schema", {}).get("$ref", "")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else {}


VALID_BODY = {
    "SilenceIn": {"matchers": ["run=hero-b"], "duration": "1h", "created_by": "alice"},
    "AckIn": {"by": "alice"},
    "IngestBody": {"run": "job-1", "samples": [], "events": []},
    "PollIn": {"run": "job-1", "node": "node-1", "wait": 0},  # a wrapper's long poll, not held open
}


@pytest.fixture
def sweep_server(servers):  # noqa: ANN201
    return servers()  # its own: the sweep creates silences and acknowledges alerts


def test_every_route_with_hostile_values_answers_4xx_never_5xx(sweep_server):
    server = sweep_server
    sweep = Sweep(server)
    lines = len(server.log_lines())
    authed = server.client(headers=server.bearer())
    anon = server.client()
    spec = authed.get("/openapi.json").json()
    defaults = {"alert_id": str(server.alert_id), "silence_id": "1", "run_id": "sim:hero-a/hero-a"}
    operations = [(m.upper(), p, op) for p, ops in spec["paths"].items() for m, op in ops.items()]
    assert len(operations) >= 15

    for method, path, op in operations:
        if path == "/api/slack/interactions":
            continue  # signed: below
        query = [q["name"] for q in op.get("parameters", []) if q["in"] == "query"]
        schema = schema_of(spec, op)
        body = VALID_BODY.get(schema.get("title", ""), None)
        json_kw = {"json": body} if body is not None else {}
        for value in TEXT.values():
            for url in fill(path, url_text(value), defaults):
                for client in (authed, anon):
                    sweep.send(client, method, url, **json_kw)
            base = next(fill(path, "1", defaults), path) if "{" in path else path
            for name in query:
                sweep.send(authed, method, f"{base}?{name}={url_text(value)}", **json_kw)
            if schema.get("properties"):
                assert body is not None, f"{method} {path}: add a valid {schema.get('title')} to VALID_BODY"
            for field in schema.get("properties", {}):
                good = body.get(field)
                within = good + value if isinstance(good, str) else [good[0] + value] if good else value
                for bad in (value, [value], {"x": value}, within):  # alone, and inside a valid value
                    content = json.dumps({**body, field: bad})
                    headers = {"Content-Type": "application/json"}
                    sweep.send(authed, method, base, content=content, headers=headers)
                    sweep.send(anon, method, base, content=content, headers=headers)
        for field in schema.get("properties", {}):
            for number in NUMBERS.values():
                sweep.send(authed, method, base, json={**body, field: number})
            for raw in RAW_NUMBERS:
                content = json.dumps({**body, field: "@"}).replace('"@"', raw)
                sweep.send(
                    authed, method, base, content=content, headers={"Content-Type": "application/json"}
                )

    c = server.client(headers={"Origin": server.url})
    page = c.post("/login", data={"name": "sweeper", "token": TOKEN, "next": "/silences/new"})
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for method, path in dashboard_routes():
        for value in TEXT.values():
            for url in fill(path, url_text(value), defaults) if "{" in path else [path]:
                if method == "GET":
                    q = "&".join(f"{n}={url_text(value)}" for n in DASHBOARD_QUERY)
                    for client in (c, anon, authed):
                        sweep.send(client, "GET", f"{url}?{q}")
                    continue
                for field in FORM_FIELDS:
                    fields = f"csrf={csrf}&matchers=run%3Dhero-b&duration=1h&{field}={url_text(value)}"
                    if path != "/logout":  # the session goes on to the next form
                        sweep.send(c, "POST", url, content=fields, headers=form)
                    sweep.send(anon, "POST", url, content=fields, headers={**form, "Origin": server.url})
    assert c.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303

    for value in TEXT.values():  # Slack: every text field of a signed click, and the headers
        payload = click()
        payload["user"]["username"] = payload["container"]["message_ts"] = value
        encode = body_of(payload)
        sweep.send(
            anon, "POST", "/api/slack/interactions", content=encode, headers=signed(encode, ts=server.now)
        )
        junk = {**signed(encode, ts=server.now), "X-Slack-Request-Timestamp": value}
        raw = [(k.encode(), v.encode("utf-8", "surrogatepass")) for k, v in junk.items()]
        sweep.send(anon, "POST", "/api/slack/interactions", content=encode, headers=raw)

    logged = server.log_lines()[lines:]
    print(
        f"\nswept {sweep.sent} requests over {len(operations)} API operations and "
        f"{len(dashboard_routes())} dashboard routes: highest status {sweep.worst[0]} "
        f"({sweep.worst[1][:80]}); {len(logged)} log lines"
    )
    kinds = sorted({re.sub(r"'[^']*'|\d+", "_", line)[:120] for line in logged})
    print("what was logged, once each:\n  " + "\n  ".join(kinds))
    tracebacks = [line for line in logged if "Traceback" in line or "unhandled error" in line]
    assert not tracebacks, "\n".join(logged[:80])
    assert len(logged) <= sweep.sent, "at most one line of log a request"
    assert authed.get("/healthz").status_code == 200


def test_url_text_keeps_what_a_browser_cannot_send():
    assert url_text("\ud800") == "%ED%A0%80" and url_text("²") == "%C2%B2" and url_text("a b") == "a%20b"
