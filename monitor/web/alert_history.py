"""``GET /api/alerts`` over a time range (``from``, ``to``, ``rule``, ``cursor``): the alert history,
read from the database a page at a time (``storage.alert_history``). Times are ISO 8601
(``2026-05-28T20:00Z``), epoch seconds, or a duration meaning that long ago (``24h``). The next page
is linked in the ``Link`` header (``rel="next"``) and its cursor given in ``X-Next-Cursor``."""

from __future__ import annotations

import math
import re
from datetime import datetime
from urllib.parse import urlencode

from fastapi import HTTPException, Request

from monitor.durations import parse_duration
from monitor.storage import runs_repo, views
from monitor.storage.alert_history import HistoryQuery, history_page
from monitor.web import status
from monitor.web.context import ApiContext
from monitor.web.schemas import AlertOut

_CURSOR = re.compile(r"^(\d{1,12}(?:\.\d{1,6})?)_(\d{1,12})$")
MAX_RULES = 50
MAX_EPOCH = 1e11  # the year 5138: later is no time anyone means


def when(text: str | None, now: float, name: str) -> float | None:
    """A time parameter as epoch seconds; 400 naming the parameter when it is none of the forms."""
    if text is None or text == "":
        return None
    text = text.strip().removesuffix(" ago")
    bad = HTTPException(
        400,
        f"{name}: {text[:40]!r} is not a time: use ISO 8601 (2026-05-28T20:00Z), epoch seconds, "
        "or a duration ago (24h)",
    )
    try:
        v = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(v) and 0 <= v < MAX_EPOCH:
            return v
        raise bad
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if dt.tzinfo is None:
            raise HTTPException(400, f"{name}: give a time zone (e.g. {text[:40]}Z for UTC)")
        at = dt.timestamp()
        if not 0 <= at < MAX_EPOCH:
            raise bad
        return at
    except (ValueError, OverflowError):
        pass
    try:
        ago = parse_duration(text)
    except (ValueError, TypeError, OverflowError):
        raise bad from None
    if not (math.isfinite(ago) and 0 <= ago <= now):
        raise bad
    return now - ago


def cursor_of(text: str | None) -> tuple[float, int] | None:
    if not text:
        return None
    m = _CURSOR.match(text)
    if m is None:
        raise HTTPException(400, "cursor: not a cursor this API gave (take it from X-Next-Cursor)")
    at, alert_id = float(m[1]), int(m[2])
    if at >= MAX_EPOCH or alert_id > 2**31:
        raise HTTPException(400, "cursor: not a cursor this API gave (take it from X-Next-Cursor)")
    return at, alert_id


def rules_of(text: str | None) -> list[str]:
    rules = [r.strip() for r in (text or "").split(",") if r.strip()]
    if len(rules) > MAX_RULES:
        raise HTTPException(400, f"rule: at most {MAX_RULES} rule names")
    return rules


def history(
    ctx: ApiContext,
    *,
    start: float | None,
    end: float | None,
    rules: list[str],
    run: str | None,
    state: str | None,
    severity: str | None,
    after: tuple[float, int] | None,
    limit: int,
) -> tuple[list[AlertOut], tuple[float, int] | None]:
    now = ctx.now()
    with ctx.sessions() as s:
        silences = views.active_silence_specs(s, now, ctx.silences)
        runs = list(dict.fromkeys([run, *(r.id for r in views.lookup_runs(s, run))])) if run else None
        query = HistoryQuery(start, end, rules, runs, state, severity, after)
        rows, more = history_page(s, query, limit)
        found = [status.alert_out(a, silences, now) for a in rows]
        titles = runs_repo.titles(s, (a.run for a in found))
    return [a.model_copy(update={"run_title": titles.get(a.run)}) for a in found], more


def next_headers(request: Request, more: tuple[float, int] | None) -> dict[str, str]:
    if more is None:
        return {}
    cursor = f"{more[0]:.6f}".rstrip("0").rstrip(".") + f"_{more[1]}"
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "cursor"] + [("cursor", cursor)]
    return {"Link": f'<{request.url.path}?{urlencode(params)}>; rel="next"', "X-Next-Cursor": cursor}
