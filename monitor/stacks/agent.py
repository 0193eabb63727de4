"""The wrapper's line to herowatch (``herowatch emit run``): a thread that long-polls
``POST /api/ingest/stacks/poll`` with the watch's ingest token, captures the stacks of its process tree
when herowatch asks, and pushes them (``POST /api/ingest/stacks``).

Outbound only: nothing listens on the node, so it works behind a firewall or NAT. It never touches the
job: it runs beside it in a daemon thread, a herowatch it cannot reach is retried with a growing pause
(said once on stderr, and again when it answers), and no error of its own reaches the wrapper.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from monitor.stacks.capture import Limits, capture

POLL_WAIT = 25.0  # seconds herowatch holds a poll open when it has nothing to ask
LONGEST_PAUSE = 300.0


class StackAgent(threading.Thread):
    def __init__(
        self,
        *,
        url: str,
        token: str,
        run: str,
        node: str,
        root: int,
        py_spy: list[str] | None,
        limits: Limits,
        say: Callable[[str], None],
        wait: float = POLL_WAIT,
        flight: str | None = None,
    ) -> None:
        super().__init__(daemon=True, name="herowatch-stacks")
        self.url, self.run_name, self.node, self.root = url.rstrip("/"), run, node, root
        self.headers = {"Authorization": f"Bearer {token}"}
        self.py_spy, self.limits, self.say, self.wait = py_spy, limits, say, wait
        self.flight = flight  # where the job's flight recorder JSON dumps are (None: its environment says)
        self.stopped = threading.Event()
        self.reached = threading.Event()  # herowatch answered at least once
        self.captures = 0
        self._trouble = ""  # the last problem said, so that it is said once

    def stop(self) -> None:
        self.stopped.set()

    def _note(self, trouble: str) -> None:
        if trouble != self._trouble:
            self._trouble = trouble
            self.say(trouble or "herowatch answers again: stack captures are on")

    def run(self) -> None:
        pause = 1.0
        with httpx.Client(timeout=httpx.Timeout(10.0, read=self.wait + 15.0)) as client:
            while not self.stopped.is_set():
                try:
                    asked = self._poll(client)
                    if asked:
                        self._answer(client, asked)
                except Exception as exc:  # noqa: BLE001 - the job must outlive any trouble of ours
                    self._note(f"stack captures paused: cannot reach herowatch at {self.url}: {exc}")
                    self.stopped.wait(pause)
                    pause = min(pause * 2, LONGEST_PAUSE)
                    continue
                pause = 1.0

    def _poll(self, client: httpx.Client) -> str | None:
        body = {"run": self.run_name, "node": self.node, "wait": self.wait}
        r = client.post(f"{self.url}/api/ingest/stacks/poll", json=body, headers=self.headers)
        if r.status_code == 204:
            self.reached.set()
            self._note("")
            return None
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
        self.reached.set()
        self._note("")
        capture_id = r.json().get("capture")
        return str(capture_id) if capture_id else None

    def _answer(self, client: httpx.Client, capture_id: str) -> None:
        t0 = time.monotonic()
        stacks = capture(
            self.root,
            run=self.run_name,
            capture_id=capture_id,
            node=self.node,
            py_spy=self.py_spy,
            limits=self.limits,
            flight=self.flight,
        )
        body = stacks.model_dump_json().encode()
        for _ in range(3):
            r = client.post(
                f"{self.url}/api/ingest/stacks",
                content=body,
                headers={**self.headers, "Content-Type": "application/json"},
            )
            if r.status_code < 500:
                break
            self.stopped.wait(1.0)
        self.captures += 1
        if r.status_code >= 300:
            self.say(
                f"herowatch refused the stacks of capture {capture_id}: HTTP {r.status_code} {r.text[:200]}"
            )
        else:
            n = len(stacks.processes)
            self.say(
                f"stacks of {n} Python process{'es' if n != 1 else ''} sent ({time.monotonic() - t0:.1f}s)"
            )
