"""The Slack stand-in's HTTP side: the threading server on 127.0.0.1 and the request handler, which
records every call, applies the injected faults (an HTTP status, a Slack error code, a slow answer before
or after the call takes effect), checks the token and hands the call to ``SlackStandin.answer``.

Every method is ``POST /api/<method>`` (or GET with query parameters) with ``Authorization: Bearer
<token>``; ``chat.*`` bodies are JSON, the others form-encoded; the upload is ``POST /upload/<file_id>``
with raw bytes and no token; a request's ``response_url`` is ``POST /respond/<n>`` (JSON, no token).
``apps.connections.open`` takes the app-level token, every other method the bot token. Every answer
carries the token's scopes in ``X-OAuth-Scopes``."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.standins.slack.records import APP_METHODS, UPLOAD, Call, SlackError

if TYPE_CHECKING:
    from tests.standins.slack.server import SlackStandin

log = logging.getLogger("standin.slack")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("slack stand-in: connection error from %s (client gave up?)", client_address, exc_info=True)


class Handler(BaseHTTPRequestHandler):
    """Subclassed per stand-in with its ``standin`` set (``SlackStandin.start``)."""

    standin: SlackStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - never the headers
        log.debug("slack stand-in: " + format, *args)

    def _reply(self, status: int, body: dict[str, Any] | str, headers: Mapping[str, str] = {}) -> None:  # noqa: B006
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        ctype = "application/json; charset=utf-8" if isinstance(body, dict) else "text/plain; charset=utf-8"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("X-OAuth-Scopes", ",".join(self.standin.scopes))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client timed out and went away
            self.close_connection = True

    def _body(self, raw: bytes) -> dict[str, Any]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        body: dict[str, Any] = {}
        query = urlsplit(self.path).query
        if query:
            body.update({k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()})
        if ctype == "application/json":
            body.update(json.loads(raw or b"{}"))
        elif ctype == "application/x-www-form-urlencoded":
            body.update({k: v[-1] for k, v in parse_qs(raw.decode(), keep_blank_values=True).items()})
        elif raw:
            raise SlackError("invalid_form_data")
        return body

    def do_GET(self) -> None:  # noqa: N802 - Slack accepts GET with query parameters too
        self.do_POST()

    def do_POST(self) -> None:  # noqa: N802
        s = self.standin
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path
        if path.startswith("/respond/"):  # a request's response_url: the app's answer to a person
            try:
                s.receive_response(int(path.rsplit("/", 1)[1]), json.loads(raw or b"{}"))
            except ValueError:
                self._reply(400, "invalid_payload")
                return
            self._reply(200, "ok")
            return
        if path.startswith("/upload/"):
            method, body = UPLOAD, {"file_id": path.rsplit("/", 1)[-1], "bytes": len(raw)}
        elif path.startswith("/api/"):
            method = path[len("/api/") :]
            try:
                body = self._body(raw)
            except (SlackError, ValueError):
                body = {"<unparsed>": raw[:200].decode(errors="replace")}
        else:
            self._reply(404, "not found")
            return
        call = Call(method, body, dict(self.headers.items()))
        with s._lock:
            s.calls.append(call)

        fault = s._take_fault(method)
        if fault is not None and fault.delay and not fault.after_effect:
            s._stopping.wait(fault.delay)
        if fault is not None and fault.status:
            call.status = fault.status
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            if fault.status == 429:
                call.error = "ratelimited"
                self._reply(429, {"ok": False, "error": "ratelimited"}, headers)
            else:
                self._reply(fault.status, f"injected HTTP {fault.status}", headers)
            return
        if fault is not None and fault.error:
            call.error = fault.error
            self._reply(200, {"ok": False, "error": fault.error})
            return

        if method == UPLOAD:
            try:
                s.receive_upload(body["file_id"], raw)
            except KeyError:
                call.status = 404
                self._reply(404, "no such upload")
                return
            answer: dict[str, Any] | str = f"OK - {len(raw)}"
        else:
            answer = self._api(method, body, call)
        if fault is not None and fault.delay and fault.after_effect:
            s._stopping.wait(fault.delay)
        self._reply(200, answer)

    def _api(self, method: str, body: dict[str, Any], call: Call) -> dict[str, Any]:
        s = self.standin
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else body.get("token")
        if "<unparsed>" in body:
            call.error = "invalid_form_data"
        elif not token:
            call.error = "not_authed"
        elif token in (s.token, s.app_token) and token != (s.app_token if method in APP_METHODS else s.token):
            call.error = "not_allowed_token_type"  # a bot token for apps.connections.open, or the reverse
        elif token not in (s.token, s.app_token):
            call.error = "invalid_auth"
        if call.error:
            return {"ok": False, "error": call.error}
        try:
            return s.answer(method, body)
        except SlackError as exc:
            call.error = exc.code
            return {"ok": False, "error": exc.code, **exc.extra}
