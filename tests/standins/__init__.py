"""Local stand-ins for the external services herowatch talks to (used by tests and benchmarks)."""
