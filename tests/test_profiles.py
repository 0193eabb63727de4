"""Metric profiles (monitor/profiles): detection from a run's keys, the translation to the rules' names,
per-run state in the engine and replay, the config field, and what the W&B source reads by default."""

from __future__ import annotations

import math
import re

import pytest

from monitor.config.errors import ConfigError
from monitor.config.loader import parse_config
from monitor.profiles import CANONICAL, PROFILES, Vocabulary, detect, source_keys, translation
from monitor.rules.loader import load_pack
from monitor.samples import Sample
from monitor.sources.wandb_config import WandbTarget
from monitor.traces.replay import replay

# What each trainer logs in one W&B history row (the profile's markers are a subset).
RUN_KEYS = {
    "levanter": ["train/loss", "global_step", "grad/norm/total", "optim/learning_rate", "throughput/mfu"],
    "megatron": ["lm loss", "grad-norm", "learning-rate", "loss-scale", "batch-size", "samples vs steps"],
    "nemo": ["reduced_train_loss", "lr", "global_step", "consumed_samples", "train_step_timing in s"],
    "torchtitan": ["loss_metrics/global_avg_loss", "grad_norm", "throughput(tps)", "mfu(%)", "tflops"],
    "huggingface": [
        "train/loss",
        "train/grad_norm",
        "train/learning_rate",
        "train/epoch",
        "train/global_step",
    ],
    "trl": [
        "train/loss",
        "train/grad_norm",
        "train/learning_rate",
        "train/reward",
        "train/reward_std",
        "train/kl",
        "train/completions/mean_length",
        "train/completions/clipped_ratio",
    ],
    "verl": [
        "critic/rewards/mean",
        "actor/kl_loss",
        "actor/entropy",
        "response_length/mean",
        "perf/throughput",
    ],
    "openrlhf": ["train/reward", "train/kl", "train/response_length", "train/policy_loss", "train/actor_lr"],
}


@pytest.mark.parametrize("profile", sorted(RUN_KEYS))
def test_each_trainer_is_detected_from_its_keys(profile: str) -> None:
    d = detect(RUN_KEYS[profile])
    assert d.profile == profile, d
    assert d.confidence >= 0.75 and d.markers
    assert profile in d.explain()


def test_canonical_names_alone_or_one_stray_key_detect_nothing() -> None:
    assert detect(["train/loss", "eval/loss"]).profile is None
    one = detect(["lm loss"])  # one marker key is not enough evidence
    assert one.profile is None and one.confidence == 0.5
    mixed = detect(["lm loss", "reduced_train_loss"])  # a Megatron key and a NeMo key: undecided
    assert mixed.profile is None and mixed.rival is not None


def test_every_profile_cites_the_trainer_source_and_maps_to_canonical_names() -> None:
    for p in PROFILES.values():
        assert p.sources and all(re.match(r"^[\w.-]+/[\w.-]+: \S", s) for s in p.sources), p.sources
        assert set(p.keys.values()) <= set(CANONICAL)
    hero_metrics = {r.metric for r in load_pack("hero") if r.metric}
    for p in ("levanter", "megatron", "nemo", "torchtitan", "huggingface"):
        provided = set(PROFILES[p].keys.values())
        assert {"train/loss", "grad/norm/total"} <= provided & hero_metrics, p


def test_translation_renames_scales_folds_and_passes_the_rest_through() -> None:
    t = translation("megatron")
    out = t.metrics({"lm loss": 2.5, "grad-norm": 0.7, "my/custom": 3.0, "train/loss": 9.0})
    assert out == {"train/loss": 2.5, "grad/norm/total": 0.7, "my/custom": 3.0}  # the mapped key wins
    verl = translation("verl").metrics({"perf/mfu/actor": 0.41, "critic/rewards/mean": 0.5})
    assert verl == {"throughput/mfu": pytest.approx(41.0), "rl/reward/mean": 0.5}  # a fraction -> percent
    system = translation(None).metrics(
        {
            "system.gpu.0.gpu": 40.0,
            "system.gpu.1.gpu": 80.0,
            "system.gpu.0.temp": 61.0,
            "system.gpu.1.temp": 75.0,
            "system.proc.memory.availableMB": 2048.0,
        }
    )
    assert system == {
        "gpu_utilization_ratio": pytest.approx(0.6),
        "gpu_temperature_celsius": 75.0,
        "host_memory_available_bytes": 2048.0 * 2**20,
    }
    assert math.isnan(
        translation(None).metrics({"system.gpu.0.gpu": 5.0, "system.gpu.1.gpu": math.nan})[
            "gpu_utilization_ratio"
        ]
    )
    # verl logs two reward keys: critic/rewards/mean (listed first) is the one kept
    both = translation("verl").metrics({"critic/score/mean": 0.9, "critic/rewards/mean": 0.4})
    assert both == {"rl/reward/mean": 0.4}


def test_levanter_names_pass_untouched_and_none_turns_mapping_off() -> None:
    s = Sample(t=1.0, run="r", step=1, metrics={"train/loss": 2.0, "grad/norm/total": 1.0})
    assert translation("levanter").sample(s) is s
    raw = Sample(t=1.0, run="r", step=1, metrics={"lm loss": 2.0})
    assert translation("none").sample(raw) is raw


def test_the_vocabulary_detects_per_run_follows_the_config_and_resumes_from_stored_stats() -> None:
    v = Vocabulary()
    meg = [Sample(t=1.0, run="a", step=1, metrics=dict.fromkeys(RUN_KEYS["megatron"], 1.0))]
    assert "train/loss" in v.translate("a", meg)[0].metrics
    assert v.describe("a")["name"] == "megatron" and v.describe("a")["how"] == "detected"
    chosen = v.translate("b", meg, "huggingface")  # set in the config: no detection, HF names only
    assert "lm loss" in chosen[0].metrics and v.describe("b")["how"] == "configured"
    assert v.translate("c", meg, "none")[0].metrics == meg[0].metrics
    # after a restart: a sample carrying only 'lm loss' is still known to be Megatron's
    fresh = Vocabulary()
    stored = {"metrics_profile": v.describe("a")}
    one = [Sample(t=2.0, run="a", step=2, metrics={"lm loss": 3.0})]
    assert fresh.translate("a", one, "auto", stored)[0].metrics == {"train/loss": 3.0}
    assert fresh.translate("z", one)[0].metrics == {"lm loss": 3.0}  # one key is too little evidence


def _megatron_divergence() -> list[Sample]:
    samples = []
    for step in range(900):
        loss = 2.2 + 3.0 / (1 + step / 150) + 0.02 * math.sin(step * 1.7) + (1.5 if step >= 600 else 0.0)
        samples.append(
            Sample(
                t=1.7e9 + 10 * step,
                run="meg",
                step=step,
                metrics={"lm loss": loss, "grad-norm": 0.6, "learning-rate": 3e-4, "batch-size": 512},
                state="running",
            )
        )
    return samples


def test_replay_maps_like_the_engine_and_without_the_profile_megatron_is_unwatched() -> None:
    hero = load_pack("hero")
    auto = {e.rule for e in replay(_megatron_divergence(), hero).firing()}
    assert "loss_spike" in auto
    off = replay(_megatron_divergence(), hero, metrics_profile="none").firing()
    # without the profile the divergence of a Megatron loss goes unnoticed, but not silently:
    assert [e.rule for e in off] == ["watching_blind"]
    said = off[0].summary
    assert said.startswith("meg: no value of train/loss") and "loss_spike" in said
    assert "the run logs 'lm loss'" in said and "metrics_profile: megatron" in said
    assert off[0].t - 1.7e9 <= 10 * 40, "said within the run's first 40 steps, not when an incident is missed"


def test_metrics_profile_in_the_config_is_checked_with_its_line() -> None:
    text = "watch:\n  - name: w\n    metrics_profile: megatorn\n    sim: {}\n"
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "w.yaml")
    rendered = exc.value.render()
    assert "w.yaml:3" in rendered and "megatron" in rendered and "unknown metrics profile" in rendered
    ok = parse_config(text.replace("megatorn", "megatron"), "w.yaml")
    assert ok.watch[0].metrics_profile == "megatron"


def test_wandb_reads_every_known_trainer_key_by_default() -> None:
    keys = WandbTarget(entity="e", project="p").keys
    assert set(source_keys()) <= set(keys)
    assert {"lm loss", "train/grad_norm", "critic/rewards/mean", "train/loss"} <= set(keys)


def test_check_config_explain_names_the_mapping_and_the_rules_a_trainer_cannot_feed(tmp_path) -> None:
    from typer.testing import CliRunner

    from monitor.cli.main import app

    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        "watch:\n  - {name: meg, metrics_profile: megatron, sim: {}}\n"
        "  - {name: raw, metrics_profile: none, sim: {}}\n"
    )
    out = CliRunner().invoke(app, ["check-config", str(cfg), "--explain"])
    assert out.exit_code == 0, out.output
    assert "metric names: Megatron-LM (metrics_profile: megatron)" in out.output
    assert (
        "'lm loss' -> train/loss" in out.output
        and "NVIDIA/Megatron-LM: megatron/training/training.py" in out.output
    )
    blind = next(line for line in out.output.splitlines() if "logs nothing for" in line)
    assert "throughput_drop (throughput/tokens_per_second)" in blind and "loss_spike" not in blind
    assert "host_memory_low" not in blind  # the W&B system overlay can feed it
    assert "raw:\n  metric names: used as logged" in out.output


def test_shapes_learn_as_each_shape_adds():
    """``Shapes.add`` (inlined for speed) learns what ``Shape.add`` of each value learns, and stops
    after ``LEARN`` finite values a key."""
    import math
    import random

    from monitor.profiles.shape import LEARN, Shape, Shapes

    rnd = random.Random(3)
    shapes, want = Shapes(), {}
    keys = ["loss", "step", "lr", "gpu/mem", "tokens_total"]
    shapes.learn(keys)
    for i in range(60):
        metrics = {
            k: rnd.choice([math.nan, math.inf, 1.0, 2.0, rnd.random(), -rnd.random(), 7]) for k in keys
        }
        metrics["step"] = float(i // 2)  # a counter: whole, never going down
        shapes.add(metrics)
        for k, v in metrics.items():
            shape = want.setdefault(k, Shape())
            if shape.count < LEARN:
                shape.add(v)
    assert dict(shapes.view()) == want
    assert not shapes.busy
