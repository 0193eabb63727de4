"""W&B's own system metrics (``system.*``), an overlay applied to every run whatever its trainer.

The W&B SDK's system monitor (wandb-core) samples NVML and psutil and logs ``gpu.<i>.gpu`` (utilisation,
percent), ``gpu.<i>.memoryAllocated`` (percent), ``gpu.<i>.temp``, ``gpu.<i>.powerWatts`` and
``proc.memory.availableMB``; the service stores them as ``system.<name>``. Per-GPU keys are folded
into one value per sample. These live in the run's system-metrics stream, not its history: they reach
herowatch from a trace or a source that reads that stream.
"""

from __future__ import annotations

from monitor.profiles.profile import Pattern, Profile, register

WANDB_SYSTEM = register(
    Profile(
        name="wandb_system",
        trainer="W&B default system metrics",
        sources=(
            "wandb/docs: docs/guides/app/features/system-metrics.md",
            "wandb/wandb: core/pkg/monitor (gpu.<i>.* metric names, e.g. ^gpu\\.\\d+\\.powerWatts)",
        ),
        keys={"system.proc.memory.availableMB": "host_memory_available_bytes"},
        scale={"system.proc.memory.availableMB": 1024.0 * 1024.0},
        patterns=(
            Pattern(r"^system\.gpu\.\d+\.gpu$", "gpu_utilization_ratio", "mean", 0.01),
            Pattern(r"^system\.gpu\.\d+\.memoryAllocated$", "gpu_memory_allocated_ratio", "max", 0.01),
            Pattern(r"^system\.gpu\.\d+\.temp$", "gpu_temperature_celsius", "max"),
            Pattern(r"^system\.gpu\.\d+\.powerWatts$", "gpu_power_watts", "sum"),
        ),
        overlay=True,
        notes="NVML utilisation is not DCGM's SM activity: it maps to gpu_utilization_ratio, not "
        "gpu_sm_active_ratio.",
    )
)

# MLflow's system metrics monitor (``mlflow.start_run(log_system_metrics=True)``): NVML and psutil
# samples under ``system/`` (``system/node_<i>/`` when a node id is set), on their own step counter.
_NODE = r"^system/(?:node_[^/]+/)?"
MLFLOW_SYSTEM = register(
    Profile(
        name="mlflow_system",
        trainer="MLflow system metrics",
        sources=(
            "mlflow/mlflow: mlflow/system_metrics/metrics/gpu_monitor.py (gpu_<i>_utilization_percentage, "
            "gpu_<i>_memory_usage_percentage, gpu_<i>_power_usage_watts)",
            "mlflow/mlflow: mlflow/system_metrics/system_metrics_monitor.py (system/, node_<i>/ prefixes)",
        ),
        patterns=(
            Pattern(_NODE + r"gpu_\d+_utilization_percentage$", "gpu_utilization_ratio", "mean", 0.01),
            Pattern(_NODE + r"gpu_\d+_memory_usage_percentage$", "gpu_memory_allocated_ratio", "max", 0.01),
            Pattern(_NODE + r"gpu_\d+_power_usage_watts$", "gpu_power_watts", "sum"),
        ),
        overlay=True,
        notes="NVML utilisation (time a kernel ran), as W&B's: gpu_utilization_ratio, not SM activity.",
    )
)
