"""Raw HTTP/1.1 over a socket, for what an HTTP client library will not do: stream a 300 MB body while
watching for an early answer, send odd Host headers, measure a server while it is attacked."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MB = 1024 * 1024


@dataclass
class Streamed:
    status: int | None
    body: bytes
    sent: int  # body bytes the server let us send before it answered or hung up
    seconds: float


def _status_of(raw: bytes) -> tuple[int | None, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None), body


def stream_body(
    port: int,
    path: str,
    headers: dict[str, str],
    total: int,
    declare: bool,
    chunk: int = 64 * 1024,
) -> Streamed:
    """POST ``total`` bytes to ``path`` (declared in Content-Length, or chunked), stopping as soon as
    the server answers; returns its status and how much was sent by then."""
    start = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    head.append(f"Content-Length: {total}" if declare else "Transfer-Encoding: chunked")
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    piece = b"x" * chunk
    frame = piece if declare else f"{chunk:x}\r\n".encode() + piece + b"\r\n"
    sent = 0
    try:
        while sent < total:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            sock.sendall(frame)
            sent += chunk
        else:
            if not declare:
                sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered and hung up: read what it said
    raw = b""
    try:
        sock.settimeout(30)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            raw += data
            status, body = _status_of(raw)
            if status is not None and b"\r\n\r\n" in raw and len(body) >= _length(raw):
                break
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    status, body = _status_of(raw)
    return Streamed(status, body, sent, time.monotonic() - start)


def _length(raw: bytes) -> int:
    for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return 0


@dataclass
class Peak:
    """The largest value ``sample`` returned while the ``with`` block ran (sampled every 10 ms)."""

    sample: Callable[[], float]
    values: list[float] = field(default_factory=list)

    def __enter__(self) -> Peak:
        self.values.append(self.sample())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.values.append(self.sample())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.values.append(self.sample())

    @property
    def base(self) -> float:
        return self.values[0]

    @property
    def peak(self) -> float:
        return max(self.values)


def raw_request(port: int, request: bytes, timeout: float = 10) -> tuple[int | None, bytes]:
    """Send ``request`` as is and read the answer until the server closes or sends its body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        raw = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            raw += data
            if b"\r\n\r\n" in raw and len(_status_of(raw)[1]) >= _length(raw):
                break
    return _status_of(raw)
