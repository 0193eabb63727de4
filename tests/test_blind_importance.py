"""Inputs have an importance (issue 26, point 1), in the live engine on real llm.c values: a run that
logs no grad norm (optional) is shown, never paged; an optional input that was arriving and stopped
pages; a run that then goes blind on an essential input (the loss) gets a new notifying message; a
blind alert resolves when its rules are turned off for the run. What on-call would see is read from the
messages the receiver got (their kind says whether they notify)."""

from __future__ import annotations

from alerts.notifiers.base import SendResult
from alerts.views import GroupView
from monitor.engine.coverage_stored import expand
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Run
from tests.helpers import make_service, tick
from tests.test_coverage_engine import CONFIG, _alerts, llmc


class Recorder:
    """A receiver that keeps every message: its kind (open, notify, update...) and its changed alerts."""

    def __init__(self) -> None:
        self.views: list[GroupView] = []

    def send(self, view: GroupView) -> SendResult:
        self.views.append(view)
        return SendResult.sent()

    def pages(self) -> list[GroupView]:
        return [v for v in self.views if v.notifies]

    def said(self) -> str:
        return "\n".join(f"{v.kind}: " + " | ".join(a.summary for a in v.changed_alerts) for v in self.views)


class Logger:
    """A tracker like W&B: a step every 10 s per run with the keys ``logs[run]`` names (loss, grad norm,
    tokens/s); a key set to None is not logged (a run that stops logging it)."""

    kind = "sim"

    def __init__(self, logs: dict[str, dict[str, str | None]]) -> None:
        self.logs = logs
        self.values = llmc()

    def poll(self, target, cursors, now):  # noqa: ANN001, ANN201
        out = PollResult()
        for run, keys in self.logs.items():
            t = (cursors.get(run) or {}).get("t", now - 60.0)
            while t + 10.0 <= now:
                t += 10.0
                step = int(t // 10) % 100_000
                loss, gnorm = self.values[step % len(self.values)]
                values = {"loss": loss, "gnorm": gnorm, "tps": 410_000.0 + step % 7}
                metrics = {k: values[what] for what, k in keys.items() if k is not None}
                out.samples.append(
                    Sample(t=t, run=run, step=step, metrics=metrics, state="running", source="sim")
                )
            out.runs.append(RunInfo(run=run, source="sim", state="running"))
            out.cursors[run] = {"t": t}
        return out

    def close(self) -> None:
        pass


def _service(db_url, clock, logger: Logger, config: str = CONFIG):  # noqa: ANN001, ANN202
    service, _ = make_service(db_url, clock, config)
    got = Recorder()
    service.dispatcher.notifiers = {"console": got}
    service.engine.sources["sim"] = logger
    service.engine.resume()
    return service, got


def test_a_healthy_run_that_logs_no_grad_norm_pages_nobody_and_shows_it(db_url, clock):
    service, got = _service(db_url, clock, Logger({"hero-1": {"loss": "train/loss", "tps": "tps"}}))
    tick(service, clock, 30 * 60)
    assert got.views == [], got.said()
    assert _alerts(service) == []
    with service.sessions() as s:
        cov = expand(s.get(Run, "hero-1").stats["coverage"])
    by_rule = {r["rule"]: r for r in cov["rules"]}
    assert cov["state"] == "covered" and cov["summary"] is None
    assert by_rule["grad_norm_high"]["state"] == "unused" and by_rule["grad_norm_spike"]["state"] == "unused"
    from tests.dashboard.support import client

    api = client(service)
    (run,) = api.get("/api/runs").json()
    assert "grad/norm/total" in run["unlogged_inputs"] and run["blind_rules"] == []
    assert run["problem"] == "Healthy"
    overview = api.get("/").text
    assert "watching blind" not in overview and "not logged: " in overview
    service.stop()


def test_an_optional_input_that_stops_pages_then_an_essential_one_is_a_new_page(db_url, clock):
    logs = {"hero-1": {"loss": "train/loss", "gnorm": "grad/norm/total", "tps": "tps"}}
    service, got = _service(db_url, clock, Logger(logs))
    tick(service, clock, 20 * 60)
    assert got.views == [], got.said()

    logs["hero-1"]["gnorm"] = None  # the exporter of the grad norm broke mid-run
    tick(service, clock, 30 * 60)
    pages = got.pages()
    assert len(pages) == 1, got.said()
    assert "no value of grad/norm/total" in pages[0].changed_alerts[0].summary
    assert "stopped" in pages[0].changed_alerts[0].summary

    assert "train/loss" not in pages[0].changed_alerts[0].summary, "a key the rules read is no suggestion"

    logs["hero-1"]["loss"] = "objective"  # and now the loss comes under a name no rule reads
    tick(service, clock, 40 * 60)
    pages = got.pages()
    assert len(pages) == 2, got.said()
    news = [a.summary for a in pages[1].changed_alerts if a.state == "firing"]
    assert any("train/loss" in s for s in news), got.said()
    assert pages[1].kind == "notify", "the essential input is news in the run's thread, shown in the channel"
    service.stop()


def test_a_blind_alert_resolves_when_its_rules_are_turned_off_for_the_run(db_url, clock):
    logger = Logger({"hero-1": {"loss": "objective", "tps": "tps"}})
    service, got = _service(db_url, clock, logger)
    tick(service, clock, 8 * 60)
    assert [a.state for a in _alerts(service)] == ["firing"], got.said()
    assert "no value of train/loss" in got.pages()[0].changed_alerts[0].summary
    service.stop()

    loss_rules = "[loss_nonfinite, loss_spike, loss_diverging, loss_jump, loss_absent]"
    off = CONFIG + f"    rules: {{disabled: {loss_rules}}}\n"
    again, got2 = _service(db_url, clock, logger, off)
    tick(again, clock, 3 * 60)
    assert [a.state for a in _alerts(again)] == ["resolved"], got2.said()
    assert [v.kind for v in got2.views] == ["update"], "the resolution edits the message, pages nobody"
    again.stop()


def test_a_blind_message_says_what_the_run_logs_and_suggests_only_keys_of_the_right_shape(db_url, clock):
    """A run whose loss comes as 'objective', with a restart counter and a learning rate: the loss is
    named, the keys listed, and never a counter for the grad norm or the loss."""
    keys = {"loss": "objective", "tps": "restarts_total"}
    service, got = _service(db_url, clock, Logger({"hero-1": keys}))
    tick(service, clock, 8 * 60)
    (page,) = got.pages()
    (alert,) = page.changed_alerts
    assert alert.labels.get("input") == "train/loss"
    text = alert.summary
    assert "no value of train/loss" in text and "'objective'" in text, text
    assert "{objective: train/loss}" in text and "restarts_total:" not in text, text
    service.stop()


def test_suggestions_are_ranked_by_name_and_left_out_when_the_shape_is_wrong():
    from monitor.profiles.shape import Shapes
    from monitor.profiles.suggest import related

    shapes = Shapes()
    shapes.learn(["objective", "loss_scale", "grad_steps", "gnorm"])
    for i, (loss, gnorm) in enumerate(llmc()[:40]):
        shapes.add({"objective": loss, "loss_scale": 65536.0, "grad_steps": float(i), "gnorm": gnorm})
    seen = shapes.view()
    assert related("grad/norm/total", ["restarts_total", "grad_steps", "gnorm"], seen) == ["gnorm"]
    assert related("train/loss", ["loss_scale", "objective"], seen) == ["objective"]
    assert related("restarts_total", ["grad_steps", "gnorm"], seen) == [], "no gauge for a counter"


RULE_FILE = """
inputs:
  essential: [my/metric]
rules:
  - {name: mine_high, kind: threshold, metric: my/metric, above: 5}
  - {name: other_high, kind: threshold, metric: other/metric, above: 5}
"""


def test_a_rule_file_declares_what_is_essential_and_a_typo_says_where():
    import pytest

    from monitor.config.errors import ConfigError
    from monitor.rules.loader import parse_rules
    from monitor.traces.replay import replay

    rules = parse_rules(RULE_FILE, "mine.yaml")
    rows = [Sample(1000.0 + 10 * i, "r", i, {"train/loss": 2.0}, "running", "wandb") for i in range(60)]
    summary = replay(rows, rules).summaries["r"]
    states = {r.rule: r.state for r in summary.coverage.rules}
    assert states == {"mine_high": "blind", "other_high": "unused"}
    assert "no value of my/metric" in summary.blind.text and "other/metric" not in summary.blind.text
    with pytest.raises(ConfigError) as err:
        parse_rules(RULE_FILE.replace("essential:", "esential:"), "mine.yaml")
    assert "mine.yaml:3" in str(err.value) and "esential" in str(err.value)
