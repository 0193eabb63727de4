"""The Hugging Face Transformers Trainer, and TRL (whose RL trainers log through it).

The Trainer logs ``loss``, ``grad_norm``, ``learning_rate``, ``epoch`` and ``eval_*``; its W&B callback
renames them with ``rewrite_logs``: ``eval_x`` -> ``eval/x``, everything else -> ``train/x``. Both
spellings are mapped (MLflow and other loggers keep the raw names).
"""

from __future__ import annotations

from monitor.profiles.profile import Profile, register

HUGGINGFACE = register(
    Profile(
        name="huggingface",
        trainer="Hugging Face Transformers Trainer",
        sources=(
            "huggingface/transformers: src/transformers/trainer.py (_maybe_log_save_evaluate, log)",
            "huggingface/transformers: src/transformers/integrations/integration_utils.py "
            "(rewrite_logs, WandbCallback.on_log; TensorBoardCallback.on_log writes the same train/ tags; "
            "MLflowCallback.on_log logs the Trainer's own names: loss, grad_norm, learning_rate, eval_loss)",
        ),
        keys={
            "train/loss": "train/loss",
            "loss": "train/loss",
            "train/grad_norm": "grad/norm/total",
            "grad_norm": "grad/norm/total",
            "train/learning_rate": "optim/learning_rate",
            "learning_rate": "optim/learning_rate",
            "eval/loss": "eval/loss",
            "eval_loss": "eval/loss",
            "train/global_step": "global_step",
            "train/num_input_tokens_seen": "tokens_seen",
        },
        markers=frozenset(
            {
                "train/grad_norm",
                "train/learning_rate",
                "train/epoch",
                "train/global_step",
                "train/num_input_tokens_seen",
                "eval/runtime",
                "eval/samples_per_second",
                "learning_rate",
                "epoch",
                "eval_runtime",
            }
        ),
    )
)

TRL = register(
    Profile(
        name="trl",
        trainer="TRL (GRPOTrainer, PPOTrainer) on the Hugging Face Trainer",
        extends="huggingface",
        sources=(
            "huggingface/trl: trl/trainer/grpo_trainer.py (_generate_and_score_completions, "
            "_compute_loss: reward, reward_std, kl, entropy, completions/*)",
            "huggingface/trl: trl/trainer/ppo_trainer.py (train: objective/kl, objective/entropy, "
            "objective/scores)",
        ),
        keys={
            "train/reward": "rl/reward/mean",
            "train/reward_std": "rl/reward/std",
            "train/kl": "rl/kl",
            "train/entropy": "rl/entropy",
            "train/completions/mean_length": "rl/response_length/mean",
            "train/completions/clipped_ratio": "rl/response_length/clip_ratio",
            "train/completions/max_length": "rl/response_length/max",
            "train/completions/min_length": "rl/response_length/min",
            "train/num_tokens": "tokens_seen",
            "train/objective/scores": "rl/reward/mean",
            "train/objective/kl": "rl/kl",
            "train/objective/entropy": "rl/entropy",
        },
        markers=frozenset(
            {
                "train/reward_std",
                "train/completions/mean_length",
                "train/completions/clipped_ratio",
                "train/completions/max_length",
                "train/clip_ratio",
                "train/num_tokens",
                "train/objective/kl",
                "train/objective/scores",
                "train/objective/rlhf_reward",
            }
        ),
    )
)
