"""Errors as JSON with a clear message (``{"error": ..., "detail": ...}``) for the API, as a page for
the dashboard; never a stack trace. Security headers on every response."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

API_PREFIXES = ("/api/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/fragments/", "/static/")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith(API_PREFIXES) or "application/json" in request.headers.get("accept", "")


def _loc(loc: Any) -> str:
    return ".".join(str(x) for x in loc if x != "body") or "request"


def _error_page(request: Request, status: int, title: str, message: str) -> Response:
    renderer = getattr(request.app.state, "renderer", None)
    ctx = getattr(request.app.state, "ctx", None)
    if renderer is None or ctx is None:
        return HTMLResponse(f"<h1>{status}</h1>", status_code=status)
    from monitor.web.viewer import viewer_of

    html = renderer.render(
        "error.html",
        ctx.now(),
        viewer=viewer_of(request, ctx),
        path=request.url.path,
        refresh=5,
        speed=ctx.speed,
        title=title,
        message=message,
    )
    return HTMLResponse(html, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # Starlette's answer to a body that is not JSON at all: a validation error like the others.
            msg = "the request body is not valid JSON"
            return JSONResponse(
                {
                    "error": f"invalid request: body: {msg}",
                    "detail": [{"loc": ["body"], "msg": msg, "type": "json_invalid"}],
                },
                status_code=422,
            )
        if exc.status_code == 404 and message == "Not Found":
            message = f"nothing at {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)
        title = "Not found" if exc.status_code == 404 else "Refused"
        # a page says who is logged in: a database read, off the event loop
        return await run_in_threadpool(_error_page, request, exc.status_code, title, message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        # ``detail`` keeps FastAPI's documented shape (clients and the OpenAPI schema rely on it);
        # ``error`` says the same in one readable line.
        detail = [
            {
                "loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
                "msg": str(e.get("msg", "")).removeprefix("Value error, "),
                "type": str(e.get("type", "value_error")),
            }
            for e in exc.errors()
        ]
        message = "invalid request: " + "; ".join(f"{_loc(d['loc'])}: {d['msg']}" for d in detail)
        if wants_json(request):
            return JSONResponse({"error": message, "detail": detail}, status_code=422)
        return await run_in_threadpool(_error_page, request, 422, "Not understood", message)

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> Response:
        ref = uuid.uuid4().hex[:12]
        log.exception("unhandled error %s on %s %s", ref, request.method, request.url.path)
        message = f"internal error (reference {ref} in herowatch's log)"
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=500)
        return await run_in_threadpool(_error_page, request, 500, "Something broke", message)


class SecurityHeaders:
    """A plain ASGI middleware (no per-request task overhead): nosniff, no framing, same-origin
    referrers everywhere, a strict Content-Security-Policy (no inline script or style) on pages, and
    HSTS when served over https (directly or behind a trusted proxy)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        docs = scope.get("path", "").startswith(("/docs", "/redoc"))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                ]
                if not docs:
                    headers.append((b"content-security-policy", CSP.encode()))
                if scope.get("scheme") == "https":  # only ever https from now on (a year)
                    headers.append((b"strict-transport-security", b"max-age=31536000"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
