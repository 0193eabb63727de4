"""What the TensorBoard and MLflow sources deliver is recognised: the trainers' TensorBoard tags and the
Hugging Face Trainer's MLflow keys detect their profile; MLflow's system metrics fold into the
canonical GPU inputs."""

from __future__ import annotations

import pytest

from monitor.profiles import detect, translation

# What each trainer writes to TensorBoard (the same names it gives W&B: one logging call feeds both),
# and what the Hugging Face Trainer's MLflowCallback logs (the Trainer's own names, no train/ prefix).
SOURCE_KEYS = {
    "megatron": ["lm loss", "grad-norm", "learning-rate", "loss-scale", "iteration-time", "batch-size"],
    "nemo": ["reduced_train_loss", "lr", "global_step", "consumed_samples", "train_step_timing in s"],
    "torchtitan": ["loss_metrics/global_avg_loss", "grad_norm", "throughput(tps)", "mfu(%)", "lr"],
    "huggingface": ["loss", "grad_norm", "learning_rate", "epoch", "eval_loss", "eval_runtime"],
}


@pytest.mark.parametrize("profile", sorted(SOURCE_KEYS))
def test_tensorboard_tags_and_mlflow_keys_detect_their_trainer(profile):
    found = detect(SOURCE_KEYS[profile])
    assert found.profile == profile, found.explain()
    assert "train/loss" in translation(profile).metrics(dict.fromkeys(SOURCE_KEYS[profile], 1.0))


def test_mlflow_system_metrics_fold_into_the_gpu_inputs():
    out = translation(None).metrics(
        {
            "system/gpu_0_utilization_percentage": 40.0,
            "system/gpu_1_utilization_percentage": 80.0,
            "system/node_1/gpu_0_memory_usage_percentage": 91.0,
            "system/gpu_0_memory_usage_percentage": 50.0,
            "system/gpu_0_power_usage_watts": 300.0,
            "system/gpu_1_power_usage_watts": 310.0,
        }
    )
    assert out == {
        "gpu_utilization_ratio": pytest.approx(0.6),
        "gpu_memory_allocated_ratio": pytest.approx(0.91),
        "gpu_power_watts": pytest.approx(610.0),
    }
