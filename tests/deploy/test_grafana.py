"""deploy/grafana: the dashboard of herowatch's own /metrics and its provisioning in the compose stack.

The dashboard's PromQL is checked against the real thing: a running herowatch (uvicorn, its scheduler
polling a simulated run that stalls, a Slack receiver on the Slack stand-in) scraped by a real
Prometheus. Every metric a panel uses must be exported, and every panel's query must evaluate and
return data.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
import yaml

from alerts.clock import ScaledClock
from monitor.config.loader import parse_config
from monitor.service import build_service
from monitor.settings import Settings
from monitor.web.app import create_app
from tests.deploy.support import DEPLOY
from tests.prometheus_server import PrometheusServer, free_port, wait_for
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "herowatch.json"
METRIC = re.compile(r"\bherowatch_[a-z0-9_]+")
MAY_BE_EMPTY = {"Pending by rule"}  # nothing is pending at a given moment, often


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target, Grafana's variables replaced as Grafana would."""
    out = []
    for p in dashboard()["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$__rate_interval", "30s").replace("$job", "herowatch")
            out.append((p["title"], expr))
    return out


# ---- the files ---------------------------------------------------------------------------------------
def test_the_dashboard_is_well_formed():
    d = dashboard()
    assert d["uid"] and d["title"] == "herowatch" and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p["targets"] and p["description"], p["title"]
        for t in p["targets"]:
            assert t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert '{job=~"$job"' in t["expr"], (p["title"], "every query is scoped to the chosen job")
    wanted = " ".join(e for _, e in queries())
    for metric in (
        "herowatch_poll_cycles_total",  # polls on time
        "herowatch_poll_delay_seconds_bucket",
        "herowatch_source_errors_total",  # source errors
        "herowatch_alerts",  # alerts by rule and severity
        "herowatch_outbox_backlog",  # outbox depth
        "herowatch_outbox_oldest_age_seconds",  # and age
        "herowatch_notification_send_duration_seconds_bucket",  # Slack send latency
    ):
        assert metric in wanted, metric


def test_grafana_is_provisioned_with_the_dashboard_and_prometheus_in_compose():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    grafana = compose["services"]["grafana"]
    assert re.fullmatch(r"grafana/grafana:\d+\.\d+\.\d+", grafana["image"]), "a pinned image"
    assert "127.0.0.1:3000:3000" in grafana["ports"], "loopback only, like the rest of the stack"
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"] if v.startswith("./"))
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    (datasource,) = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yaml").read_text())[
        "datasources"
    ]
    port = compose["services"]["prometheus"]["ports"][0].rsplit(":", 1)[1]
    assert datasource["type"] == "prometheus" and datasource["url"] == f"http://prometheus:{port}"
    default = next(v for v in dashboard()["templating"]["list"] if v["name"] == "datasource")
    assert default["current"]["value"] == datasource["uid"], "the dashboard opens on the provisioned source"
    (provider,) = yaml.safe_load((GRAFANA / "provisioning/dashboards/herowatch.yaml").read_text())[
        "providers"
    ]
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert (Path(DEPLOY / "grafana/dashboards") / DASHBOARD.name).is_file()
    env = grafana["environment"]
    assert (
        env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] == f"{provider['options']['path']}/{DASHBOARD.name}"
    )


# ---- against a running herowatch and a real Prometheus -------------------------------------------------
SPEED = 120.0  # a simulated minute every half second


def config(slack_url: str) -> str:
    return f"""
watch:
  - name: hero-a
    poll_interval: 60s
    sim: {{seed: 3, step_time: 10s, incidents: [{{kind: stall, at: 2m, duration: 3h}}]}}
rules:
  packs: [hero]
  overrides: {{progress_stalled: {{floor: 2m, startup: 5m}}}}
receivers:
  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack_url}', timeout: 5s, plots: false}}
route: {{receiver: oncall, group_wait: 0s}}
"""


@pytest.fixture
def herowatch(tmp_path: Path) -> Iterator[str]:
    with SlackStandin(channels=["C0ALERTS"]) as slack:
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}", SLACK_BOT_TOKEN=DEFAULT_TOKEN)
        cfg = parse_config(config(slack.api_url), "grafana-test.yaml")
        service = build_service(cfg, settings, ScaledClock(SPEED), speed=SPEED, auto_migrate=True)
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(service, on_start=service.start, on_stop=service.stop),
                host="127.0.0.1",
                port=port,
                log_level="warning",
            )
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            wait_for(lambda: server.started, 15, "herowatch to serve")
            yield f"127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(20)


def exported(target: str) -> set[str]:
    text = httpx.get(f"http://{target}/metrics", timeout=10).text
    return {re.split(r"[{ ]", line, maxsplit=1)[0] for line in text.splitlines() if line and line[0] != "#"}


def test_every_metric_of_the_dashboard_is_exported_and_every_panel_has_data(herowatch: str, tmp_path: Path):
    scrape = [
        {"job_name": "herowatch", "scrape_interval": "1s", "static_configs": [{"targets": [herowatch]}]}
    ]
    # the stall pages through Slack: a send latency, alerts by rule, polls and their delays exist
    wait_for(
        lambda: (
            {
                "herowatch_notification_send_duration_seconds_bucket",
                "herowatch_poll_delay_seconds_bucket",
                "herowatch_alerts",
            }
            <= exported(herowatch)
        ),
        60,
        "a page sent to Slack and polls counted",
    )
    names = exported(herowatch)
    for title, expr in queries():
        missing = set(METRIC.findall(expr)) - names
        assert not missing, f"panel {title!r} uses {sorted(missing)}, which herowatch does not export"
    with PrometheusServer(tmp_path / "prom", scrape) as prom:
        for title, expr in queries():

            def has_data(expr: str = expr) -> list | None:
                return prom.query(expr) or None  # a query that does not parse fails right here

            if title in MAY_BE_EMPTY:
                prom.query(expr)
                continue
            started = time.monotonic()
            wait_for(has_data, 60, f"data for panel {title!r}: {expr}")
            assert time.monotonic() - started < 60
