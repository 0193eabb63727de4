"""Small builders shared by tests."""

from __future__ import annotations

import io
import re
from pathlib import Path

from alerts.clock import Clock
from alerts.notifiers.console import ConsoleNotifier
from monitor.config.loader import parse_config
from monitor.service import Service, build_service
from monitor.settings import Settings

STALL_CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    labels: {team: pretrain}
    sim:
      seed: 3
      step_time: 10s
      checkpoint_every: 50
      checkpoint_pause: 60s
      incidents:
        - {kind: stall, at: 10m, duration: 30m}
  - name: hero-b
    poll_interval: 60s
    sim: {seed: 4, step_time: 12s}
"""


def sim_id(watch: str, run: str | None = None) -> str:
    """herowatch's id of a simulated run: ``sim:<watch>/<run>`` (the run defaults to the watch's name)."""
    return f"sim:{watch}/{run or watch}"


def make_service(
    db_url: str, clock: Clock, text: str = STALL_CONFIG, keep_notifiers: bool = False
) -> tuple[Service, io.StringIO]:
    """A service on ``clock``; its console receiver writes to the returned buffer (others are kept
    as configured with ``keep_notifiers``)."""
    cfg = parse_config(text, "test.yaml")
    service = build_service(cfg, Settings(database_url=db_url), clock, base_dir=Path("."), auto_migrate=True)
    out = io.StringIO()
    if keep_notifiers:
        if "console" in service.dispatcher.notifiers:
            service.dispatcher.notifiers["console"] = ConsoleNotifier(stream=out)
    else:
        service.dispatcher.notifiers = {"console": ConsoleNotifier(stream=out)}
    return service, out


def tick(service: Service, clock, seconds: float, every: float = 60.0) -> None:
    """Advance the clock by ``seconds`` in poll-interval steps, polling every watch and delivering."""
    done = 0.0
    while done < seconds:
        clock.advance(every)
        done += every
        for name in service.engine.watches:
            service.engine.poll(name)
        service.dispatcher.run_once()


def hang_then_restart_config(name: str, gpus: int | None = None) -> str:
    """A simulated run (a step every 10 s, a save every 50 steps) whose rank hangs at 10 minutes for 40,
    until the job is killed and restarts from its last checkpoint (a rewind, a 3-minute restore)."""
    gpu_line = f"\n    gpus: {gpus}" if gpus is not None else ""
    return f"""
watch:
  - name: {name}
    poll_interval: 60s{gpu_line}
    sim:
      seed: 3
      step_time: 10s
      checkpoint_every: 50
      checkpoint_pause: 30s
      restore_time: 3m
      incidents:
        - {{kind: stall, at: 10m, duration: 40m}}   # a rank hangs ...
        - {{kind: restart, at: 50m}}                # ... until the job is killed and restarts
"""


def page_seconds(html: str, bucket: str) -> float:
    """The time a run page's goodput table gives a bucket (as it reads: "39m50s", "1h2m"), in seconds."""
    m = re.search(rf'class="key gp-{bucket}"></span>[^<]*</td><td>([^<]*)</td>', html)
    assert m, html[:2000]
    parts = dict((u, float(n)) for n, u in re.findall(r"([0-9.]+)([dhms])", m.group(1)))
    return sum(parts.get(u, 0.0) * k for u, k in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)))
