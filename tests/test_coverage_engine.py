"""Coverage in the live engine: a run whose loss comes under a name no profile knows warns once
(watching_blind, naming the run, the missing input and the keys it logs), resolves when the input
arrives, survives a restart without a second message; most runs of a watch blind alike make one
message for the watch. Real llm.c values, both databases."""

from __future__ import annotations

import csv
import json
import math

from sqlalchemy import select

from monitor.engine.coverage import covered_why
from monitor.engine.coverage_stored import expand
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run
from monitor.web.coverage import coverage_out
from tests.conftest import REAL_DATA
from tests.helpers import make_service, tick

CONFIG = """
watch:
  - name: team
    poll_interval: 60s
    sim: {seed: 1, step_time: 10s}
"""


def llmc() -> list[tuple[float, float]]:
    with (REAL_DATA / "llmc_gpt2_124m_steps.csv").open() as f:
        return [
            (float(r["loss"]), float(r["grad_norm"]))
            for r in csv.DictReader(f)
            if r["kind"] == "train" and r["grad_norm"]
        ]


class Trainers:
    """A tracker like W&B: each run logs a step every 10 s, its loss and grad norm under ``names[run]``."""

    kind = "sim"

    def __init__(self, names: dict[str, tuple[str, str]], watch: str | None = None) -> None:
        self.names = names
        self.values = llmc()
        self.watch = watch  # only this watch's polls see the runs (None: every watch's)

    def poll(self, target, cursors, now):  # noqa: ANN001, ANN201
        out = PollResult()
        if self.watch is not None and target.watch != self.watch:
            return out
        for run, (loss_key, gnorm_key) in self.names.items():
            last = (cursors.get(run) or {}).get("t", now - 60.0)
            t = last
            while t + 10.0 <= now:
                t += 10.0
                step = int(t // 10) % 100_000
                loss, gnorm = self.values[step % len(self.values)]
                metrics = {loss_key: loss, gnorm_key: gnorm, "tps": 410_000.0}
                out.samples.append(
                    Sample(t=t, run=run, step=step, metrics=metrics, state="running", source="sim")
                )
            out.runs.append(RunInfo(run=run, source="sim", state="running"))
            out.cursors[run] = {"t": t}
        return out

    def close(self) -> None:
        pass


def _alerts(service, rule="watching_blind"):  # noqa: ANN001, ANN202
    with service.sessions() as s:
        return list(s.scalars(select(Alert).where(Alert.rule == rule).order_by(Alert.id)))


def test_a_run_with_an_unknown_loss_name_warns_once_and_resolves(db_url, clock):
    service, out = make_service(db_url, clock, CONFIG)
    trainers = Trainers({"hero-7b": ("objective", "gnorm"), "hero-ok": ("train/loss", "grad/norm/total")})
    service.engine.sources["sim"] = trainers
    service.engine.resume()
    tick(service, clock, 2 * 60)
    assert "watching_blind" not in out.getvalue(), "a young run is warming up, not blind"
    tick(service, clock, 4 * 60)
    text = out.getvalue()
    assert text.count("FIRING WARNING watching_blind run=hero-7b") == 1, text
    assert "run=hero-ok" not in text, "the run that logs the rules' names raises nothing"
    assert "FIRING" in text and text.count("FIRING") == 1, "no other page while the run is healthy"
    message = text[text.index("FIRING WARNING watching_blind") :]
    assert "no value of train/loss" in message and "loss_spike" in message
    assert "the run logs 'objective'" in message
    assert "map them with metrics: {objective: train/loss, gnorm: grad/norm/total" in message

    with service.sessions() as s:
        cov = expand(s.get(Run, "hero-7b").stats["coverage"])
        ok = expand(s.get(Run, "hero-ok").stats["coverage"])
    assert cov["state"] == "blind" and ok["state"] == "covered"
    by_rule = {r["rule"]: r for r in cov["rules"]}
    assert by_rule["loss_spike"]["state"] == "blind"
    assert by_rule["progress_stalled"]["state"] == "covered"
    assert by_rule["moe_drop_high"]["state"] == "unused", (
        "an optional input the run never logs does not count"
    )
    assert "objective" in cov["keys"]

    # a restart: the warning is restored, not raised again, and not resolved as a rule "gone"
    service.stop()
    again, out2 = make_service(db_url, clock, CONFIG)
    again.engine.sources["sim"] = trainers
    again.engine.resume()
    tick(again, clock, 3 * 60)
    assert "watching_blind" not in out2.getvalue()
    assert [a.state for a in _alerts(again)] == ["firing"]

    # the trainer now logs the names the rules use: the warning resolves
    trainers.names["hero-7b"] = ("train/loss", "grad/norm/total")
    tick(again, clock, 2 * 60)
    assert out2.getvalue().count("RESOLVED WARNING watching_blind run=hero-7b") == 1
    assert [a.state for a in _alerts(again)] == ["resolved"]
    again.stop()


def test_a_metrics_mapping_in_the_watch_makes_the_run_covered(db_url, clock):
    mapped = CONFIG + "    metrics: {objective: train/loss, gnorm: grad/norm/total}\n"
    service, out = make_service(db_url, clock, mapped)
    service.engine.sources["sim"] = Trainers({"hero-7b": ("objective", "gnorm")})
    service.engine.resume()
    tick(service, clock, 8 * 60)
    assert "watching_blind" not in out.getvalue()
    with service.sessions() as s:
        run = s.get(Run, "hero-7b")
        assert run.stats["coverage"]["state"] == "covered"
        assert math.isfinite(run.stats["latest"]["train/loss"])
    service.stop()


def test_most_runs_blind_alike_make_one_message_for_the_watch(db_url, clock):
    service, out = make_service(db_url, clock, CONFIG)
    runs = {f"hero-{i}": ("objective", "gnorm") for i in range(4)}
    runs["hero-ok"] = ("train/loss", "grad/norm/total")
    service.engine.sources["sim"] = Trainers(runs)
    service.engine.resume()
    tick(service, clock, 8 * 60)
    text = out.getvalue()
    assert text.count("FIRING") == 1, text
    assert "FIRING WARNING watching_blind run=team" in text
    assert "4 of 5 running runs watched blind (hero-0, hero-1, hero-2, hero-3)" in text
    states = {a.run_id: a.state for a in _alerts(service)}
    assert states == {
        "hero-0": "firing",
        "hero-1": "firing",
        "hero-2": "firing",
        "hero-3": "firing",
        "team": "firing",
    }
    service.stop()


def test_the_api_and_the_pages_show_the_blind_run(db_url, clock):
    from tests.dashboard.support import build, client

    service = build(db_url, clock, CONFIG)
    service.engine.sources["sim"] = Trainers(
        {"hero-7b": ("objective", "gnorm"), "hero-ok": ("train/loss", "grad/norm/total")}
    )
    tick(service, clock, 8 * 60)
    api = client(service)
    runs = {r["id"]: r for r in api.get("/api/runs").json()}
    blind, ok = runs["hero-7b"], runs["hero-ok"]
    assert blind["health"] == "warning" and blind["problem"] != "Healthy"
    assert "no value of train/loss" in blind["problem"]
    assert "loss_spike" in blind["blind_rules"] and ok["blind_rules"] == [] and ok["problem"] == "Healthy"

    cov = api.get("/api/runs/hero-7b/coverage").json()
    assert cov["state"] == "blind" and cov["at"].endswith("Z")
    rules = {r["rule"]: r for r in cov["rules"]}
    (loss,) = rules["loss_spike"]["inputs"]
    assert loss == {**loss, "name": "train/loss", "state": "blind", "last_at": None, "count": 0}
    (step,) = [i for i in rules["progress_stalled"]["inputs"] if i["name"] == "@step"]
    assert step["state"] == "covered" and step["last_at"].endswith("Z") and step["count"] > 40
    assert "objective" in cov["keys"] and cov["summary"].startswith("no value of train/loss")
    assert api.get("/api/runs/nobody/coverage").status_code == 404
    assert "/api/runs/{run_id}/coverage" in api.get("/openapi.json").json()["paths"]

    page = api.get("/runs/hero-7b").text
    assert 'id="coverage"' in page and "Watching blind." in page and "never" in page
    overview = api.get("/").text
    assert overview.count("watching blind: ") == 1 and "hero-7b#coverage" in overview
    service.stop()


def test_the_stored_coverage_is_compact_and_reads_as_the_earlier_form(db_url, clock):
    """Coverage is stored with every run's stats after every poll: the rules' shared inputs are kept
    once, and a row still holding the earlier form (each rule's inputs written out) reads the same."""
    service, _ = make_service(db_url, clock, CONFIG)
    service.engine.sources["sim"] = Trainers({"hero-7b": ("objective", "gnorm")})
    service.engine.resume()
    tick(service, clock, 6 * 60)
    with service.sessions.begin() as s:
        run = s.get(Run, "hero-7b")
        compact = run.stats["coverage"]
        api = coverage_out(run)
        earlier = expand(compact)
        assert earlier["rules"] and all(r["inputs"] for r in earlier["rules"])
        size = len(json.dumps(compact))
        assert size * 2 < len(json.dumps(earlier)), (size, len(json.dumps(earlier)))
        run.stats = {**run.stats, "coverage": earlier}  # a row written before the compact form
    with service.sessions() as s:
        again = coverage_out(s.get(Run, "hero-7b"))
    assert again == api
    assert api.state == "blind" and {r.rule for r in api.rules if r.state == "blind"} >= {"loss_spike"}
    spike = next(r for r in api.rules if r.rule == "loss_spike")
    assert [i.name for i in spike.inputs] == ["train/loss"] and spike.inputs[0].state == "blind"
    service.stop()


def test_a_covered_input_says_to_the_second_when_its_last_value_came():
    assert covered_why(0.021) == "last value 0s ago"
    assert covered_why(7.4) == "last value 7s ago"
    assert covered_why(65.6) == "last value 1m6s ago"
