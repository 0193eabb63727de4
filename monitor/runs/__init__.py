"""Run figures derived from samples: step rate, ETA, latest values and goodput."""
