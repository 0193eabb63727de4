"""Detector snapshots per run (``rule_state``): written every few polls and at shutdown, read when a
replica takes a watch up."""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.storage import bulk
from monitor.storage.models import RuleState

log = logging.getLogger(__name__)
MAX_BYTES = 4 * 1024 * 1024  # compressed; a bigger snapshot is a bug: skipped (the run starts cold)
LEVEL = 1  # zlib's fastest: the writer compresses every run's snapshot every few polls (read: any level)
# a snapshot is a tree (``rules.snapshot`` bounds its depth): no check for cycles, a container each
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)


def _compressed(state: dict[str, Any]) -> bytes:
    return zlib.compress(_ENCODER.encode(state).encode(), LEVEL)


def save(s: Session, run_id: str, version: int, state: dict[str, Any], now: float) -> None:
    data = _compressed(state)
    if len(data) > MAX_BYTES:
        log.warning("rule state of run %s is %d bytes compressed: not saved", run_id, len(data))
        return
    row = s.get(RuleState, run_id)
    if row is None:
        s.add(RuleState(run_id=run_id, version=version, saved_at=now, data=data))
    else:
        row.version, row.saved_at, row.data = version, now, data


def load(s: Session, run_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    ids = list(run_ids)
    out: dict[str, dict[str, Any]] = {}
    if not ids:
        return out
    for row in s.scalars(select(RuleState).where(RuleState.run_id.in_(ids))):
        try:
            out[row.run_id] = json.loads(zlib.decompress(row.data))
        except (zlib.error, ValueError) as exc:
            log.warning("rule state of run %s is unreadable (%s): its rules start cold", row.run_id, exc)
    return out


def save_many(s: Session, states: dict[str, tuple[int, dict[str, Any]]], now: float) -> None:
    """Several runs' snapshots (run -> (version, state)) in one multi-row upsert."""
    rows = []
    for run_id, (version, state) in states.items():
        data = _compressed(state)
        if len(data) > MAX_BYTES:
            log.warning("rule state of run %s is %d bytes compressed: not saved", run_id, len(data))
            continue
        rows.append({"run_id": run_id, "version": version, "saved_at": now, "data": data})
    bulk.upsert(s, RuleState.__table__, rows, ("run_id",), ("version", "saved_at", "data"))
