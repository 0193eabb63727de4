"""Doctor's look at a push watch: its ingest token is set, long enough and not the API token, and its
spool folder can be written (what no poll can see: the door jobs push through)."""

from __future__ import annotations

import os

from alerts.reachability import Cause
from monitor.doctor.source_checks import Reach
from monitor.doctor.source_hints import SOURCE_FIXES
from monitor.settings import MAKE_TOKEN, MIN_TOKEN_CHARS, Settings
from monitor.sources.push_config import PushTarget
from monitor.sources.registry import SourceTarget


def check(target: SourceTarget, settings: Settings) -> Reach:
    assert isinstance(target, PushTarget)
    name = target.token_env
    token = os.environ.get(name, "")
    make = f"set it to {MIN_TOKEN_CHARS}+ random characters, e.g. {MAKE_TOKEN}"
    if not token:
        return Reach(Cause.MISSING_SECRET, f"{name} is not set: jobs cannot push (403)", make)
    if len(token) < MIN_TOKEN_CHARS:
        return Reach(Cause.MISSING_SECRET, f"{name} has {len(token)} characters: it opens nothing", make)
    api = settings.api_token.get_secret_value() if settings.api_token else ""
    if token == api:
        return Reach(Cause.AUTH, f"{name} is the API token", "give jobs an ingest token of their own")
    folder = settings.ingest_dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".doctor"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return Reach(
            Cause.UNREACHABLE, f"cannot write the spool folder {folder}: {exc}", SOURCE_FIXES["push"]
        )
    return Reach(facts=[f"ingest token set ({name})", f"pushes kept in {folder} until read"])
