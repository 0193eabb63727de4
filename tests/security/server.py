"""A herowatch server for the security suite, in its own process (so that its memory can be measured):
uvicorn on 127.0.0.1 over a service on a manual clock, 30 simulated minutes in, with hero-a's stall
alert firing and its alert group "posted to Slack" (its root message is the one the test clicks on).
Settings come from the environment, as in production. Started again on the same database (a restart,
e.g. with another token) it serves what is there.

    python -m tests.security.server DATABASE_URL PORT INFO_JSON
"""

from __future__ import annotations

import json
import sys

import uvicorn
from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.settings import Settings
from monitor.storage.models import Alert, AlertGroup
from monitor.web.app import create_app
from tests.helpers import make_service, sim_id, tick
from tests.test_slack_interactions import ROOT_REF

START = 1_780_000_000.0
NOW = START + 30 * 60  # the server's clock while it serves (it never moves)


def main() -> None:
    db_url, port, info = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    clock = ManualClock(START)
    service, _ = make_service(db_url, clock)
    service.settings = Settings(database_url=db_url)  # and the rest from the environment
    service.engine.resume()
    with service.sessions() as s:
        restarted = s.scalar(select(Alert.id).limit(1)) is not None  # the same database again
    if restarted:
        clock.advance(NOW - START)
    else:
        tick(service, clock, NOW - START)
    with service.sessions.begin() as s:
        alert = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).one()
        (group,) = [
            g for g in s.scalars(select(AlertGroup)) if (g.labels or {}).get("run") == sim_id("hero-a")
        ]
        group.root_ref = ROOT_REF
        facts = {"alert_id": alert.id, "group_key": group.group_key, "now": clock.time()}
    with open(info, "w", encoding="utf-8") as f:
        json.dump(facts, f)
    uvicorn.run(
        create_app(service),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # as `herowatch serve` runs it: only HEROWATCH_TRUSTED_PROXIES count
    )


if __name__ == "__main__":
    main()
