"""The sft pack on generated fine-tuning runs: multi-epoch, any loss scale and cadence, batch noise,
the loss drop at each epoch boundary, evaluations. Healthy runs stay quiet; each incident fires its
rule after it starts; the Hugging Face Trainer's own key names get the same alerts."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from monitor.rules.loader import load_pack
from monitor.samples import Sample
from monitor.traces.replay import replay

T0 = 1_700_000_000.0
HF = {"train/loss": "train/loss", "grad/norm/total": "train/grad_norm", "eval/loss": "eval/loss"}


def sft_run(seed: int, incident: Callable[[int, dict, int], None] | None = None, keys=None) -> list[Sample]:
    rng = random.Random(seed)
    every = rng.choice([1.0, 3.0, 10.0])
    steps = int(rng.uniform(2, 5) * 3600 / every)
    epochs = rng.choice([1, 2, 3])
    per_epoch = steps // epochs
    l0, l_end = rng.uniform(1.5, 3.5), rng.uniform(0.3, 1.2)
    tau = rng.uniform(0.05, 0.3) * steps
    noise = rng.uniform(0.03, 0.12)
    eval_every = max(1, steps // rng.choice([10, 20, 40]))
    out = []
    for i in range(steps):
        epoch = i // per_epoch
        loss = (
            (l_end + (l0 - l_end) * math.exp(-i / tau)) * (1 - 0.12 * epoch) * math.exp(rng.gauss(0, noise))
        )
        grad = (0.3 + 2.0 * math.exp(-i / (0.02 * steps))) * math.exp(rng.gauss(0, 0.25))
        if rng.random() < 0.002:
            grad *= 8  # a one-step spike
        m = {"train/loss": loss, "grad/norm/total": grad}
        if i % eval_every == eval_every - 1:
            m["eval/loss"] = (
                (l_end + (l0 - l_end) * math.exp(-i / tau)) * 1.05 * math.exp(rng.gauss(0, 0.003))
            )
        if incident is not None:
            incident(i, m, steps)
        names = keys or {k: k for k in m}
        row = {names[k]: v for k, v in m.items()}
        if keys is not None:  # the Hugging Face Trainer logs these with every loss (its markers)
            row.update({"train/learning_rate": 2e-5, "train/epoch": i / per_epoch})
        out.append(Sample(T0 + i * every, "sft", i, row, "running"))
    return out


def fired(samples) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in replay(samples, load_pack("sft")).firing():
        out.setdefault(e.rule, e.t)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_a_healthy_fine_tune_never_alerts(seed: int) -> None:
    assert fired(sft_run(seed)) == {}


def later(frac: float, change: Callable[[dict], None]) -> Callable[[int, dict, int], None]:
    def incident(i: int, m: dict, steps: int) -> None:
        if i >= int(steps * frac):
            change(m)

    return incident


def _diverge(m: dict) -> None:
    m["train/loss"] *= 2.5


def _nan(m: dict) -> None:
    m["train/loss"] = math.nan


def _surge(m: dict) -> None:
    m["grad/norm/total"] *= 10


def _overfit(m: dict) -> None:
    if "eval/loss" in m:
        m["eval/loss"] *= 1.15


@pytest.mark.parametrize(
    "change, rule",
    [
        (_diverge, "sft_loss_divergence"),
        (_nan, "sft_loss_nonfinite"),
        (_surge, "sft_grad_norm_surge"),
        (_overfit, "sft_eval_regressed"),
    ],
)
@pytest.mark.parametrize("seed", range(6))
def test_each_incident_fires_its_rule(change, rule: str, seed: int) -> None:
    samples = sft_run(seed, later(0.7, change))
    start = samples[int(len(samples) * 0.7)].t
    got = fired(samples)
    assert rule in got and got[rule] >= start, got
    assert {r for r, t in got.items() if t < start} == set()


def test_the_hf_trainer_names_get_the_same_alerts() -> None:
    incident = later(0.7, _diverge)
    canonical = {e.rule for e in replay(sft_run(4, incident), load_pack("sft")).firing()}
    named = {e.rule for e in replay(sft_run(4, incident, keys=HF), load_pack("sft")).firing()}
    assert "sft_loss_divergence" in canonical and named == canonical
