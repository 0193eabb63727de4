"""Shared by the W&B source tests: the stand-in fixture and a source polled the way the engine polls it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from monitor.settings import Settings
from monitor.sources.base import PollResult, Target
from monitor.sources.wandb_config import WandbTarget
from monitor.sources.wandb_source import WandbSource
from tests.standins.wandb_server import WandbStandin

KEY = "hwtest0" + "f3a9c1d7e5b2" * 4  # fake, 55 characters (the client wants 40 or more)
ENTITY, PROJECT = "hero-team", "llm"


@pytest.fixture(name="server")
def wandb_standin_fixture() -> Iterator[WandbStandin]:
    """A fresh stand-in per test (the client's sidecar starts once per process, signing in is cheap)."""
    with WandbStandin(KEY, entity=ENTITY) as s:
        yield s
        assert s.unknown_operations == [], "the client sent operations the stand-in does not know"


class Watcher:
    """A source polled the way the engine does it: cursors kept only from successful polls."""

    def __init__(self, server: WandbStandin, key: str | None = KEY, **cfg: object) -> None:
        opts = {
            "entity": ENTITY,
            "project": PROJECT,
            "base_url": server.url,
            "timeout": 2,
            "retries": 0,
            **cfg,
        }
        self.server = server
        self.cfg = WandbTarget.model_validate(opts)
        self.source = WandbSource(Settings(WANDB_API_KEY=key))
        self.waits: list[float] = []  # retry backoffs, recorded instead of slept
        self.source.sleep = self.waits.append
        self.cursors: dict[str, dict] = {}  # by herowatch's run id, as the engine stores them

    def cursor(self, run: str) -> dict:
        """The stored cursor of the run with W&B id ``run``."""
        return self.cursors[wid(run, self.cfg.project)]

    def poll(self) -> PollResult:
        self.server.reset_requests()
        res = self.source.poll(
            Target("hero", self.cfg, {"team": "pretrain"}), dict(self.cursors), self.server.clock
        )
        json.dumps(res.cursors)  # cursors are stored as JSON
        if res.error is None:
            self.cursors.update(res.cursors)
        return res


def wid(run: str, project: str = PROJECT) -> str:
    """herowatch's id of the stand-in's W&B run ``run`` (monitor.run_ids)."""
    return f"wandb:{ENTITY}/{project}/{run}"


def steps(res: PollResult, run: str) -> list[int]:
    """The steps read of the run with W&B id ``run``."""
    return [s.step for s in res.samples if s.run == wid(run) and s.step is not None]


def state_of(res: PollResult, run: str) -> str | None:
    return next(s.state for s in res.samples if s.run == wid(run) and s.step is None)
