"""The server side of bench/api_load.py, run in a child process as `herowatch serve` runs (uvicorn, one
worker): the real app on the bench database, with

- a writer thread that does what the engine does in production while the load runs: every
  ``write_every`` seconds the clock moves on by that much and a tenth of the runs advance (their step,
  last step and poll times) in one commit, and one alert changes (pending <-> firing). Each commit makes
  the snapshot stale, so rebuilds happen inside the measured window at the rate writes come;
- the limit each target is compared with: a minimal ASGI app on the same server and middleware that
  answers the same bytes from memory (the target's own body, with its ETag and 304), so a ratio is the
  price of the app's own work, nothing else;
- ``/bench-stats``: how many snapshot rebuilds there were and how long they took, read before and after
  each load to say how many fell inside it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from alerts.clock import ManualClock
from bench.status_data import NOW
from monitor.settings import Settings
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, Run


def context(url: str):  # noqa: ANN201
    """The API's context on the bench database, at the bench's clock: (engine, ApiContext)."""
    from monitor.web.context import ApiContext

    engine = make_engine(url)
    ctx = ApiContext(
        sessions=make_sessionmaker(engine),
        clock=ManualClock(NOW),
        settings=Settings(database_url=url),
        poll_intervals={"bench": 60.0},
    )
    return engine, ctx


class Rebuilds:
    """Counts the snapshot's builds (the expensive path a write sends the next reader through)."""

    def __init__(self) -> None:
        self.n, self.seconds = 0, 0.0

    def wrap(self, module: Any) -> None:
        inner = module.build

        def build(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                self.n += 1
                self.seconds += time.perf_counter() - t

        module.build = build


def writer(ctx: Any, every: float, stop: threading.Event) -> None:
    """The engine's writes, as a poll cycle makes them: runs advance, an alert changes state."""
    with ctx.sessions() as s:
        ids = list(s.scalars(select(Run.id).order_by(Run.id)))
        alert_ids = list(s.scalars(select(Alert.id).where(Alert.state.in_(("pending", "firing")))))
    turn = 0
    while not stop.wait(every):
        now = ctx.clock.advance(every)
        share = ids[turn % 10 :: 10]
        with ctx.sessions.begin() as s:
            for run in s.scalars(select(Run).where(Run.id.in_(share))):
                run.last_step = (run.last_step or 0) + max(1, round(every / 10))
                run.last_step_at = run.last_seen_at = run.last_polled_at = now
            if alert_ids:
                alert = s.get(Alert, alert_ids[turn % len(alert_ids)])
                alert.state = "firing" if alert.state == "pending" else "pending"
                alert.fired_at = now if alert.state == "firing" else None
                alert.updated_at = now
        turn += 1


class MemoryFloor:
    """The limit: the same bytes from memory, with a strong ETag and 304, on the same server stack."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.cache: dict[str, tuple[float, bytes, str]] = {}

    def body(self, name: str) -> tuple[bytes, str] | None:
        path = self.folder / Path(name).name
        if not path.is_file():
            return None
        mtime = path.stat().st_mtime
        hit = self.cache.get(name)
        if hit is None or hit[0] != mtime:
            data = path.read_bytes()
            hit = (mtime, data, '"' + hashlib.blake2b(data, digest_size=12).hexdigest() + '"')
            self.cache[name] = hit
        return hit[1], hit[2]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        name = scope["path"].rsplit("/", 1)[-1]
        found = self.body(name)
        if found is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        data, etag = found
        kind = b"application/json" if name.endswith(".json") else b"text/html; charset=utf-8"
        asked = dict(scope["headers"]).get(b"if-none-match", b"").decode()
        status, payload = (304, b"") if asked == etag else (200, data)
        headers = [(b"content-type", kind), (b"etag", etag.encode())]
        if status == 200:
            headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def serve(url: str, port: int, floor_dir: str, write_every: float) -> None:
    import uvicorn
    from starlette.responses import Response

    from monitor.web import snapshot
    from monitor.web.app import create_app

    rebuilds = Rebuilds()
    rebuilds.wrap(snapshot)
    _, ctx = context(url)
    app = create_app(ctx)
    app.mount("/bench-floor", MemoryFloor(floor_dir), name="bench-floor")

    @app.get("/bench-stats", include_in_schema=False)
    def stats() -> Response:
        return Response(json.dumps({"rebuilds": rebuilds.n, "seconds": rebuilds.seconds}))

    stop = threading.Event()
    if write_every > 0:
        threading.Thread(target=writer, args=(ctx, write_every, stop), daemon=True).start()
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    finally:
        stop.set()
