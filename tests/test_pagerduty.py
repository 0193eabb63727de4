"""The PagerDuty receiver against a stand-in of the Events API v2 that validates the documented event
schema and answers like PagerDuty (202, 400 with errors, 429): one PagerDuty alert per group episode,
severity mapped, links and the plot, acknowledged when herowatch acknowledges, resolved with the group.
The last test runs the whole service from a config file: a stalled run pages, the on-call acknowledges
through herowatch's API, and PagerDuty's incident follows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from alerts.clock import ManualClock
from alerts.notifiers import BuildContext, build_notifier
from alerts.notifiers.pagerduty import PagerDutyNotifier
from alerts.views import Plot
from monitor.config import ConfigError, parse_config
from monitor.service import build_service
from monitor.settings import Settings
from monitor.web.app import create_app
from tests.dashboard.support import TOKEN, bearer
from tests.delivery_support import EXTERNAL_URL, Delivery
from tests.helpers import tick
from tests.standins.pagerduty_server import ROUTING_KEY, PagerDutyStandin
from tests.views_support import NOW, alert, group

PLOT = Plot("metric", "train/loss", "train/loss of run r1 by step", x=[1, 2], y=[1.0, 2.0])


@pytest.fixture
def pd():
    with PagerDutyStandin() as standin:
        yield standin


def notifier(pd, key=ROUTING_KEY):
    return PagerDutyNotifier(key, url=pd.url, client_url=EXTERNAL_URL)


def test_a_trigger_carries_what_on_call_needs_and_passes_the_documented_schema(pd):
    stall = alert(1, "progress_stalled", runbook_url="https://runbooks.example/stall", metric="step")
    jump = alert(2, "loss_jump", severity="warning", started_at=NOW + 60)
    links = {
        "dashboard_url": f"{EXTERNAL_URL}/runs/r1",
        "wandb_url": "https://wandb.ai/t/p/runs/r1",
        "plot_url": f"{EXTERNAL_URL}/api/alerts/1/plot.png",
    }
    view = group(jump, stall, receiver="pd", episode=41, links=links, plot=PLOT)
    result = notifier(pd).send(view)
    assert result.ok and result.ref == "herowatch/slack:feedc0ffee/41", result.error
    (call,) = pd.calls
    assert call.status == 202 and call.body["event_action"] == "trigger"
    payload = call.body["payload"]
    assert payload["summary"] == "progress_stalled on r1 (+1 more firing)", "the lead: the most severe"
    assert payload["severity"] == "critical" and payload["source"] == "r1"
    assert payload["class"] == "progress_stalled" and payload["timestamp"].endswith("Z")
    assert [a["alertname"] for a in payload["custom_details"]["alerts"]] == ["loss_jump", "progress_stalled"]
    assert [x["href"] for x in call.body["links"]] == [
        f"{EXTERNAL_URL}/runs/r1",
        "https://wandb.ai/t/p/runs/r1",
        "https://runbooks.example/stall",
        f"{EXTERNAL_URL}/api/alerts/1/plot.png",
    ]
    assert call.body["images"] == [
        {"src": links["plot_url"], "alt": PLOT.caption, "href": links["dashboard_url"]}
    ]
    assert call.body["client"] == "herowatch" and call.body["client_url"] == links["dashboard_url"]
    assert pd.pages == 1 and pd.alert(result.ref).status == "triggered"


@pytest.mark.parametrize(
    ("ours", "theirs"), [("critical", "critical"), ("warning", "warning"), ("info", "info")]
)
def test_severity_is_mapped(pd, ours, theirs):
    assert notifier(pd).send(group(alert(1, severity=ours), receiver="pd", episode=1)).ok
    assert pd.calls[0].body["payload"]["severity"] == theirs


def test_a_plot_not_served_over_https_is_a_link_not_an_image(pd):
    view = group(
        alert(1),
        receiver="pd",
        episode=1,
        plot=PLOT,
        links={"plot_url": "http://hw:8080/api/alerts/1/plot.png"},
    )
    assert notifier(pd).send(view).ok, pd.calls[-1].errors
    assert "images" not in pd.calls[0].body and pd.calls[0].body["links"][-1]["href"].startswith("http://hw")


def test_one_alert_per_episode_acknowledged_and_resolved_with_it(pd):
    n = notifier(pd)
    first = alert(1)
    assert n.send(group(first, receiver="pd", episode=7)).ok
    joined = alert(2, "loss_jump", severity="warning")
    assert n.send(group(first, joined, kind="notify", receiver="pd", episode=7)).ok
    assert pd.pages == 1 and len(pd.alert("herowatch/slack:feedc0ffee/7").log) == 2, "deduplicated"
    partly = (replace(first, acked_by="amy"), joined)
    assert n.send(group(*partly, kind="update", receiver="pd", episode=7)).ok
    assert pd.actions()[-1] == "trigger", "acknowledged only when every firing alert is"
    both = (replace(first, acked_by="amy"), replace(joined, acked_by="bo"))
    assert n.send(group(*both, kind="update", receiver="pd", episode=7)).ok
    assert pd.alert("herowatch/slack:feedc0ffee/7").status == "acknowledged"
    done = [replace(a, state="resolved", ended_at=NOW + 600) for a in both]
    assert n.send(group(*done, kind="update", receiver="pd", episode=7)).ok
    assert pd.alert("herowatch/slack:feedc0ffee/7").status == "resolved"
    assert n.send(group(alert(3), receiver="pd", episode=8)).ok
    assert pd.pages == 2 and pd.alerts[-1].dedup_key == "herowatch/slack:feedc0ffee/8", "a new episode pages"


def test_refusals_are_permanent_rate_limits_and_outages_are_retried(pd):
    view = group(alert(1), receiver="pd", episode=1)
    wrong = "0123456789abcdef0123456789abcdef"
    result = notifier(pd, key=wrong).send(view)
    assert not result.ok and not result.retry and "Invalid routing key" in result.error
    assert wrong not in result.error, "the routing key is a secret"
    pd.rate_limit(retry_after=30)
    result = notifier(pd).send(view)
    assert result.retry and result.retry_after == 30 and "429" in result.error
    pd.rate_limit()
    assert notifier(pd).send(view).retry_after == 60, "PagerDuty asks for a backoff when it names none"
    pd.fail(503)
    result = notifier(pd).send(view)
    assert result.retry and "503" in result.error
    assert notifier(pd).send(view).ok and pd.pages == 1
    assert "PagerDuty has no heartbeat" in notifier(pd).send(group(alert(9), kind="single")).error
    assert wrong not in repr(notifier(pd, key=wrong))


def test_the_key_stays_in_the_environment():
    head = "route: {receiver: pd}\nreceivers:\n  - "
    cfg = parse_config(head + "{name: pd, kind: pagerduty, routing_key_env: PD_KEY}\n")
    with pytest.raises(ValueError, match="set the environment variable PD_KEY"):
        build_notifier(cfg.receivers[0], BuildContext(env={}))
    built = build_notifier(cfg.receivers[0], BuildContext(env={"PD_KEY": ROUTING_KEY}))
    assert isinstance(built, PagerDutyNotifier) and built.url == "https://events.pagerduty.com"
    for bad, said in [
        (
            f"{{name: pd, kind: pagerduty, routing_key: {ROUTING_KEY}}}",
            "receivers[0]: never put the PagerDuty",
        ),
        (
            f"{{name: pd, kind: pagerduty, routing_key_env: {ROUTING_KEY}}}",
            "looks like the routing key itself",
        ),
        ("{name: pd, kind: pagerduty, routing_key_env: PD-KEY}", "not an environment variable name"),
        ("{name: pd, kind: pagerduty, url: events.pagerduty.com}", "receivers[0].url"),
    ]:
        with pytest.raises(ConfigError) as err:
            parse_config(head + bad + "\n", "hw.yaml")
        assert said in str(err.value) and "hw.yaml:3: receivers[0]" in str(err.value), str(err.value)
        assert ROUTING_KEY not in str(err.value), "a key put in the file is not echoed"


def test_through_the_pipeline_an_ack_in_herowatch_acknowledges_the_incident(migrated_url, pd):
    d = Delivery(migrated_url, {"pd": notifier(pd)}, t0=NOW)
    d.run("hero-3")
    stall = d.alert("progress_stalled", run="hero-3")
    assert d.at(30) == 1 and pd.actions() == ["trigger"]
    key = pd.calls[0].body["dedup_key"]
    assert key == f"herowatch/{d.group().group_key}/{d.group().id}"
    assert {x["href"] for x in pd.calls[0].body["links"]} >= {f"{EXTERNAL_URL}/runs/hero-3"}
    d.ack(stall)
    assert d.at(31) == 1 and pd.actions() == ["trigger", "acknowledge"]
    assert pd.alert(key).status == "acknowledged" and pd.pages == 1
    d.resolve(stall)
    assert d.at(31 + 300) == 1 and pd.alert(key).status == "resolved"
    d.alert("progress_stalled", run="hero-3")  # it hangs again: a new episode, a new page
    assert d.at(400) == 1 and pd.pages == 2 and pd.alerts[-1].dedup_key != key
    d.close()


SERVICE_CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      checkpoint_every: 50
      checkpoint_pause: 60s
      incidents:
        - {{kind: stall, at: 10m, duration: 30m}}
receivers:
  - {{name: pager, kind: pagerduty, url: '{url}'}}
route: {{receiver: pager}}
server: {{external_url: '{external}'}}
"""


def test_the_service_pages_from_its_config_and_follows_an_ack_from_the_api(db_url, pd, monkeypatch, tmp_path):
    monkeypatch.setenv("PAGERDUTY_ROUTING_KEY", ROUTING_KEY)
    clock = ManualClock(NOW)
    cfg = parse_config(SERVICE_CONFIG.format(url=pd.url, external=EXTERNAL_URL), "hw.yaml")
    settings = Settings(database_url=db_url, HEROWATCH_API_TOKEN=TOKEN)
    service = build_service(cfg, settings, clock, base_dir=Path("."), auto_migrate=True)
    assert "pager" in service.dispatcher.notifiers and service.refresh == {}
    service.engine.resume()
    tick(service, clock, 30 * 60)
    assert pd.actions() == ["trigger"], [c.errors for c in pd.calls]
    body = pd.calls[0].body
    assert body["payload"]["class"] == "progress_stalled" and body["payload"]["severity"] == "critical"
    assert body["links"][0]["href"] == f"{EXTERNAL_URL}/runs/sim%3Ahero-a%2Fhero-a"
    (image,) = body["images"]
    api = TestClient(create_app(service), base_url="http://localhost")
    png = api.get(image["src"].removeprefix(EXTERNAL_URL))
    assert (
        png.status_code == 200
        and png.headers["content-type"] == "image/png"
        and png.content[:4] == b"\x89PNG"
    )
    (firing,) = api.get("/api/alerts", params={"state": "firing"}).json()
    assert (
        api.post(f"/api/alerts/{firing['id']}/ack", json={"by": "amy"}, headers=bearer()).status_code == 200
    )
    service.dispatcher.run_once()
    assert pd.actions() == ["trigger", "acknowledge"] and pd.alerts[0].status == "acknowledged"
    tick(service, clock, 40 * 60)  # the stall ends: the group resolves
    assert pd.actions() == ["trigger", "acknowledge", "resolve"] and pd.alerts[0].status == "resolved"
    assert pd.pages == 1
    assert api.get("/api/alerts/999999/plot.png").status_code == 404
    service.stop()


def test_serve_says_which_receiver_misses_its_key_and_where(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from monitor.cli.main import app

    monkeypatch.delenv("PAGERDUTY_ROUTING_KEY", raising=False)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(SERVICE_CONFIG.format(url="https://events.pagerduty.com", external=EXTERNAL_URL))
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    result = CliRunner().invoke(app, ["serve", "--config", str(cfg), "--database-url", db])
    assert result.exit_code == 2, result.output
    said = f"{cfg}:13: receivers[0]: receiver 'pager': set the environment variable PAGERDUTY_ROUTING_KEY"
    assert said in result.output and "Traceback" not in result.output


def test_a_nan_loss_pages_without_its_unsendable_value(pd):
    """JSON has no NaN: the page goes out with the summary that says so, the value left out."""
    nan = alert(3, "loss_nonfinite", value=float("nan"), summary="r1: loss is NaN")
    result = notifier(pd).send(group(nan, receiver="pd", episode=42))
    assert result.ok, result.error
    (call,) = pd.calls
    (details,) = call.body["payload"]["custom_details"]["alerts"]
    assert details["summary"] == "r1: loss is NaN" and "value" not in details
