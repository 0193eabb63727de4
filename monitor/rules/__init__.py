"""Health rules: typed rule specs, the detector kinds that evaluate them, and the built-in packs.

Detectors are pure: samples and ``now`` in, findings out. No I/O, no clock of their own.
"""
