"""The Slack stand-in's checks of request bodies, as Slack makes them (Block Kit, metadata), and the
parsing of form fields (JSON strings, booleans, numbers)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tests.standins.slack.records import SlackError

_BLOCK_TYPES = {"section", "header", "context", "actions", "divider", "image", "rich_text", "input", "file"}


def check_blocks(blocks: Any) -> None:
    if blocks is None:
        return
    if not isinstance(blocks, list) or len(blocks) > 50:
        raise SlackError("invalid_blocks")
    for b in blocks:
        if not isinstance(b, dict) or b.get("type") not in _BLOCK_TYPES:
            raise SlackError("invalid_blocks")
        t = b["type"]
        if t == "header" and len((b.get("text") or {}).get("text", "")) > 150:
            raise SlackError("invalid_blocks")
        if t == "section":
            if "text" not in b and "fields" not in b:
                raise SlackError("invalid_blocks")
            if len((b.get("text") or {}).get("text", "")) > 3000 or len(b.get("fields") or []) > 10:
                raise SlackError("invalid_blocks")
        if t == "actions":
            for el in b.get("elements") or []:
                if len(str(el.get("value", ""))) > 2000 or len(str(el.get("action_id", ""))) > 255:
                    raise SlackError("invalid_blocks")


def check_metadata(md: Any) -> dict[str, Any] | None:
    if md is None:
        return None
    if not isinstance(md, dict) or not md.get("event_type") or not isinstance(md.get("event_payload"), dict):
        raise SlackError("invalid_metadata_format")
    return md


def json_field(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            raise SlackError("invalid_arguments") from None
    return v


def truthy(v: Any) -> bool:
    return v is True or str(v).lower() in ("1", "true")


def optional_float(v: Any) -> float | None:
    return None if v in (None, "") else float(v)


def method_set(methods: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(methods) if methods is not None else None
