"""One reachability look for receivers that talk HTTP (``herowatch doctor``): a request that posts
nothing, its failure classified (``alerts.reachability``), any HTTP answer a fact."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from alerts.notifiers.base import CheckProblem, CheckReport
from alerts.reachability import Cause, cause_of, fix_for


def http_look(
    client: httpx.Client,
    url: str,
    rep: CheckReport,
    *,
    method: str = "GET",
    fact: Callable[[httpx.Response], str | None] | None = None,
) -> httpx.Response | None:
    """Send one request to ``url``; add a problem with its cause when nothing answers, or the fact."""
    try:
        resp = client.request(method, url)
    except httpx.HTTPError as exc:
        cause = cause_of(exc) or Cause.UNREACHABLE
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        rep.problems.append(
            CheckProblem(f"{url} cannot be reached ({detail})", fix_for(cause, url), cause=cause)
        )
        return None
    said = fact(resp) if fact is not None else None
    rep.facts.append(said or f"{url} answers (HTTP {resp.status_code})")
    return resp
