"""Who is asking, decided once per request: the shared automation token, a personal API token, a person
named by a trusted sign-in proxy, or a dashboard session (the token login or OpenID Connect).

In that order:

1. ``Authorization: Bearer``: the shared ``HEROWATCH_API_TOKEN`` is the ``automation`` role; a personal
   token (``hwp_...``, ``monitor.web.people_tokens``) is its person with the role it was issued with. Any
   other bearer value is refused (401), never ignored.
2. The proxy's identity header (``HEROWATCH_AUTH_PROXY_USER_HEADER``, ``X-Forwarded-User`` by default),
   when a sign-in proxy is configured: believed only when the connection comes from
   ``HEROWATCH_AUTH_PROXIES``; from anyone else the request is refused (403) and the attempt recorded.
   Without ``HEROWATCH_AUTH_PROXIES`` the header means nothing. The groups header maps to a role
   (``HEROWATCH_ROLE_GROUPS``); a person none of whose groups has a role is refused.
3. The dashboard's session cookie (``monitor.web.auth``).

Refusals are written to the audit trail, at most ``RefusalBudget`` of them per client address and overall
in ten minutes (a flood of bad requests cannot grow the table without bound; the rest are counted in the
log).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections import deque

from fastapi import HTTPException, Request
from sqlalchemy.exc import SQLAlchemyError

from alerts.text import bad_character
from monitor.delivery.actor import Actor, Door, Role, Via, best_role
from monitor.settings import Settings
from monitor.storage import audit_repo
from monitor.web.auth import (
    SESSION_COOKIE,
    WRONG_TOKEN,
    session_of,
    signing_key,
    token_matches,
    unauthorized,
)
from monitor.web.context import ApiContext
from monitor.web.proxy import PEER_KEY, address_in, networks

log = logging.getLogger(__name__)
ACTOR_KEY = "herowatch.actor"
REFUSAL_KEY = "herowatch.refusal"
CLI_AGENT = "herowatch-cli/"
MAX_NAME = 200
MAX_GROUPS_HEADER = 4096


def door_of(request: Request) -> Door:
    if request.url.path.startswith("/api/slack/"):
        return Door.slack
    if not request.url.path.startswith("/api/"):
        return Door.dashboard
    agent = request.headers.get("user-agent") or ""
    return Door.cli if agent.startswith(CLI_AGENT) else Door.api


def roles_table(settings: Settings) -> dict[Role, set[str]]:
    """``admin=hw-admins;responder=oncall,ml-sre;viewer=*`` as role -> groups."""
    out: dict[Role, set[str]] = {}
    for part in settings.role_groups.split(";"):
        role, sep, groups = part.partition("=")
        if sep and role.strip() in Role.__members__ and role.strip() != Role.automation:
            out.setdefault(Role(role.strip()), set()).update(
                g.strip() for g in groups.split(",") if g.strip()
            )
    return out


def role_of_groups(settings: Settings, groups: set[str]) -> Role | None:
    """The highest role any of ``groups`` has (``*`` matches anyone signed in); None without a match."""
    table = roles_table(settings)
    return best_role({role for role, names in table.items() if "*" in names or names & groups})


def sign_in_configured(settings: Settings) -> bool:
    return bool(settings.api_token or settings.auth_proxies or settings.oidc_issuer)


class RefusalBudget:
    """How many refusals may still be written to the audit trail: per client and overall, per 10 min."""

    def __init__(self, per_client: int = 30, overall: int = 600, window: float = 600.0) -> None:
        self.per_client, self.overall, self.window = per_client, overall, window
        self._all: deque[float] = deque()
        self._by: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self.dropped = 0

    def take(self, client: str, now: float) -> bool:
        with self._lock:
            while self._all and self._all[0] <= now - self.window:
                self._all.popleft()
            mine = self._by.get(client)
            while mine and mine[0] <= now - self.window:
                mine.popleft()
            if mine is not None and not mine:
                del self._by[client]
                mine = None
            if len(self._all) >= self.overall or (mine is not None and len(mine) >= self.per_client):
                self.dropped += 1
                return False
            self._all.append(now)
            self._by.setdefault(client, deque()).append(now)
            return True


def record_refusal(
    request: Request, ctx: ApiContext, who: str, via: Via, why: str, role: str | None = None
) -> None:
    """A refused attempt in the audit trail (within the budget): who it claimed to be, the door, the
    route, why."""
    client = request.client.host if request.client else "unknown"
    budget: RefusalBudget = request.app.state.refusals
    if not budget.take(client, time.time()):
        return
    try:
        with ctx.sessions.begin() as s:
            audit_repo.record(
                s,
                at=ctx.now(),
                actor=who,
                role=role,
                via=via.value,
                door=door_of(request).value,
                action="refused",
                target=f"{request.method} {request.url.path}"[:300],
                outcome="refused",
                detail=f"{why} (from {client})",
            )
    except SQLAlchemyError as exc:
        log.warning("could not record a refused request: %s", type(exc).__name__)


def _plain_name(value: str) -> str | None:
    name = value.strip()
    if not name or len(name) > MAX_NAME or bad_character(name) is not None:
        return None
    return name


def _refuse_forged(request: Request, ctx: ApiContext, user: str) -> None:
    """Identity headers from anywhere but the sign-in proxy: 403, recorded in the audit trail."""
    peer = request.scope.get(PEER_KEY) or (request.client.host if request.client else None)
    if not address_in(peer, networks(ctx.settings.auth_proxies)):
        why = f"identity headers are believed only from the sign-in proxy, not from {peer}"
        record_refusal(request, ctx, (_plain_name(user) or "?")[:100], Via.proxy, why)
        raise HTTPException(403, f"refused: {why} (HEROWATCH_AUTH_PROXIES)")


def _from_proxy(request: Request, ctx: ApiContext, user: str) -> Actor:
    settings = ctx.settings
    _refuse_forged(request, ctx, user)
    name = _plain_name(user)
    if name is None:
        raise HTTPException(400, f"the {settings.auth_proxy_user_header} header is not a plain-text name")
    raw = header_text(request, settings.auth_proxy_groups_header) or ""
    groups = {g.strip() for g in raw[:MAX_GROUPS_HEADER].split(",") if g.strip()}
    role = role_of_groups(settings, groups)
    if role is None:
        why = f"none of {name}'s groups has a role (HEROWATCH_ROLE_GROUPS)"
        record_refusal(request, ctx, name, Via.proxy, why)
        raise HTTPException(403, f"refused: {why}")
    actor = Actor(name=name, role=role, door=door_of(request), via=Via.proxy)
    if request.app.state.proxy_sign_ins.first_in_a_while(name, role, time.time()):
        _record_sign_in(ctx, actor)
    return actor


class ProxySignIns:
    """When a person the proxy signed in was last seen by this replica (and with which role): their first
    request in ``SESSION`` (or with another role) is a sign-in in the audit trail; the proxy has no other
    moment herowatch could see. At most ``MAX`` people are remembered (the oldest is forgotten)."""

    SESSION = 12 * 3600.0
    MAX = 10_000

    def __init__(self) -> None:
        self._seen: dict[str, tuple[Role, float]] = {}
        self._lock = threading.Lock()

    def first_in_a_while(self, name: str, role: Role, now: float) -> bool:
        with self._lock:
            last = self._seen.pop(name, None)
            fresh = last is None or last[0] != role or now - last[1] > self.SESSION
            self._seen[name] = (role, now if fresh or last is None else last[1])
            while len(self._seen) > self.MAX:
                self._seen.pop(next(iter(self._seen)))
            return fresh


def _record_sign_in(ctx: ApiContext, actor: Actor) -> None:
    try:
        with ctx.sessions.begin() as s:
            audit_repo.record(
                s,
                at=ctx.now(),
                actor=actor.name,
                role=actor.role.value,
                via=actor.via.value,
                door=actor.door.value,
                action="sign_in",
                target="session",
                detail=f"through the sign-in proxy as {actor.role.value}",
            )
    except SQLAlchemyError as exc:
        log.warning("could not record a sign-in: %s", type(exc).__name__)


def _from_bearer(request: Request, ctx: ApiContext, value: str) -> Actor:
    from monitor.web import people_tokens  # its table is read only for a personal token

    if token_matches(ctx.settings, value):
        return Actor.automation(door_of(request))
    if value.startswith(people_tokens.PREFIX):
        actor = people_tokens.actor_of(ctx, value, door_of(request))
        if actor is not None:
            return actor
    record_refusal(
        request,
        ctx,
        "?",
        Via.personal if value.startswith(people_tokens.PREFIX) else Via.token,
        "a wrong token",
    )
    raise unauthorized(WRONG_TOKEN)


def actor_of(request: Request, ctx: ApiContext) -> Actor | None:
    """Who is asking (None: nobody signed in), decided once per request. May raise the request's refusal.
    A database read for sessions and personal tokens: call it from a worker thread."""
    if ACTOR_KEY in request.scope:
        return request.scope[ACTOR_KEY]
    if REFUSAL_KEY in request.scope:  # refused (and recorded) once: the same answer, not a second line
        raise request.scope[REFUSAL_KEY]
    try:
        actor = _find(request, ctx)
    except HTTPException as exc:
        request.scope[REFUSAL_KEY] = exc
        raise
    request.scope[ACTOR_KEY] = actor
    return actor


def header_text(request: Request, name: str) -> str | None:
    """A header as the text it is: HTTP carries bytes, Starlette reads them as Latin-1; a proxy sends
    UTF-8 (``élève``), so it is read as UTF-8 where it is valid UTF-8."""
    raw = request.headers.get(name)
    if raw is None or raw.isascii():
        return raw
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def _find(request: Request, ctx: ApiContext) -> Actor | None:
    actor: Actor | None = None
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    # without a sign-in proxy configured its header is no one's word (as Grafana's auth.proxy when off)
    user = header_text(request, ctx.settings.auth_proxy_user_header) if ctx.settings.auth_proxies else None
    if scheme.lower() == "bearer" and value.strip():
        if user is not None and user.strip():
            _refuse_forged(request, ctx, user)  # a token with someone's name from elsewhere than the proxy
        actor = _from_bearer(request, ctx, value.strip())
    elif user is not None:
        actor = _from_proxy(request, ctx, user)
    elif SESSION_COOKIE in request.cookies:
        session = session_of(request, ctx)
        if session is not None:
            via = Via.oidc if session.method == Via.oidc else Via.token
            if via == Via.token:
                actor = Actor.automation(door_of(request), said=session.subject)
            else:
                actor = Actor(name=session.subject, role=Role(session.role), door=door_of(request), via=via)
    return actor


def proxy_csrf(settings: Settings, actor: Actor) -> str:
    """The CSRF token of a person signed in by the proxy (there is no session): tied to their name."""
    key = signing_key(settings) or b""
    return hmac.new(key, f"herowatch csrf proxy v1|{actor.name}".encode(), hashlib.sha256).hexdigest()[:43]
