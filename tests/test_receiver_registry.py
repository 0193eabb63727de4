"""Receivers register themselves: a toy receiver kind defined and registered here, in the test, is
accepted by config loading (with file:line:field errors for its own fields), built by the service with
its secret from the environment, and gets notifications (and refreshes, since it asks for them),
without an edit anywhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from alerts.clock import ManualClock
from alerts.notifiers import BuildContext, ReceiverConfig, SendResult, register
from alerts.notifiers.registry import kinds, unregister
from monitor.config import ConfigError, parse_config
from monitor.service import build_service
from monitor.settings import Settings
from tests.helpers import tick

NOW = 1_780_000_000.0


class ToyReceiver(ReceiverConfig):
    """A pigeon loft: notifications go to ``inbox``."""

    kind: Literal["toy"]
    inbox: str = Field(min_length=1)
    refresh: float | None = None


class ToyNotifier:
    def __init__(self, inbox: str, token: str | None, refresh: float | None) -> None:
        self.inbox, self.token, self.got = inbox, token, []
        if refresh:
            self.refresh_every = refresh

    def send(self, view):
        self.got.append(view)
        return SendResult.sent()


@pytest.fixture
def toy():
    built: list[ToyNotifier] = []

    def build(config: ToyReceiver, context: BuildContext) -> ToyNotifier:
        notifier = ToyNotifier(config.inbox, context.secret("TOY_TOKEN"), config.refresh)
        built.append(notifier)
        return notifier

    register("toy", ToyReceiver, build)
    yield built
    unregister("toy")


CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      checkpoint_every: 50
      checkpoint_pause: 60s
      incidents:
        - {kind: stall, at: 10m, duration: 30m}
receivers:
  - name: loft
    kind: toy
    inbox: north-tower
    refresh: 120
route: {receiver: loft}
"""


def test_a_kind_registered_here_is_accepted_by_config_loading_with_its_own_errors(toy):
    cfg = parse_config(CONFIG, "hw.yaml")
    assert isinstance(cfg.receivers[0], ToyReceiver) and cfg.receivers[0].inbox == "north-tower"
    bad = CONFIG.replace("inbox: north-tower", "inbox: ''").replace(
        "refresh: 120", "refresh: soon\n    wings: 2"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(bad, "hw.yaml")
    text = str(err.value)
    assert "hw.yaml:15: receivers[0].inbox: String should have at least 1 character" in text, text
    assert (
        "hw.yaml:16: receivers[0].refresh" in text and "hw.yaml:17: receivers[0].wings: unknown field" in text
    )


def test_the_service_builds_it_and_it_gets_the_page_and_the_refreshes(toy, db_url, monkeypatch):
    monkeypatch.setenv("TOY_TOKEN", "seed-corn")
    clock = ManualClock(NOW)
    cfg = parse_config(CONFIG, "hw.yaml")
    service = build_service(cfg, Settings(database_url=db_url), clock, base_dir=Path("."), auto_migrate=True)
    (loft,) = toy
    assert service.dispatcher.notifiers == {"loft": loft} and loft.token == "seed-corn"
    assert service.refresh == {"loft": 120.0}, "it asked to be re-told what fires"
    service.engine.resume()
    tick(service, clock, 30 * 60)
    assert [(v.kind, v.news.alertname) for v in loft.got] == [("open", "progress_stalled")]
    for _ in range(3):
        clock.advance(121)
        service.plan_repeats()
        service.dispatcher.run_once()
    assert [v.kind for v in loft.got] == ["open", "refresh", "refresh", "refresh"]
    assert not any(v.notifies for v in loft.got[1:]), "a refresh notifies nobody"
    service.stop()


def test_without_its_registration_the_kind_is_unknown():
    assert "toy" not in kinds()
    with pytest.raises(ConfigError) as err:
        parse_config(CONFIG, "hw.yaml")
    assert "hw.yaml:14: receivers[0].kind: unknown receiver kind 'toy'; known: alertmanager, console" in str(
        err.value
    )


def test_two_receivers_with_one_name_are_pointed_at():
    text = "receivers:\n  - {name: a}\n  - {name: b, kind: dashboard}\n  - {name: a, kind: dashboard}\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text + "route: {receiver: a}\n", "hw.yaml")
    assert "hw.yaml:4: receivers[2].name: 'a' is already the name of receivers[0]" in str(err.value)


class LedgerReceiver(ReceiverConfig):
    kind: Literal["ledger"]


def test_a_kind_registered_without_a_notifier_is_recorded_never_sent(db_url):
    from monitor.storage.models import Alert, Notification

    register("ledger", LedgerReceiver, None)
    try:
        text = CONFIG.replace("kind: toy\n    inbox: north-tower\n    refresh: 120", "kind: ledger")
        clock = ManualClock(NOW)
        service = build_service(
            parse_config(text, "hw.yaml"), Settings(database_url=db_url), clock, auto_migrate=True
        )
        assert service.dispatcher.notifiers == {}
        service.engine.resume()
        tick(service, clock, 30 * 60)
        with service.sessions() as s:
            assert s.query(Alert).filter_by(state="firing").count() == 1, "recorded"
            assert s.query(Notification).count() == 0, "never queued"
        service.stop()
    finally:
        unregister("ledger")
