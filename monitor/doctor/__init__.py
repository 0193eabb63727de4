"""``herowatch doctor``: a set-up checked before it is trusted (sources, runs against rules, receivers)."""
