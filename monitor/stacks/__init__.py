"""Stacks of a run's processes: what a wrapper captures (``capture``, ``agent``: the job's side), what it
pushes (``model``), how herowatch asks for them (``broker``) and what they say (``analysis``: which ranks
the rest wait for)."""
