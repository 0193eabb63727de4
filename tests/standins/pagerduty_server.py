"""A PagerDuty Events API v2 stand-in on 127.0.0.1 (``POST /v2/enqueue``), after PagerDuty's developer
docs (events-API-v2: "Send an Alert Event" and the overview's response codes):

- it validates the documented event: a JSON object; ``routing_key`` a known 32-character integration
  key; ``event_action`` one of trigger, acknowledge, resolve; ``dedup_key`` at most 255 characters and
  required for acknowledge and resolve; for a trigger a ``payload`` with ``summary`` (at most 1024
  characters), ``source`` and ``severity`` (critical, error, warning, info), an ISO 8601 ``timestamp``,
  string ``component``/``group``/``class``, an object ``custom_details``; ``images`` with an HTTPS
  ``src``; ``links`` with an ``href``; at most 512 KB. It is stricter than PagerDuty in one way: an
  unknown top-level field is an error (a misspelt ``dedup_key`` would otherwise pass unseen);
- it answers like PagerDuty: 202 ``{"status": "success", "message": "Event processed", "dedup_key"}``;
  400 ``{"status": "invalid event", "message": "Event object is invalid", "errors": [...]}``; 429 when a
  rate-limit fault is injected (``Retry-After`` if given); a 5xx when a failure is injected;
- it keeps PagerDuty's alert semantics per (routing key, dedup_key): a trigger opens an alert (a page)
  unless one is open, where it is added to the alert's log; acknowledge and resolve apply to an open
  alert and are dropped otherwise; after a resolve, a trigger opens a new alert.

Tests read ``alerts`` (every alert, with its status and log), ``pages`` (alerts opened) and ``calls``.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROUTING_KEY = "e93facc04764012d7bfb002500d5d1a6"  # 32 characters, like a real integration key
ACTIONS = ("trigger", "acknowledge", "resolve")
SEVERITIES = ("critical", "error", "warning", "info")
TOP_LEVEL = {"routing_key", "event_action", "dedup_key", "payload", "images", "links", "client", "client_url"}
PAYLOAD = {"summary", "source", "severity", "timestamp", "component", "group", "class", "custom_details"}
MAX_BYTES = 512 * 1024
INVALID = "Event object is invalid"


@dataclass
class PdAlert:
    dedup_key: str
    status: str  # triggered | acknowledged | resolved
    summary: str
    severity: str
    log: list[dict[str, Any]] = field(default_factory=list)  # every event applied to it


@dataclass
class Call:
    status: int
    body: Any
    errors: list[str]


class PagerDutyStandin:
    def __init__(self, routing_keys: tuple[str, ...] = (ROUTING_KEY,)) -> None:
        self.routing_keys = set(routing_keys)
        self.alerts: list[PdAlert] = []
        self.calls: list[Call] = []
        self._faults: list[tuple[int, float | None]] = []  # (status, retry_after) for the next calls
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer, headers = standin.answer(self.path, self.headers.get("Content-Type", ""), raw)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> PagerDutyStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- faults and what tests read --------------------------------------------------------------
    def rate_limit(self, times: int = 1, retry_after: float | None = None) -> None:
        self._faults.extend([(429, retry_after)] * times)

    def fail(self, status: int = 500, times: int = 1) -> None:
        self._faults.extend([(status, None)] * times)

    @property
    def pages(self) -> int:
        return len(self.alerts)

    def alert(self, dedup_key: str) -> PdAlert:
        """The latest alert under this key."""
        return [a for a in self.alerts if a.dedup_key == dedup_key][-1]

    def actions(self) -> list[str]:
        """The event_action of every accepted event, in order."""
        return [c.body["event_action"] for c in self.calls if c.status == 202]

    # ---- the API ---------------------------------------------------------------------------------
    def answer(self, path: str, content_type: str, raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            if self._faults:
                status, retry_after = self._faults.pop(0)
                self.calls.append(Call(status, None, []))
                if status == 429:
                    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
                    message = "Requests for this service are arriving too quickly. Please retry later."
                    return 429, {"status": "throttle event", "message": message}, headers
                return status, {"status": "error", "message": "Internal server error"}, {}
            if path != "/v2/enqueue":
                self.calls.append(Call(404, None, ["no such path"]))
                return 404, {"status": "not found", "message": f"no route {path}"}, {}
            body, errors = _parse(content_type, raw)
            if not errors:
                errors = self._validate(body)
            if errors:
                self.calls.append(Call(400, body, errors))
                return 400, {"status": "invalid event", "message": INVALID, "errors": errors}, {}
            key = body.get("dedup_key") or uuid.uuid4().hex
            self._apply(body, key)
            self.calls.append(Call(202, body, []))
            return 202, {"status": "success", "message": "Event processed", "dedup_key": key}, {}

    def _validate(self, e: dict[str, Any]) -> list[str]:
        errors = [f"Unknown field '{k}'" for k in sorted(set(e) - TOP_LEVEL)]
        key = e.get("routing_key")
        if not isinstance(key, str) or len(key) != 32:
            errors.append("Length of 'routing_key' is incorrect (should be 32 characters)")
        elif key not in self.routing_keys:
            errors.append("Invalid routing key")
        action = e.get("event_action")
        if action not in ACTIONS:
            errors.append("'event_action' is invalid (must be one of: trigger, acknowledge, resolve)")
        dedup = e.get("dedup_key")
        if dedup is not None and (not isinstance(dedup, str) or not dedup or len(dedup) > 255):
            errors.append("'dedup_key' must be a string of at most 255 characters")
        if action in ("acknowledge", "resolve") and not dedup:
            errors.append(f"'dedup_key' is required for {action} events")
        if action == "trigger":
            errors += _payload_errors(e.get("payload"))
            errors += _list_errors(e, "images", "src", https=True)
            errors += _list_errors(e, "links", "href", https=False)
        for k in ("client", "client_url"):
            if k in e and not isinstance(e[k], str):
                errors.append(f"'{k}' must be a string")
        return errors

    def _apply(self, e: dict[str, Any], key: str) -> None:
        open_ = [a for a in self.alerts if a.dedup_key == key and a.status != "resolved"]
        action = e["event_action"]
        if action == "trigger" and not open_:
            p = e["payload"]
            self.alerts.append(PdAlert(key, "triggered", p["summary"], p["severity"], [e]))
        elif open_:
            alert = open_[-1]
            alert.log.append(e)
            if action == "acknowledge":
                alert.status = "acknowledged"
            elif action == "resolve":
                alert.status = "resolved"
        # acknowledge / resolve of no open alert: dropped, as PagerDuty does


def _parse(content_type: str, raw: bytes) -> tuple[Any, list[str]]:
    if len(raw) > MAX_BYTES:
        return None, ["Event object is larger than 512 KB"]
    if "application/json" not in content_type:
        return None, ["Content-Type must be application/json"]
    try:
        body = json.loads(raw)
    except ValueError:
        return None, ["Malformed JSON"]
    if not isinstance(body, dict):
        return None, ["Event must be a JSON object"]
    return body, []


def _payload_errors(p: Any) -> list[str]:
    if not isinstance(p, dict):
        return ["'payload' is missing or is not an object"]
    errors = []
    summary = p.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        errors.append("'payload.summary' is missing or blank")
    elif len(summary) > 1024:
        errors.append("'payload.summary' is longer than 1024 characters")
    if not isinstance(p.get("source"), str) or not p["source"].strip():
        errors.append("'payload.source' is missing or blank")
    if p.get("severity") not in SEVERITIES:
        errors.append("'payload.severity' is invalid (must be one of: critical, error, warning, info)")
    if "timestamp" in p:
        try:
            datetime.fromisoformat(str(p["timestamp"]).replace("Z", "+00:00"))
        except ValueError:
            errors.append("'payload.timestamp' is not an ISO 8601 timestamp")
    for k in ("component", "group", "class"):
        if k in p and not isinstance(p[k], str):
            errors.append(f"'payload.{k}' must be a string")
    if "custom_details" in p and not isinstance(p["custom_details"], dict):
        errors.append("'payload.custom_details' must be an object")
    errors += [f"Unknown field 'payload.{k}'" for k in sorted(set(p) - PAYLOAD)]
    return errors


def _list_errors(e: dict[str, Any], name: str, required: str, https: bool) -> list[str]:
    if name not in e:
        return []
    items = e[name]
    if not isinstance(items, list):
        return [f"'{name}' must be an array"]
    errors = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get(required), str) or not item[required]:
            errors.append(f"'{name}[{i}].{required}' is required")
        elif https and not item[required].startswith("https://"):
            errors.append(f"'{name}[{i}].{required}' must be served via HTTPS")
    return errors
