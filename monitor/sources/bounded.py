"""A source's answer read as a stream against a byte limit: memory is bounded whatever a server sends.

Every source that reads HTTP itself (Prometheus, MLflow) reads each answer through :func:`read_httpx` or
:func:`read_requests`: a declared ``Content-Length`` over the limit is refused before the body is read,
and a body is counted as it arrives (decompressed) and dropped as soon as it passes the limit. The error
names the limit and the setting that raises it (``max_answer_bytes`` of the watch's source): the source
is unavailable, never a half-read answer taken as data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

DEFAULT_ANSWER_BYTES = 8 << 20
CHUNK = 64 << 10


def answer_limit_field(default: int = DEFAULT_ANSWER_BYTES) -> Any:
    """The ``max_answer_bytes`` setting of a source (8 MiB unless the source says otherwise)."""
    return Field(
        default=default,
        ge=1 << 16,
        le=1 << 31,
        description="largest answer read from the server, in bytes (a larger one is an outage naming it)",
    )


class AnswerTooLarge(Exception):
    """An answer over the byte limit: the message names the limit and the setting."""

    def __init__(self, what: str, limit: int, size: int | None = None) -> None:
        told = f" ({size} bytes declared)" if size is not None else ""
        super().__init__(
            f"{what}: the answer is over the limit of {limit} bytes{told} (max_answer_bytes): not read"
        )
        self.limit = limit


def _declared(headers: Any) -> int | None:
    raw = headers.get("content-length") or ""
    return int(raw) if raw.isdigit() else None


def _collect(chunks: Iterable[bytes], what: str, limit: int) -> bytes:
    """The chunks joined once, when all have come within the limit (no buffer grown and copied on the
    way: an answer over the limit costs its chunks, freed at once)."""
    got: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            got.clear()  # now: the exception's traceback keeps this frame until a cycle collection
            raise AnswerTooLarge(what, limit)
        got.append(chunk)
    return b"".join(got)


def read_httpx(response: Any, what: str, limit: int) -> bytes:
    """The body of a streamed ``httpx`` response (``client.stream(...)``), at most ``limit`` bytes."""
    size = _declared(response.headers)
    if size is not None and size > limit:
        raise AnswerTooLarge(what, limit, size)
    return _collect(response.iter_bytes(CHUNK), what, limit)


def read_requests(response: Any, what: str, limit: int) -> bytes:
    """The body of a ``requests`` response sent with ``stream=True``, at most ``limit`` bytes; the
    connection is released either way."""
    try:
        size = _declared(response.headers)
        if size is not None and size > limit:
            raise AnswerTooLarge(what, limit, size)
        return _collect(response.iter_content(CHUNK), what, limit)
    finally:
        response.close()
