"""Doctor's look at a source before it is polled, one check per source kind: a module here named after
the kind (``wandb.py``, ``prometheus.py``; a new source kind adds its own) with
``check(target, settings) -> Reach``. It answers in seconds whether the source can be looked at at
all (its secret is set, its address answers, its credentials are accepted), so that an unreachable
server is reported with its cause instead of after the client's own retries. A kind without a module
here is polled directly, and a failed poll is judged from its error text.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from alerts.reachability import Cause, cause_of, fix_for
from monitor.settings import Settings
from monitor.sources.registry import SourceTarget

PROBE_TIMEOUT = 10.0  # seconds at most for a look, whatever the source's own timeout


@dataclass
class Reach:
    """What a source's look found: ``cause`` None means it can be polled; ``facts`` say what answered."""

    cause: Cause | None = None
    what: str = ""
    fix: str = ""
    facts: list[str] = field(default_factory=list)


SourceCheck = Callable[[SourceTarget, Settings], Reach]


def check_for(kind: str) -> SourceCheck | None:
    """The check of a source kind, or None when the kind has none."""
    try:
        module = importlib.import_module(f"{__name__}.{kind}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{kind}":
            return None
        raise
    return module.check


def probe(
    url: str,
    *,
    method: str = "GET",
    secret: str = "",
    timeout: float = PROBE_TIMEOUT,
    what: str = "",
    **request: object,
) -> tuple[Reach, httpx.Response | None]:
    """One HTTP request; a failure to connect, or 401/403, is a Reach with its cause and fix."""
    name = what or url
    try:
        with httpx.Client(timeout=min(timeout, PROBE_TIMEOUT), follow_redirects=True) as client:
            resp = client.request(method, url, **request)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        cause = cause_of(exc) or Cause.UNREACHABLE
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Reach(
            cause, f"{name} cannot be reached ({detail})", fix_for(cause, url, secret, timeout)
        ), None
    if resp.status_code in (401, 403):
        return (
            Reach(
                Cause.AUTH,
                f"{name} refuses the credentials (HTTP {resp.status_code})",
                fix_for(Cause.AUTH, url, secret),
            ),
            resp,
        )
    return Reach(), resp
