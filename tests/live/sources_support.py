"""A live set-up for the sources beyond W&B: ``herowatch serve`` as a real process with one watch (push,
TensorBoard or MLflow), paging into the Slack stand-in. The watch's source section and rule overrides
are the test's; everything else (the channel, the route, the secrets) is here."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.live.support import API_TOKEN, CHANNEL, Herowatch, wait_for
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

INGEST_TOKEN = "ingest-token-" + "fedcba9876543210" * 2  # fake, 45 characters


class SourceStack:
    def __init__(self, tmp: Path, slack: SlackStandin) -> None:
        self.tmp, self.slack = tmp, slack
        self.procs: list[Herowatch] = []
        self.extra_env: dict[str, str] = {}

    def write_config(self, source: str, rules: str, poll: str = "1s") -> Path:
        cfg = self.tmp / "herowatch.yaml"
        cfg.write_text(
            f"""
watch:
  - name: live
    poll_interval: {poll}
{source}
    rules:
      overrides:
{rules}
receivers:
  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{self.slack.api_url}', timeout: 5s}}
route: {{receiver: oncall, group_by: [run], group_wait: 0s, group_interval: 1s, repeat_interval: 4h}}
"""
        )
        return cfg

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HEROWATCH_DATABASE_URL": f"sqlite:///{self.tmp / 'hw.db'}",
            "HEROWATCH_API_TOKEN": API_TOKEN,
            "HEROWATCH_INGEST_DIR": str(self.tmp / "ingest"),
            "HERO_INGEST_TOKEN": INGEST_TOKEN,
            "SLACK_BOT_TOKEN": DEFAULT_TOKEN,
            **self.extra_env,
        }

    def serve(self, config: Path) -> Herowatch:
        hw = Herowatch(config, self.env(), self.tmp / f"herowatch-{len(self.procs)}.log")
        self.procs.append(hw)
        wait_for(hw.ready, 60, "herowatch serve to answer")
        return hw

    def pages(self, *words: str) -> list[str]:
        return [p for p in self.slack.pages(CHANNEL) if all(w in p for w in words)]


@contextmanager
def source_stack(tmp: Path) -> Iterator[SourceStack]:
    with SlackStandin(channels=[CHANNEL]) as slack:
        stack = SourceStack(tmp, slack)
        try:
            yield stack
        finally:
            for hw in stack.procs:
                if hw.proc.poll() is None:
                    hw.proc.kill()
                    hw.proc.wait(10)
