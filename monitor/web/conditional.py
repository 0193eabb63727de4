"""Answers made once and sent many times: encoded bytes with their ETag, a ``304 Not Modified`` to a
client that already has them (``If-None-Match``), gzip made once too.

The status readers (``/api/runs``, ``/api/alerts``, the overview and its 5-second refresh) answer from
the current snapshot (``monitor.web.snapshot``): their body is encoded once per snapshot and variant
(query parameters, the viewer), and its ETag covers the variant and the bytes. A client that sends
the ETag back gets 304 with no body while nothing it would see has changed.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from monitor.web.snapshot import Snapshot, SnapshotStore, etag_of

GZIP_MIN = 2048  # as the app's GZipMiddleware: smaller bodies go as they are
CACHE_CONTROL = "private, no-cache"  # a browser may keep it, but asks (If-None-Match) before reuse


@dataclass
class Encoded:
    body: bytes
    etag: str
    media_type: str
    _gzip: bytes | None = field(default=None, repr=False)

    def gzipped(self) -> bytes:
        if self._gzip is None:
            self._gzip = gzip.compress(self.body, compresslevel=5, mtime=0)
        return self._gzip


def encoded(variant: str, body: bytes, media_type: str = "application/json") -> Encoded:
    return Encoded(body, etag_of(variant, body), media_type)


_adapters: dict[Any, TypeAdapter] = {}


def json_bytes(kind: Any, items: Sequence[Any]) -> bytes:
    """``items`` (pydantic models of type ``kind``) as compact JSON: pydantic's encoder, in Rust."""
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(list[kind])
    return adapter.dump_json(list(items))


def not_modified(request: Request, etag: str) -> bool:
    """``If-None-Match`` names this ETag (weak comparison, as RFC 9110 asks for a GET), or ``*``."""
    given = request.headers.get("if-none-match")
    if not given:
        return False
    mine = etag.removeprefix("W/")
    for tag in given.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == mine:
            return True
    return False


def answer(
    request: Request, enc: Encoded, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """The bytes, or 304 when the client has them; gzip made once when the client takes it."""
    common = {"ETag": enc.etag, "Cache-Control": CACHE_CONTROL, **(headers or {})}
    if status_code == 200 and not_modified(request, enc.etag):
        return Response(status_code=304, headers=common)
    if len(enc.body) >= GZIP_MIN:
        common["Vary"] = "Accept-Encoding"
        if "gzip" in request.headers.get("accept-encoding", ""):
            common["Content-Encoding"] = "gzip"
            return Response(enc.gzipped(), status_code, common, media_type=enc.media_type)
    return Response(enc.body, status_code, common, media_type=enc.media_type)


# ---- the snapshot, from async routes --------------------------------------------------------------
def store_of(request: Request) -> SnapshotStore:
    return request.app.state.snapshots


async def current(request: Request) -> Snapshot:
    """The current snapshot: at once when fresh, else built in a worker thread (it reads the database)."""
    store, ctx = store_of(request), request.app.state.ctx
    return store.fresh(ctx) or await run_in_threadpool(store.get, ctx)


async def memo(snap: Snapshot, key: Hashable, make: Callable[[], Any]) -> Any:
    """``snap.memo(key, make)``, in a worker thread when it has to be made."""
    hit = snap.cached(key)
    return hit if hit is not None else await run_in_threadpool(snap.memo, key, make)
