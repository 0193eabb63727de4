"""The HTTP API fuzzed from its own OpenAPI schema (schemathesis) against the real app over a service
with data (runs, a firing alert, a silence), with and without the bearer token: no 5xx, and every
response conforms to the schema (documented status code, content type and body)."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from alerts.clock import ManualClock
from monitor.settings import Settings
from monitor.web.app import create_app
from tests.helpers import make_service, tick

TOKEN = "fuzz-token-0123456789abcdef-0123456789"  # a fake: tests never hold real secrets
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
FUZZ = settings(
    max_examples=8,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as found, quickly
    suppress_health_check=list(HealthCheck),
)


def _service(tmp_path_factory, token: str | None):
    clock = ManualClock(1_780_000_000.0)
    url = f"sqlite:///{tmp_path_factory.mktemp('api') / 'herowatch.db'}"
    service, _ = make_service(url, clock)
    # (Settings(api_token=...) is silently ignored: the field only takes its alias HEROWATCH_API_TOKEN)
    # and a signing secret, so that /api/slack/interactions is exercised (without one: 503, by design)
    # and the host name schemathesis' ASGI client sends (any other name would get 400: allowed hosts)
    service.settings = Settings(
        database_url=url,
        HEROWATCH_API_TOKEN=token,
        SLACK_SIGNING_SECRET="fuzz-secret",
        allowed_hosts=["testserver"],
    )
    service.engine.resume()
    tick(service, clock, 40 * 60)  # hero-a stalls at 10m for 30m: a firing alert, then it resolves
    return service, clock


@pytest.fixture(scope="module")
def with_token(tmp_path_factory):
    service, clock = _service(tmp_path_factory, TOKEN)
    app = create_app(service)
    client = TestClient(app, base_url="http://localhost")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    silence = {"matchers": ['run="hero-b"'], "duration": 3600, "comment": "fuzz", "created_by": "t"}
    r = client.post("/api/silences", headers=auth, json=silence)
    assert r.status_code < 300, r.text
    alerts = client.get("/api/alerts", headers=auth).json()  # a silence and alerts: lists not empty
    assert alerts, "the service has alerts to fuzz against"
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    service.stop()


@pytest.fixture(scope="module")
def without_token(tmp_path_factory):
    service, clock = _service(tmp_path_factory, None)
    yield schemathesis.openapi.from_asgi("/openapi.json", create_app(service))
    service.stop()


# schemathesis' own pytest integration (schemathesis.pytest.from_fixture(...).parametrize()) fails under
# pytest 9 ("'Function' object has no attribute '_nodeid'"), so each operation's strategy is driven here.
def _runner(op, mode: GenerationMode, headers: dict[str, str] | None):
    @FUZZ
    @given(case=op.as_strategy(generation_mode=mode))
    def run(case):
        case.call_and_validate(headers=headers, checks=CHECKS)

    return run


def fuzz(schema, headers: dict[str, str] | None) -> None:
    failures: list[str] = []
    ops = [r.ok() for r in schema.get_all_operations()]
    assert len(ops) >= 10, [op.label for op in ops]
    for op in ops:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _runner(op, mode, headers)()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Unsatisfiable:  # e.g. no negative input exists for an operation without parameters
                continue
            except BaseException as exc:  # noqa: BLE001 - schemathesis' FailureGroup is a BaseExceptionGroup
                failures.append(f"{op.label} ({mode.value}): {type(exc).__name__}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)


def test_api_with_the_token(with_token):
    fuzz(with_token, {"Authorization": f"Bearer {TOKEN}"})


def test_api_with_a_wrong_token_while_one_is_configured(with_token):
    fuzz(with_token, {"Authorization": "Bearer wrong"})


def test_api_without_a_configured_token(without_token):
    fuzz(without_token, None)
