"""Behind a reverse proxy: believe ``X-Forwarded-*`` headers only from the proxies in
``HEROWATCH_TRUSTED_PROXIES`` (addresses or CIDRs); from anyone else they are ignored.

From a trusted proxy, ``X-Forwarded-Proto`` sets the request's scheme (so cookies get ``Secure`` and
the CSRF origin check expects ``https://``), ``X-Forwarded-Host`` its Host, and ``X-Forwarded-For``
its client address: the right-most address that is not itself a trusted proxy (the left-most entries
are whatever the client chose to send). The client address is what login throttling counts by.

uvicorn's own proxy-header handling trusts 127.0.0.1 by default; ``herowatch serve`` turns it off so
that this is the only place that decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
PEER_KEY = "herowatch.peer"


def networks(items: Iterable[str]) -> list[Network]:
    return [ipaddress.ip_network(t, strict=False) for t in items]


def address_in(address: str | None, nets: list[Network]) -> bool:
    if not address or not nets:
        return False
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    return any(ip in net for net in nets)


def _last(value: bytes) -> str:
    return value.decode("latin-1").split(",")[-1].strip()


class ForwardedHeaders:
    def __init__(self, app: ASGIApp, trusted: Iterable[str]) -> None:
        self.app = app
        self.trusted: list[Network] = networks(trusted)

    def is_trusted(self, address: str | None) -> bool:
        return address_in(address, self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if client:
            scope[PEER_KEY] = client[0]  # the address that connected (sign-in headers are believed by it)
        if scope["type"] not in ("http", "websocket") or not client or not self.is_trusted(client[0]):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        scope = dict(scope)
        proto = headers.get(b"x-forwarded-proto")
        if proto is not None and _last(proto).lower() in ("http", "https"):
            scope["scheme"] = _last(proto).lower()
        forwarded_for = headers.get(b"x-forwarded-for")
        if forwarded_for is not None:
            hops = [h.strip() for h in forwarded_for.decode("latin-1").split(",") if h.strip()]
            for hop in reversed(hops):
                if not self.is_trusted(hop):
                    scope["client"] = (hop, 0)
                    break
        forwarded_host = headers.get(b"x-forwarded-host")
        if forwarded_host is not None and _last(forwarded_host):
            host = _last(forwarded_host).encode("latin-1")
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"host"] + [(b"host", host)]
        await self.app(scope, receive, send)
