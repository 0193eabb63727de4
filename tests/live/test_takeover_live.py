"""The paging promises through a lease takeover: two ``herowatch serve`` replicas on the real PostgreSQL,
the one polling the watch is SIGKILLed while ``oom_kills`` fires. The other takes the watch over:
the alert stays firing with no Slack message about it, a hang after the takeover pages exactly once,
a W&B outage while Prometheus answers pages no stall and at most one outage message, and the healthy
run's goodput stays above 95%."""

from __future__ import annotations

import signal
import time
from urllib.parse import quote

from sqlalchemy import select

from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Lease
from tests.live.support import alerts_of, dump, live_stack, wait_for

RUNS = ["hero-a", "hero-b", "hero-c"]
RULES = """\
        progress_stalled: {floor: 6s, startup: 30s}
"""


def test_a_lease_takeover_keeps_every_page_true(tmp_path, pg_url):
    db = make_engine(pg_url)
    sessions = make_sessionmaker(db)

    def holder() -> str | None:
        with sessions() as s:
            lease = s.scalar(select(Lease).where(Lease.name == "poll:hero"))
            return lease.holder if lease is not None and lease.expires_at > time.time() else None

    try:
        with live_stack(tmp_path, RUNS, pg_url) as stack:
            cfg = stack.write_config(RULES)
            one, two = stack.serve(cfg), stack.serve(cfg)
            wait_for(lambda: all((r.get("step") or 0) > 30 for r in one.api("/api/runs")), 60, "runs read")

            stack.exporter.oom("hero-b")
            stack.exporter.oom("hero-b")
            wait_for(
                lambda: [p for p in stack.pages() if "oom_kills" in p and "hero-b" in p], 40, "the OOM page"
            )
            time.sleep(5)  # a snapshot of the rule state is written every few polls

            owner = holder()
            victim, survivor = (one, two) if owner and owner.endswith(f":{one.pid}") else (two, one)
            assert owner and owner.endswith(f":{victim.pid}"), owner
            calls_before = len(stack.slack.calls)
            victim.stop(signal.SIGKILL)
            t0 = time.monotonic()
            wait_for(lambda: (holder() or "").endswith(f":{survivor.pid}"), 60, "the lease taken over")
            print(f"takeover after {time.monotonic() - t0:.1f}s")
            time.sleep(5)  # several polls by the survivor
            assert alerts_of(survivor, "oom_kills", "firing"), "the takeover resolved a firing alert"
            after = [c for c in stack.slack.calls[calls_before:] if c.method.startswith("chat.")]
            assert [c for c in after if "oom" in str(c.body)] == [], "Slack heard about oom_kills again"

            before = len(stack.pages())
            stack.trainer.hung.add("hero-a")
            wait_for(
                lambda: [p for p in stack.pages()[before:] if "progress_stalled" in p], 30, "the stall page"
            )
            time.sleep(3)  # no second page may follow (the other replica is dead, retries must not double)
            stack.trainer.hung.discard("hero-a")
            stalls = [p for p in stack.pages()[before:] if "progress_stalled" in p]
            assert len(stalls) == 1 and "hero-a" in stalls[0], dump(stack)

            before = len(stack.pages())
            stack.wandb.fail(502, times=-1)
            time.sleep(20)
            stack.wandb.clear_faults()
            wait_for(
                lambda: alerts_of(survivor, "source_unavailable", "resolved"), 90, "the outage to resolve"
            )
            new = stack.pages()[before:]
            assert not [p for p in new if "progress_stalled" in p], dump(stack)
            assert len([p for p in new if "source_unavailable" in p]) <= 1, dump(stack)

            [healthy] = [r for r in survivor.api("/api/runs") if r["name"] == "hero-c"]
            print(f"goodput of the healthy run: {healthy['goodput']['ratio']:.3f}")
            detail = survivor.api(f"/api/runs/{quote(healthy['id'], safe='')}")["goodput"]
            assert healthy["goodput"]["ratio"] > 0.95, detail
            survivor.stop()
            assert survivor.errors() == "", survivor.errors()
    finally:
        db.dispose()
