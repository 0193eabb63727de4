"""Sources: where samples come from (the simulator, Weights & Biases, Prometheus)."""
