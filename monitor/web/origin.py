"""Is a form POST from one of herowatch's own pages? The second CSRF defence, next to the session's
token: browsers say where a request comes from, and a page on another origin cannot hide it.

- ``Sec-Fetch-Site`` (every current browser sends it): only ``same-origin`` (a herowatch page) or
  ``none`` (typed or bookmarked by the person) are accepted; ``same-site`` is refused too, since
  another port or subdomain of the same host is another origin and may be someone else's.
- ``Origin``: must be exactly this server's (scheme, host and port as the browser used them; behind a
  proxy the scheme comes from a trusted ``X-Forwarded-Proto``); ``Origin: null`` (sandboxed frames,
  some redirects) is refused.
- A request with neither header is not from a browser (curl, a script): there is no victim's cookie
  to abuse, and it still needs the session cookie and the session's CSRF token.
"""

from __future__ import annotations

from fastapi import Request

_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _normal(scheme: str, host: str) -> str:
    scheme, host = scheme.lower(), host.strip().lower()
    port = _DEFAULT_PORTS.get(scheme)
    if port and host.endswith(":" + port) and not host.endswith("]"):
        host = host[: -len(port) - 1]
    return f"{scheme}://{host}"


def own_origin(request: Request) -> str:
    return _normal(request.url.scheme, request.headers.get("host") or "")


def cross_origin(request: Request) -> str | None:
    """Why this POST is not from herowatch's own pages, or None when it is (or is not from a browser)."""
    site = (request.headers.get("sec-fetch-site") or "").strip().lower()
    if site and site not in ("same-origin", "none"):
        return f"the form was sent from another site (Sec-Fetch-Site: {site[:20]})"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    scheme, sep, host = origin.strip().partition("://")
    if not sep or _normal(scheme, host) != own_origin(request):
        return f"the form was sent from another origin ({origin[:100]!r}, this is {own_origin(request)!r})"
    return None
