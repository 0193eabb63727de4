"""The CLI's way to a running herowatch: its HTTP API, as ``amtool`` talks to Alertmanager.

One place turns every way a request can fail into a sentence for the person at the terminal and an
exit code: 2 when what they typed was refused (a bad matcher, an unknown id), 1 when herowatch cannot
be reached or will not let them (no server, wrong token, a server error).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import httpx

from monitor import __version__

DEFAULT_URL = "http://127.0.0.1:8080"
URL_ENV = "HEROWATCH_URL"
TOKEN_ENV = "HEROWATCH_API_TOKEN"
CLOCK_SPEED_HEADER = "X-Herowatch-Clock-Speed"


class ApiError(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass
class Answer:
    data: Any
    speed: float  # the server's clock: 1.0, or how much faster the demo's simulated clock runs


def default_url() -> str:
    return os.environ.get(URL_ENV) or DEFAULT_URL


class HerowatchApi:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (url or default_url()).rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise ApiError(f"--url must start with http:// or https://, not {self.url!r}", 2)
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HerowatchApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(
        self, method: str, path: str, *, json: Any = None, params: Any = None, write: bool = False
    ) -> Answer:
        # the CLI is its own door in the audit trail (monitor.web.identity.CLI_AGENT)
        headers = {"Accept": "application/json", "User-Agent": f"herowatch-cli/{__version__}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        elif write:
            raise ApiError(
                f"this changes herowatch, which needs an API token: export {TOKEN_ENV}=<your personal token "
                "from the dashboard's Tokens page, or the automation token>",
                1,
            )
        try:
            r = self._http.request(method, path, json=json, params=params, headers=headers)
        except httpx.TimeoutException:
            raise ApiError(
                f"herowatch at {self.url} did not answer within {self._http.timeout.read:g}s", 1
            ) from None
        except httpx.HTTPError as exc:
            raise ApiError(
                f"no herowatch answers at {self.url} ({_reason(exc)}). Is `herowatch serve` or "
                f"`herowatch demo` running there? Give its address with --url or {URL_ENV}.",
                1,
            ) from None
        body = _json(r)
        if r.is_success and body is not _NOT_JSON:
            return Answer(body, float(r.headers.get(CLOCK_SPEED_HEADER) or 1.0))
        message = body.get("error") if isinstance(body, dict) else None
        if body is _NOT_JSON or not message:
            raise ApiError(
                f"{self.url} answered {r.status_code} {r.reason_phrase} to {method} {path}, not herowatch's "
                "JSON: is --url the address of herowatch?",
                1,
            )
        if r.status_code in (401, 403):
            hint = "" if self.token else f" (no token sent: export {TOKEN_ENV})"
            raise ApiError(f"refused ({r.status_code}): {message}{hint}", 1)
        if 400 <= r.status_code < 500:
            raise ApiError(str(message), 2)
        raise ApiError(f"herowatch failed ({r.status_code}): {message}", 1)


_NOT_JSON = object()


def _json(r: httpx.Response) -> Any:
    if "json" not in r.headers.get("content-type", ""):
        return _NOT_JSON
    try:
        return r.json()
    except ValueError:
        return _NOT_JSON


def _reason(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return text
