"""Why a service could not be looked at: the one classification of connection failures that ``herowatch
doctor`` and the receivers' checks share (a refused connection, a timeout, a name that does not
resolve, a TLS handshake that fails, credentials refused, a secret not set).

``cause_of`` reads an exception (httpx, urllib, the socket module, ssl, slack-sdk wraps them),
``cause_in`` an error message that only survives as text (a source's ``PollResult.error``). Each
cause comes with what to do about it (``fix_for``), and the network causes say so.
"""

from __future__ import annotations

import socket
import ssl
from enum import StrEnum
from urllib.parse import urlsplit


class Cause(StrEnum):
    REFUSED = "connection refused"
    TIMEOUT = "timeout"
    DNS = "DNS"
    TLS = "TLS"
    AUTH = "auth"
    MISSING_SECRET = "missing secret"
    UNREACHABLE = "unreachable"  # another network failure (reset, no route, proxy)

    @property
    def network(self) -> bool:
        return self in (Cause.REFUSED, Cause.TIMEOUT, Cause.DNS, Cause.TLS, Cause.UNREACHABLE)


_TEXT = (  # (cause, lower-case fragments of error messages that mean it), most specific first
    (Cause.TLS, ("ssl", "certificate", "tls handshake", "wrong version number")),
    (
        Cause.DNS,
        (
            "name or service not known",
            "nodename nor servname",
            "temporary failure in name resolution",
            "getaddrinfo",
            "no address associated",
            "name resolution",
        ),
    ),
    (Cause.REFUSED, ("connection refused", "errno 111", "connecterror: all connection attempts failed")),
    (Cause.TIMEOUT, ("timed out", "timeout", "no answer in time", "did not respond in time")),
    (
        Cause.AUTH,
        (
            "http 401",
            "http 403",
            "401 unauthorized",
            "403 forbidden",
            "api key was refused",
            "invalid_auth",
            "not_authed",
            "not logged in",
            "authenticationerror",
        ),
    ),
    (Cause.UNREACHABLE, ("connection reset", "no route to host", "network is unreachable", "cannot reach")),
)


def cause_in(text: str) -> Cause | None:
    """The cause an error message names, or None when it names none of them."""
    low = text.lower()
    for cause, fragments in _TEXT:
        if any(f in low for f in fragments):
            return cause
    return None


def cause_of(exc: BaseException) -> Cause | None:
    """The cause of a failed request, following the exception's chain (httpx and urllib wrap the
    socket's own error)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ssl.SSLError | ssl.CertificateError):
            return Cause.TLS
        if isinstance(e, socket.gaierror):
            return Cause.DNS
        if isinstance(e, ConnectionRefusedError):
            return Cause.REFUSED
        if isinstance(e, TimeoutError | socket.timeout):
            return Cause.TIMEOUT
        inner = getattr(e, "reason", None)  # urllib.error.URLError keeps the socket error here
        if isinstance(inner, BaseException) and id(inner) not in seen:
            e = inner
            continue
        e = e.__cause__ or e.__context__
    name = type(exc).__name__.lower()
    if "timeout" in name:
        return Cause.TIMEOUT
    return cause_in(f"{type(exc).__name__}: {exc}")


def where(url: str) -> str:
    """host:port of a URL, for messages."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname or url}:{port}"


def fix_for(cause: Cause, url: str = "", secret: str = "", timeout: float | None = None) -> str:
    """What to do about a cause; ``url`` is the address tried, ``secret`` the variable that holds the
    credential."""
    at = where(url) if url else "the address"
    host = urlsplit(url).hostname if url else "the host"
    wait = f" within {timeout:g}s" if timeout else ""
    return {
        Cause.REFUSED: f"nothing accepts connections at {at}: check the URL's host and port, that the "
        "service runs, and that the network (firewall, proxy) lets this machine through",
        Cause.TIMEOUT: f"no answer from {at}{wait}: check the network path from this machine (firewall, "
        "proxy, VPN: HTTPS_PROXY) and that the service is up",
        Cause.DNS: f"the name {host} does not resolve from this machine: check the URL and this "
        "network's DNS (or the VPN that serves it)",
        Cause.TLS: f"the TLS handshake with {at} fails: check http:// vs https:// in the URL and the "
        "certificate (a private CA goes in SSL_CERT_FILE)",
        Cause.AUTH: f"the credentials were refused: check {secret or 'the token'} (expired, revoked, or "
        "of another account or server?)",
        Cause.MISSING_SECRET: f"set {secret or 'the secret'} in herowatch's environment (never in the "
        "config file)",
        Cause.UNREACHABLE: f"{at} cannot be reached: check the network path from this machine "
        "(routes, firewall, proxy)",
    }[cause]
