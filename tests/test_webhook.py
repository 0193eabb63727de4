"""The webhook notifier against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from alerts.notifiers.webhook import WebhookNotifier
from tests.views_support import alert, group


class Hook(BaseHTTPRequestHandler):
    answers: list = []
    got: list = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.got.append((self.headers.get("Idempotency-Key"), json.loads(body)))
        code, headers = Hook.answers.pop(0) if Hook.answers else (200, {})
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hook():
    Hook.answers, Hook.got = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


N = group(
    alert(1, labels={"run": "hero-1"}, summary="hero-1: no new step for 20m", started_at=1.0),
    key="alert:1:firing:hook",
    receiver="hook",
)


def test_webhook_delivers_and_classifies_failures(hook):
    w = WebhookNotifier(hook, timeout=2)
    assert w.send(N).ok
    key, body = Hook.got[0]
    assert key == "alert:1:firing:hook"
    assert body["status"] == "firing" and body["alerts"][0]["summary"] == "hero-1: no new step for 20m"
    Hook.answers = [(429, {"Retry-After": "7"}), (503, {}), (404, {})]
    r = w.send(N)
    assert (r.ok, r.retry, r.retry_after) == (False, True, 7.0)
    assert w.send(N).retry is True
    r = w.send(N)
    assert (r.ok, r.retry) == (False, False) and "404" in r.error


def test_webhook_down_is_worth_retrying():
    r = WebhookNotifier("http://127.0.0.1:9/nothing", timeout=1).send(N)
    assert r.retry and "unreachable" in r.error


def test_a_nan_loss_alert_is_delivered_with_its_value_as_null(hook):
    """A NaN loss must not make the notification unsendable (JSON has no NaN): it goes out, value null."""
    nan = group(
        alert(2, "loss_nonfinite", value=float("nan"), threshold=float("inf"), summary="hero-1: loss is NaN"),
        key="alert:2:firing:hook",
        receiver="hook",
    )
    assert WebhookNotifier(hook, timeout=2).send(nan).ok
    _, body = Hook.got[0]
    sent = body["alerts"][0]
    assert sent["summary"] == "hero-1: loss is NaN" and sent["value"] is None and sent["threshold"] is None
