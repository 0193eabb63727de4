"""Recorded traces and the tools built on them: record, replay, backfill and rule tests."""
