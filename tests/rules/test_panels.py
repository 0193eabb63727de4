"""Run kinds and panels as packs declare them: refused with file, line and field when malformed, checked
against the rules and kinds in force, a run's kind inferred from what its trainer logs (after the metric
profiles), and what a panel draws (transforms, declared bands, reference lines) from stored buckets."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import app
from monitor.config.errors import ConfigError
from monitor.profiles import translation
from monitor.rules.loader import load_layouts, parse_layout
from monitor.rules.panels import Line
from monitor.rules.panels import Series as SeriesSpec
from monitor.web.dashboard.panel_data import line_value, series_data
from monitor.web.schemas import Bucket, Series


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_layout(text, "mine.yaml")
    return err.value.render().splitlines()[1:]


def test_malformed_panels_are_refused_with_file_line_and_field():
    bad = """rules: []
panels:
  - id: reward
    title: Reward
    series:
      - {metric: rl/reward/mean, band: {std: rl/reward/std, min: a}}
  - id: Bad Id
    title: x
    series: []
    lines:
      - {label: cap}
    colour: red
"""
    got = problems(bad)
    assert "  mine.yaml:6: panels[0].series[0].band: give std, or min and max, not both" in got, got
    assert any(g.startswith("  mine.yaml:7: panels[1].id: use lower-case letters") for g in got), got
    assert any(g.startswith("  mine.yaml:9: panels[1].series: ") for g in got), got
    where = "  mine.yaml:11: panels[1].lines[0]: say where the value comes from"
    assert f"{where}: one of rule, highest_of or setting" in got, got
    assert any(g.startswith("  mine.yaml:12: panels[1].colour: unknown field") for g in got), got
    panel = "  - {id: a, title: A, series: [{metric: m}]}\n"
    twice = f"rules: []\npanels:\n{panel}{panel}"
    assert problems(twice) == ["  mine.yaml:4: panels[1].id: panel id 'a' is used twice"]
    kind = "rules: []\nrun_kind: {name: RL, evidence: [], headline: m}\n"
    got = problems(kind)
    assert any("run_kind.name: a kind is a lower-case word" in g for g in got) and any(
        "run_kind.evidence" in g for g in got
    )


def test_check_config_names_a_kind_or_rule_that_is_not_there(tmp_path: Path):
    pack = tmp_path / "mine.yaml"
    pack.write_text(
        "rules: []\npanels:\n  - id: kl\n    title: KL\n    series: [{metric: rl/kl}]\n"
        "    lines: [{label: limit, rule: kl_too_high}]\n    kinds: [dpo]\n"
    )
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        "watch:\n  - name: w\n    kind: distill\n    sim: {}\nrules:\n  packs: [hero]\n  files: [mine.yaml]\n"
    )
    out = CliRunner().invoke(app, ["check-config", str(cfg)])
    assert out.exit_code != 0
    text = " ".join(out.output.split())
    assert (
        "watch[0].kind: kind 'distill' is not declared by the packs in force (known: other, pretraining)"
        in text
    )
    assert "panel 'kl' draws a figure of rule 'kl_too_high', which is not loaded" in text
    assert "panel 'kl' is for kind 'dpo', which no pack in force declares" in text


@pytest.mark.parametrize(
    ("trainer", "keys", "kind"),
    [
        ("trl", ["train/reward", "train/reward_std", "train/kl", "train/completions/mean_length",
                 "train/completions/clipped_ratio", "train/epoch", "train/num_tokens", "train/loss"], "rl"),
        ("trl", ["train/reward", "train/completions/mean_length", "train/epoch", "train/num_tokens"], "rl"),
        ("verl", ["critic/score/mean", "actor/kl_loss", "actor/entropy", "response_length/mean",
                  "perf/mfu/actor", "perf/time_per_step", "perf/throughput"], "rl"),
        ("trl", ["train/loss", "train/grad_norm", "train/epoch", "train/num_tokens", "train/entropy",
                 "eval/loss"], "sft"),
        ("huggingface", ["train/loss", "train/grad_norm", "train/learning_rate", "train/epoch"], "sft"),
        ("levanter", ["train/loss", "throughput/tokens_per_second", "throughput/mfu"], "pretraining"),
        ("megatron", ["lm loss", "grad-norm", "throughput", "iteration-time"], "pretraining"),
        (None, ["loss", "accuracy"], "other"),
    ],
)  # fmt: skip
def test_a_runs_kind_is_inferred_from_what_its_trainer_logs(trainer, keys, kind):
    layouts = load_layouts(["hero", "rl", "sft"], [])
    canonical = translation(trainer).metrics(dict.fromkeys(keys, 1.0))
    assert layouts.infer(canonical)[0] == kind, sorted(canonical)
    assert load_layouts(["hero"], []).infer(canonical)[0] in ("pretraining", "other"), "only kinds in force"


def bucket(x0: float, lo: float, hi: float, mean: float, last: float, t: float, count: int = 1) -> Bucket:
    return Bucket(x0=x0, x1=x0 + 1, min=lo, max=hi, mean=mean, last=last, count=count, nonfinite=0, t=t)


def test_what_a_panel_draws_from_the_stored_buckets():
    tokens = Series(axis="step", buckets=[bucket(s, 0, 0, 0, 1000.0 * s, 30.0 * s) for s in (1, 2, 3, 4)])
    tokens.buckets[2] = bucket(3, 0, 0, 0, 10.0, 90.0)  # the counter restarted
    rate = series_data(SeriesSpec(metric="tokens", transform="rate"), tokens, {"tokens": tokens})
    assert rate["mean"] == [None, pytest.approx(1000 / 30), None, pytest.approx((4000 - 10) / 30)]

    mean = Series(axis="step", buckets=[bucket(s, 0.4, 0.6, 0.5, 0.5, s) for s in (1, 2)])
    std = Series(axis="step", buckets=[bucket(2, 0.1, 0.1, 0.1, 0.1, 2)])
    spec = SeriesSpec(metric="r", band={"std": "s"})
    drawn = series_data(spec, mean, {"r": mean, "s": std})
    assert drawn["min"] == [None, pytest.approx(0.4)] and drawn["max"] == [None, pytest.approx(0.6)]
    assert drawn["band"] == "std" and drawn["spread"]
    share = series_data(SeriesSpec(metric="c", transform="percent"), std, {"c": std})
    assert share["mean"] == [pytest.approx(10.0)]

    longest = Series(
        axis="step", buckets=[bucket(s, 0, m, 0, m, s) for s, m in ((1, 700), (2, 1024), (3, 900))]
    )
    cut = Series(axis="step", buckets=[bucket(s, 0, c, 0, c, s) for s, c in ((1, 0), (2, 0.2), (3, 0))])
    every = {"max": longest, "clip": cut}
    cap = Line(label="cap", highest_of="max", when="clip")
    assert line_value(cap, every, {}, {}) == 1024, "the longest response of a batch that had cut ones"
    assert line_value(cap, {"max": longest}, {}, {}) is None, "no share cut logged: no cap can be told"
    assert line_value(Line(label="b", setting="kl_budget"), every, {"kl_budget": 0.1}, {}) == 0.1
    figures = {"rl_reward_collapse": {"baseline": 0.47, "threshold": math.nan}}
    assert line_value(Line(label="b", rule="rl_reward_collapse"), every, {}, figures) == 0.47
    assert line_value(Line(label="b", rule="other_rule"), every, {}, figures) is None
