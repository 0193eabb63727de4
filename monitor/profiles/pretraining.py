"""Pretraining trainers: Levanter (the canonical names), Megatron-LM, NeMo, torchtitan.

Each key name below is what the trainer logs to W&B, read from the cited source file.
"""

from __future__ import annotations

from monitor.profiles.profile import Profile, register

LEVANTER = register(
    Profile(
        name="levanter",
        trainer="Levanter",
        sources=(
            "stanford-crfm/levanter: src/levanter/callbacks/_metrics.py "
            "(log_step_info, log_performance_stats)",
            "stanford-crfm/levanter: src/levanter/callbacks/watch.py (grad/norm/total)",
            "stanford-crfm/levanter: the training loop (throughput/loading_time: seconds the step's batch "
            "took to load)",
        ),
        keys={
            name: name
            for name in (
                "train/loss",
                "grad/norm/total",
                "optim/learning_rate",
                "optim/skipped_step",
                "throughput/tokens_per_second",
                "throughput/mfu",
                "throughput/duration",
                "throughput/loading_time",
                "eval/loss",
                "eval/paloma/macro_loss",
                "moe/drop_fraction",
                "train/router/routing_entropy_mean",
                "global_step",
            )
        },
        markers=frozenset(
            {
                "grad/norm/total",
                "optim/learning_rate",
                "throughput/tokens_per_second",
                "throughput/mfu",
                "throughput/duration",
                "throughput/examples_per_second",
                "throughput/total_tokens",
                "run_progress",
                "global_step",
            }
        ),
        notes="The canonical vocabulary: nothing is renamed.",
    )
)

MEGATRON = register(
    Profile(
        name="megatron",
        trainer="Megatron-LM",
        sources=(
            "NVIDIA/Megatron-LM: megatron/training/training.py (training_log, evaluate_and_print_results)",
            "NVIDIA/Megatron-LM: pretrain_gpt.py (loss_func: the 'lm loss' key; forward_step: the "
            "'batch-generator' timer)",
            "NVIDIA/Megatron-LM: megatron/core/timers.py (Timers.write: '<timer>-time', seconds per "
            "iteration, the max over ranks)",
        ),
        keys={
            "lm loss": "train/loss",
            "grad-norm": "grad/norm/total",
            "learning-rate": "optim/learning_rate",
            "loss-scale": "optim/loss_scale",
            "iteration-time": "throughput/duration",
            "throughput": "throughput/tflops_per_device",
            "lm loss validation": "eval/loss",
            "batch-generator-time": "throughput/loading_time",
        },
        markers=frozenset(
            {
                "lm loss",
                "grad-norm",
                "learning-rate",
                "loss-scale",
                "iteration-time",
                "batch-size",
                "samples vs steps",
                "params-norm",
                "num-zeros",
                "lm loss validation",
            }
        ),
        notes=(
            "'throughput' is model TFLOP/s per GPU (with --log-throughput and --log-timers-to-tensorboard), "
            "not tokens/s: it maps to throughput/tflops_per_device, watched by the hero pack's flops_drop. "
            "'batch-generator-time' (TensorBoard, with --log-timers-to-tensorboard and --timing-log-level 2) "
            "is the seconds an iteration spent fetching its batches: goodput's data loading."
        ),
    )
)

NEMO = register(
    Profile(
        name="nemo",
        trainer="NVIDIA NeMo 2 (Lightning + Megatron strategy)",
        sources=(
            "NVIDIA/NeMo: nemo/lightning/pytorch/strategies/megatron_strategy.py "
            "(training_step: reduced_train_loss, global_step; optimizer_step: grad_norm; "
            "validation_step: val_loss)",
            "NVIDIA/NeMo: nemo/lightning/pytorch/callbacks (TimingCallback: 'train_step_timing in s'; "
            "FLOPsMeasurementCallback: tflops_per_sec_per_gpu)",
        ),
        keys={
            "reduced_train_loss": "train/loss",
            "grad_norm": "grad/norm/total",
            "lr": "optim/learning_rate",
            "loss_scale": "optim/loss_scale",
            "train_step_timing in s": "throughput/duration",
            "tflops_per_sec_per_gpu": "throughput/tflops_per_device",
            "val_loss": "eval/loss",
            "global_step": "global_step",
        },
        markers=frozenset(
            {
                "reduced_train_loss",
                "train_step_timing in s",
                "train_backward_timing in s",
                "consumed_samples",
                "val_loss",
                "trainer/global_step",
                "tflops_per_sec_per_gpu",
            }
        ),
    )
)

TORCHTITAN = register(
    Profile(
        name="torchtitan",
        trainer="torchtitan",
        sources=(
            "pytorch/torchtitan: torchtitan/components/metrics.py (MetricsProcessor.log, log_validation)",
        ),
        keys={
            "loss_metrics/global_avg_loss": "train/loss",
            "grad_norm": "grad/norm/total",
            "lr": "optim/learning_rate",
            "throughput(tps)": "throughput/tokens_per_second_per_device",
            "tflops": "throughput/tflops_per_device",
            "mfu(%)": "throughput/mfu",
            "time_metrics/end_to_end(s)": "throughput/duration",
            "time_metrics/data_loading(s)": "throughput/loading_time",
            "time_metrics/data_loading(%)": "throughput/loading_fraction",
            "validation_metrics/loss": "eval/loss",
        },
        scale={"time_metrics/data_loading(%)": 0.01},
        markers=frozenset(
            {
                "loss_metrics/global_avg_loss",
                "loss_metrics/global_max_loss",
                "throughput(tps)",
                "mfu(%)",
                "tflops",
                "time_metrics/end_to_end(s)",
                "time_metrics/data_loading(s)",
                "memory/max_reserved(GiB)",
                "memory/num_ooms",
            }
        ),
        notes="throughput(tps) is per device; time_metrics/end_to_end(s) is seconds per step; "
        "time_metrics/data_loading(s) the mean seconds a step waited for data since the last log, "
        "data_loading(%) their share of that time (goodput's data loading).",
    )
)
