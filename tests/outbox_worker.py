"""A herowatch delivery process for the crash tests: builds the service from a config file and runs the
outbox dispatcher until killed. Run as ``python -m tests.outbox_worker CONFIG``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from alerts.clock import SystemClock
from monitor.config.loader import load_config
from monitor.service import build_service
from monitor.settings import Settings


def main() -> None:
    config = Path(sys.argv[1])
    service = build_service(
        load_config(config), Settings(), SystemClock(), base_dir=config.parent, auto_migrate=False
    )
    service.dispatcher.lease_seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    print("worker ready", flush=True)
    while True:
        service.dispatcher.run_once()
        time.sleep(0.1)


if __name__ == "__main__":
    main()
