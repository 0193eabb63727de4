"""RL trainers that are not built on the Hugging Face Trainer: verl and OpenRLHF (TRL: finetuning.py)."""

from __future__ import annotations

from monitor.profiles.profile import Profile, register

VERL = register(
    Profile(
        name="verl",
        trainer="verl (volcengine)",
        sources=(
            "volcengine/verl: verl/trainer/ppo/metric_utils.py (compute_data_metrics, "
            "compute_throughout_metrics)",
            "volcengine/verl: verl/workers/actor/dp_actor.py (update_policy: actor/kl_loss, actor/entropy, "
            "actor/grad_norm)",
        ),
        keys={
            "critic/rewards/mean": "rl/reward/mean",
            "critic/score/mean": "rl/reward/mean",
            "actor/kl_loss": "rl/kl",
            "actor/reward_kl_penalty": "rl/kl",
            "actor/entropy": "rl/entropy",
            "response_length/mean": "rl/response_length/mean",
            "response_length/clip_ratio": "rl/response_length/clip_ratio",
            "response_length/max": "rl/response_length/max",
            "response_length/min": "rl/response_length/min",
            "perf/throughput": "rl/throughput/tokens_per_second",
            "timing_s/gen": "rl/seconds/rollout",
            "timing_s/update_actor": "rl/seconds/training",
            "perf/mfu/actor": "throughput/mfu",
            "perf/time_per_step": "throughput/duration",
            "actor/grad_norm": "grad/norm/total",
            "actor/lr": "optim/learning_rate",
        },
        scale={"perf/mfu/actor": 100.0},  # a fraction in verl, a percent here
        markers=frozenset(
            {
                "critic/rewards/mean",
                "critic/score/mean",
                "critic/advantages/mean",
                "actor/pg_loss",
                "actor/kl_loss",
                "actor/entropy",
                "actor/ppo_kl",
                "actor/pg_clipfrac",
                "response_length/mean",
                "response_length/clip_ratio",
                "prompt_length/mean",
                "perf/throughput",
                "timing_s/gen",
            }
        ),
        notes=(
            "perf/throughput is tokens per second per GPU. The policy loss (actor/pg_loss) is not a "
            "language-model loss: it is left unmapped, so the loss rules never judge it."
        ),
    )
)

OPENRLHF = register(
    Profile(
        name="openrlhf",
        trainer="OpenRLHF",
        sources=(
            "OpenRLHF/OpenRLHF: openrlhf/trainer/ppo_utils/experience_maker.py (make_experience: kl, reward, "
            "response_length, total_length)",
            "OpenRLHF/OpenRLHF: openrlhf/trainer/ppo_trainer.py (save_logs_and_checkpoints: 'train/%s' keys)",
        ),
        keys={
            "train/reward": "rl/reward/mean",
            "train/kl": "rl/kl",
            "train/response_length": "rl/response_length/mean",
            "train/actor_lr": "optim/learning_rate",
            "train/entropy_loss": "rl/entropy",
        },
        markers=frozenset(
            {
                "train/response_length",
                "train/total_length",
                "train/policy_loss",
                "train/actor_lr",
                "train/return",
                "train/critic_loss",
                "train/critic_lr",
            }
        ),
    )
)
