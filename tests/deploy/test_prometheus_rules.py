"""deploy/kubernetes/prometheusrule.yaml: well formed, `promtool check rules`, and `promtool test rules`
unit tests of its alerts (promtool from Debian's prometheus: a missing one fails the test)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.deploy.support import *  # noqa: F403

# ---- Prometheus rules ----------------------------------------------------------------------------------


def prometheus_rule() -> dict:
    rule = resource("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    return rule


def test_prometheus_rule_is_well_formed():
    groups = prometheus_rule()["spec"]["groups"]
    assert groups
    alerts = {}
    for g in groups:
        assert g["name"] and g["rules"]
        for r in g["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= r.keys(), r
            assert r["labels"]["severity"] in ("critical", "warning") and r["annotations"]["summary"]
            alerts[r["alert"]] = r["expr"]
    service = resource("Service")["metadata"]["name"]
    for expr in alerts.values():
        for job in re.findall(r'job="([^"]+)"', expr):
            assert job == service, "ServiceMonitor targets get the Service's name as their job"
    joined = " ".join(alerts.values())
    for metric in ("herowatch_source_last_success_timestamp_seconds", "herowatch_outbox_backlog", "up{"):
        assert metric in joined


def write_rules(path: Path, *, annotations: bool) -> Path:
    groups = json.loads(json.dumps(prometheus_rule()["spec"]["groups"]))
    if not annotations:
        for g in groups:
            for r in g["rules"]:
                r.pop("annotations", None)
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def test_promtool_checks_the_rules(tmp_path):
    promtool = tool("promtool", "apt-get install prometheus (scripts/test does)")
    result = run([promtool, "check", "rules", str(write_rules(tmp_path / "rules.yaml", annotations=True))])
    assert result.returncode == 0, result.stdout + result.stderr


# Annotations are left out of the unit tests (promtool would compare their rendered text); the check
# above parses their templates.
PROMTOOL_TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  # W&B was polled until minute 10, then never again: critical from 10 + 10 + 5 minutes on.
  - interval: 1m
    input_series:
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="wandb"}'
        values: '0+60x10 600x40'
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="prom"}'
        values: '0+60x50'
    alert_rule_test:
      - {eval_time: 15m, alertname: HerowatchSourceNotPolling, exp_alerts: []}
      - eval_time: 40m
        alertname: HerowatchSourceNotPolling
        exp_alerts: [{exp_labels: {severity: critical, source: wandb}}]
  # One replica stopped polling W&B, the other polls it: W&B is watched, no alert.
  - interval: 1m
    input_series:
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="wandb"}'
        values: '0+60x10 600x40'
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="b",source="wandb"}'
        values: '0+60x50'
    alert_rule_test:
      - {eval_time: 40m, alertname: HerowatchSourceNotPolling, exp_alerts: []}
  # Both replicas fail their scrapes from minute 11; then the targets vanish altogether.
  - interval: 1m
    input_series:
      - {series: 'up{job="herowatch",instance="a"}', values: '1x10 0x40'}
      - {series: 'up{job="herowatch",instance="b"}', values: '1x10 0x40'}
    alert_rule_test:
      - {eval_time: 10m, alertname: HerowatchDown, exp_alerts: []}
      - eval_time: 30m
        alertname: HerowatchDown
        exp_alerts: [{exp_labels: {severity: critical}}]
  - interval: 1m
    input_series:
      - {series: 'up{job="herowatch",instance="a"}', values: '1x10'}
    alert_rule_test:
      - eval_time: 30m
        alertname: HerowatchDown
        exp_alerts: [{exp_labels: {severity: critical}}]
  # A backlog above 100 for 15 minutes pages; a short burst does not.
  - interval: 1m
    input_series:
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="a"}', values: '0x5 500x40'}
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="b"}', values: '0x5 500x40'}
    alert_rule_test:
      - {eval_time: 15m, alertname: HerowatchOutboxBacklog, exp_alerts: []}
      - eval_time: 30m
        alertname: HerowatchOutboxBacklog
        exp_alerts: [{exp_labels: {severity: critical}}]
  - interval: 1m
    input_series:
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="a"}', values: '0x5 500x5 0x30'}
    alert_rule_test:
      - {eval_time: 30m, alertname: HerowatchOutboxBacklog, exp_alerts: []}
"""


def test_promtool_unit_tests_the_alerts(tmp_path):
    promtool = tool("promtool", "apt-get install prometheus (scripts/test does)")
    write_rules(tmp_path / "rules.yaml", annotations=False)
    (tmp_path / "tests.yaml").write_text(PROMTOOL_TESTS)
    result = run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
