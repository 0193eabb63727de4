"""A watch's ``join:``: how runs its sources find separately are one run (a Slurm job, its log, its W&B
run). Each source's runs get a key from a template over what that source says of them; runs of the
watch with the same key are one run, ``join:<watch>/<key>``, each part keeping its own source-qualified
id (``slurm:...``, ``wandb:...``), shown on the run page with what it gives.

A template is text with fields in braces: ``{name}`` (the run's own id at its source: a W&B run id, a
Slurm job's name), ``{display_name}``, ``{project}``, ``{tags}`` (a W&B run's tags, space-separated), or
any label the source gives (``{slurm_job}``, ``{hosts}``). ``{field~REGEX}`` takes the first group of
REGEX (the whole match without one) found in the field: ``{tags~slurm-(\\d+)}`` reads the job id from a
tag ``slurm-1234``. A run whose template names a field it lacks, or whose pattern does not match, has
no key: it stays a run of its own. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.\-]*)(?:~([^{}]+))?\}")
SCHEDULERS = ("slurm",)  # sources whose word on a run's state is the scheduler's: it always wins
MAX_KEY = 120  # characters of a key (the joined id is join:<watch>/<key>)


class JoinConfig(BaseModel):
    """``join: {by: {slurm: "{slurm_job}", wandb: "{tags~slurm-(\\d+)}", logs: "{name}"}}``."""

    model_config = ConfigDict(extra="forbid")

    by: dict[str, str] = Field(
        description="source kind -> the template of its runs' key; runs with one key are one run. The "
        "order is the order of trust: a run's steps and each metric come from the first part that gives "
        "them; its state from the scheduler (slurm) if it is a part, else from the first part that gives one",
    )

    @field_validator("by")
    @classmethod
    def _by(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) < 2:
            raise ValueError("name at least two sources, each with the template of its runs' key")
        for kind, template in v.items():
            if not FIELD.search(template):
                raise ValueError(f"{kind}: {template!r} names no field ({{name}}, {{slurm_job}}, ...)")
            for m in FIELD.finditer(template):
                if m.group(2):
                    try:
                        re.compile(m.group(2))
                    except re.error as exc:
                        raise ValueError(f"{kind}: pattern {m.group(2)!r}: {exc}") from None
        return v

    def state_order(self) -> list[str]:
        """Whose word on the state wins: the scheduler first, then the order of ``by``."""
        return [k for k in self.by if k in SCHEDULERS] + [k for k in self.by if k not in SCHEDULERS]


def fields_of(name: str | None, display: str | None, project: str | None, labels: Mapping[str, str]) -> dict:
    """What a template may name of a run."""
    out = {str(k): str(v) for k, v in labels.items()}
    tags = sorted(k.removeprefix("tag.") for k, v in labels.items() if k.startswith("tag.") and v == "true")
    out.update({"tags": " ".join(tags)} if tags else {})
    for k, v in (("name", name), ("display_name", display), ("project", project)):
        if v:
            out[k] = v
    return out


def key_of(template: str, fields: Mapping[str, str]) -> str | None:
    """The run's key, or None: a field it lacks, a pattern that does not match, an empty key."""
    missing = False

    def one(m: re.Match[str]) -> str:
        nonlocal missing
        value = fields.get(m.group(1))
        if value is None:
            missing = True
            return ""
        if m.group(2):
            found = re.search(m.group(2), value)
            if found is None:
                missing = True
                return ""
            return found.group(1) if found.groups() else found.group(0)
        return value

    key = FIELD.sub(one, template).strip()
    if missing or not key:
        return None
    return key[:MAX_KEY]
