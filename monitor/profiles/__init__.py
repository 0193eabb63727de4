"""Metric profiles: every trainer's key names mapped to the canonical names the rule packs use.

``PROFILES`` (name -> Profile) is complete once this package is imported. ``Vocabulary`` applies them
where samples enter the rules; ``detect`` tells a run's trainer from its keys. docs/rules.md
("Metric profiles") lists the profiles and the canonical names.
"""

from monitor.profiles import finetuning, pretraining, rl, system  # noqa: F401  (registration)
from monitor.profiles.detect import Detection, detect
from monitor.profiles.profile import CANONICAL, PROFILES, Profile, source_keys
from monitor.profiles.translate import Translation, translation
from monitor.profiles.vocabulary import AUTO, NONE, Vocabulary, choices, describe

__all__ = [
    "AUTO",
    "CANONICAL",
    "NONE",
    "PROFILES",
    "Detection",
    "Profile",
    "Translation",
    "Vocabulary",
    "choices",
    "describe",
    "detect",
    "source_keys",
    "translation",
]
