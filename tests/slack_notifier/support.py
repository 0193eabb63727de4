"""What the Slack notifier tests share: the token and channel of the stand-in, a notifier pointed at it,
alerts and group notifications to send, a loss series to plot, and helpers to read refs and blocks."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from alerts.notifiers.slack.notifier import SlackNotifier
from alerts.views import AlertView, GroupView, Plot
from tests.standins.slack import SlackStandin

TOKEN = "xoxb-test-0000-notifier"  # fake
CH = "C0ALERTS"
T0 = 1_780_000_000.0
RUN = "llama-70b"
WANDB = "https://wandb.example/hero/llama/runs/abc123"
DASH = "https://herowatch.example/runs/llama-70b"
RUNBOOK = "https://runbooks.example/loss-spike"


def make(slack: SlackStandin, **options) -> SlackNotifier:
    opts = {"channel": CH, "token": TOKEN, "base_url": slack.api_url, "timeout": 2.0}
    opts.update(options)
    return SlackNotifier(**opts)


def alert(id: int = 7, **over) -> dict:
    a = {
        "id": id,
        "alertname": "LossSpike",
        "severity": "critical",
        "state": "firing",
        "labels": {"alertname": "LossSpike", "run": RUN},
        "summary": "Training loss jumped to 5.1",
        "description": "train/loss rose 150% within 20 steps.",
        "runbook_url": RUNBOOK,
        "value": 5.1,
        "threshold": 4.0,
        "step": 1201,
        "started_at": T0,
        "ended_at": None,
        "acked_by": None,
        "silenced": None,
        "metric": "train/loss",
    }
    a.update(over)
    return a


def loss_series() -> Plot:
    xs = list(range(1000, 1300))
    ys = [2.0 + 0.1 * math.sin(i / 5) + (3.0 if i > 1200 else 0.0) for i in xs]
    return Plot(
        kind="metric",
        title=f"train/loss · run {RUN}",
        caption="train/loss by step around step 1201; the threshold 4 as a dashed red line",
        x=xs,
        y=ys,
        y_label="train/loss",
        event_x=1201,
        threshold=4.0,
    )


def note(
    key: str,
    kind: str = "open",
    alerts: Sequence[dict] | None = None,
    root_ref: str | None = None,
    series: Plot | None = None,
    links: dict | None = None,
    actions: bool = True,
    changed: Sequence[int] | None = None,
) -> GroupView:
    alerts = list(alerts) if alerts is not None else [alert()]
    views = tuple(AlertView.from_dict(a) for a in alerts)
    return GroupView(
        key=key,
        receiver="slack",
        kind=kind,
        group_key="slack:0123456789abcdef",
        group_labels={"run": RUN},
        alerts=views,
        changed=frozenset(str(c) for c in (changed if changed is not None else [a["id"] for a in alerts])),
        root_ref=root_ref,
        links={"wandb_url": WANDB, "dashboard_url": DASH} if links is None else links,
        actions=actions,
        plot=series,
    )


def open_group(notifier: SlackNotifier, key: str = "n-open", **kw) -> str:
    result = notifier.send(note(key, **kw))
    assert result.ok, result
    return result.ref


def root_ts(ref: str) -> str:
    return ref.split(":", 1)[1]


def texts(blocks) -> str:
    return json.dumps(blocks, ensure_ascii=False)
