"""Two runs, one name: an SFT run and a pretraining run, both qwen-7b-v3 (and both with W&B id v3) in two
projects of the W&B stand-in, read by the real wandb client. They are two runs everywhere: two rows, two
pages, and an incident on one pages only that one, in its own Slack thread (the real slack-sdk against
the Slack stand-in) that names its project; the other's incident opens a second thread.
The whole service in-process on a ManualClock."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from alerts.clock import ManualClock
from tests.dashboard.support import client
from tests.faults.support import alerts, cycle, service_for
from tests.kinds_support import STEP_SECONDS, levanter, log_steps, sft
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, wandb_standin_fixture  # noqa: F401 - the server fixture

CHANNEL = "C0ALERTS"
SFT, PRE = f"wandb:{ENTITY}/sft/v3", f"wandb:{ENTITY}/pretrain/v3"


def config(wandb: str, slack: str) -> str:
    target = f"entity: {ENTITY}, base_url: '{wandb}', timeout: 5s, retries: 0"
    return f"""
watch:
  - name: sft
    poll_interval: 60s
    wandb: {{{target}, project: sft}}
  - name: pretrain
    poll_interval: 60s
    wandb: {{{target}, project: pretrain}}
rules: {{packs: [hero, sft]}}
receivers: [{{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack}', timeout: 5s}}]
route: {{receiver: oncall, group_wait: 0s, group_interval: 1m}}
"""


def text_of(message) -> str:  # noqa: ANN001
    return message.text + json.dumps(message.blocks or [])


def test_two_runs_named_alike_are_two_rows_two_pages_and_two_threads(
    server: WandbStandin, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    server.add_run("sft", "v3", display_name="qwen-7b-v3")
    server.add_run("pretrain", "v3", display_name="qwen-7b-v3")
    clock = ManualClock(server.clock)
    broken: set[str] = set()
    step = 1

    def minutes(n: int) -> None:  # n minutes of training, two steps a minute, polled and delivered
        nonlocal step
        for _ in range(n):
            t0 = clock.time()
            log_steps(server, "sft", "v3", sft, step, step + 2, t0, nan="sft" in broken)
            log_steps(server, "pretrain", "v3", levanter, step, step + 2, t0, nan="pretrain" in broken)
            step += 2
            clock.advance(2 * STEP_SECONDS)
            server.clock = clock.time()
            assert not any(r.errors for r in cycle(service))

    with SlackStandin(channels=[CHANNEL]) as slack:
        service, _ = service_for(config(server.url, slack.api_url), f"sqlite:///{tmp_path / 'hw.db'}", clock,
                                 console=False, WANDB_API_KEY=KEY)  # fmt: skip
        try:
            minutes(15)
            assert alerts(service) == [] and slack.roots(CHANNEL) == [], "healthy runs page nobody"
            api = client(service)
            rows = {r["id"]: r for r in api.get("/api/runs").json()}
            assert set(rows) == {SFT, PRE}, "two runs, not one"
            assert {r["display_name"] for r in rows.values()} == {"qwen-7b-v3"}
            assert rows[SFT]["title"] == f"qwen-7b-v3 ({ENTITY}/sft)" and rows[SFT]["kind"] == "sft"
            assert (
                rows[PRE]["title"] == f"qwen-7b-v3 ({ENTITY}/pretrain)" and rows[PRE]["kind"] == "pretraining"
            )
            for run, project in ((SFT, "sft"), (PRE, "pretrain")):
                page = api.get("/runs/" + quote(run, safe=""))
                assert page.status_code == 200 and f"{ENTITY}/{project}</span>" in page.text
            ambiguous = api.get("/api/runs/qwen-7b-v3")
            assert ambiguous.status_code == 409 and SFT in ambiguous.json()["error"]

            broken.add("sft")  # the SFT run's loss goes NaN
            minutes(2)
            paged = {a.run_id for a in alerts(service) if a.state == "firing"}
            assert paged == {SFT}, "only the broken run pages"
            (sft_root,) = slack.roots(CHANNEL)
            assert f"qwen-7b-v3 ({ENTITY}/sft)" in text_of(sft_root), text_of(sft_root)
            assert f"{ENTITY}/pretrain" not in text_of(sft_root)
            assert "wandb:" not in text_of(sft_root), "people read the run's name, not herowatch's id"

            broken.add("pretrain")  # then the pretraining run's
            minutes(2)
            roots = slack.roots(CHANNEL)
            assert len(roots) == 2, "its own thread, not a reply in the SFT run's"
            pre_root = next(m for m in roots if m.ts != sft_root.ts)
            assert f"qwen-7b-v3 ({ENTITY}/pretrain)" in text_of(pre_root)
            assert {a.run_id for a in alerts(service) if a.state == "firing"} == {SFT, PRE}
            for reply in slack.thread(CHANNEL, sft_root.ts):
                assert f"{ENTITY}/pretrain" not in text_of(reply), "nothing of the other run in this thread"
        finally:
            service.stop()
