"""What the probes read of each source is kept per watch AND source: two watches on one kind of
source no longer overwrite each other's last success and error (``engine.source_polls``)."""

from __future__ import annotations

from monitor.engine.source_polls import SourcePolls
from monitor.sources.base import PollResult
from tests.helpers import make_service

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 10s
    sim: {seed: 3, step_time: 5s}
  - name: hero-b
    poll_interval: 10s
    sim: {seed: 4, step_time: 5s}
"""


class FailsFor:
    """The simulator, except that one watch's polls fail (a project the token cannot read)."""

    kind = "sim"

    def __init__(self, real, watch: str) -> None:
        self.real, self.watch = real, watch

    def poll(self, target, cursors, now):
        if target.watch == self.watch:
            return PollResult(error="HTTP 403: no access to project hero-b")
        return self.real.poll(target, cursors, now)

    def close(self):
        self.real.close()


def test_one_watchs_failing_source_is_not_hidden_by_anothers_success(migrated_url, clock):
    service, _ = make_service(migrated_url, clock, CONFIG)
    engine = service.engine
    engine.sources["sim"] = FailsFor(engine.sources["sim"], "hero-b")
    engine.resume()
    try:
        for order in (["hero-a", "hero-b"], ["hero-b", "hero-a"]):  # whichever polls last
            clock.advance(10)
            for name in order:
                engine.poll(name)
            polls = engine.source_polls
            assert polls.of("hero-a", "sim").error is None and polls.of("hero-a", "sim").ok_at == clock.time()
            assert polls.of("hero-b", "sim").error == "HTTP 403: no access to project hero-b"
            assert polls.of("hero-b", "sim").ok_at is None
            assert polls.error("sim") == "HTTP 403: no access to project hero-b", "the failing watch shows"
            assert polls.last_ok("sim") == polls.last_poll_at("sim") == clock.time()
    finally:
        service.stop()


def test_errors_of_several_watches_are_named_unless_they_are_one_outage():
    polls = SourcePolls()
    polls.polled("a", "wandb", 10.0, "HTTP 500")
    polls.polled("b", "wandb", 11.0, "HTTP 500")
    assert polls.error("wandb") == "HTTP 500"
    polls.polled("b", "wandb", 12.0, "timed out")
    assert polls.error("wandb") == "watch a: HTTP 500; watch b: timed out"
    polls.polled("a", "wandb", 13.0, None)
    assert (polls.error("wandb"), polls.last_ok("wandb"), polls.last_poll_at("wandb")) == (
        "timed out",
        13.0,
        13.0,
    )
    polls.forget("b")
    assert polls.error("wandb") is None and polls.of("b", "wandb") is None
