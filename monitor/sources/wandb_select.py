"""Which runs of a W&B project a watch selects: the filter sent to the server, and the same test here
(the server's filter is trusted for cost, not correctness)."""

from __future__ import annotations

import re
from typing import Any

from monitor.sources.wandb_config import WandbTarget
from monitor.sources.wandb_history import RunView


def selector_filter(cfg: WandbTarget) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if cfg.run_ids:
        parts.append({"name": {"$in": cfg.run_ids}})
    if cfg.tags:
        parts.append({"tags": {"$in": cfg.tags}})
    if cfg.name_pattern:
        parts.append({"display_name": {"$regex": cfg.name_pattern}})
    if cfg.states:
        parts.append({"state": {"$in": list(cfg.states)}})
    if len(parts) > 1:
        return {"$and": parts}
    return parts[0] if parts else {}


def runs_filter(cfg: WandbTarget, followed: set[str]) -> dict[str, Any]:
    """The selector, or a run already followed."""
    selector = selector_filter(cfg)
    if followed and selector:
        return {"$or": [selector, {"name": {"$in": sorted(followed)}}]}
    return selector


class Selector:
    """The same selection, checked here too (the server's filter is trusted for cost, not correctness)."""

    def __init__(self, cfg: WandbTarget) -> None:
        self.cfg = cfg
        self.pattern = re.compile(cfg.name_pattern) if cfg.name_pattern else None

    def __call__(self, view: RunView) -> bool:
        cfg = self.cfg
        return (
            (not cfg.run_ids or view.id in cfg.run_ids)
            and (not cfg.tags or bool(set(view.tags) & set(cfg.tags)))
            and (self.pattern is None or self.pattern.search(view.display_name or "") is not None)
            and (not cfg.states or view.state in cfg.states)
        )
