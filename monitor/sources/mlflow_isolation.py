"""One MLflow run's bad history answer never blinds the rest of its watch (issue 37).

A history request may cover several runs (``get-history-bulk-interval``: monitor.sources.mlflow_history).
When one fails (an error status, an answer over ``max_answer_bytes``, one that is not JSON or whose values
make no sense), its runs are asked again one at a time: a run whose own answer fails is set aside as
unreadable, with the reason, and is not asked again this poll; every other run is read. Only when no
history request of the poll succeeds and several runs failed is the server itself the problem: the whole
poll is an outage, as before.
"""

from __future__ import annotations

from typing import Any

from monitor.sources.mlflow_client import MlflowApi, MlflowUnavailable

Row = dict[str, Any]
# what one answer can do wrong: the server's words (status, size, not JSON), the client's 404 for a
# missing endpoint, values that are not what MLflow sends
FAILURES = (MlflowUnavailable, LookupError, TypeError, ValueError, AttributeError)


def _checked(rows: Any) -> list[Row]:
    """The rows, each a mapping with a whole step and timestamp and a value; ValueError otherwise."""
    out = []
    for m in rows:
        if not isinstance(m, dict) or "value" not in m:
            raise ValueError(f"a history value that is not one: {str(m)[:100]!r}")
        int(m.get("step") or 0), int(m.get("timestamp") or 0)  # noqa: B018 - checked here, used later
        out.append(m)
    return out


class IsolatedHistory:
    """``MlflowApi.history`` for one poll, with each run's failures kept to that run."""

    def __init__(self, api: MlflowApi) -> None:
        self.api = api
        self.unreadable: dict[str, str] = {}  # run id -> why its history could not be read
        self.answered = 0  # history requests that succeeded this poll

    def history(self, run_ids: tuple[str, ...], key: str, lo: int, hi: int) -> list[Row]:
        ids = tuple(r for r in run_ids if r not in self.unreadable)
        if not ids:
            return []
        try:
            rows = _checked(self.api.history(ids, key, lo, hi))
        except FAILURES as exc:
            if len(ids) == 1:
                why = str(exc) if isinstance(exc, MlflowUnavailable) else f"{type(exc).__name__}: {exc}"
                self.unreadable[ids[0]] = f"history of {key!r} at steps {lo}..{hi}: {why[:500]}"
                return []
            out: list[Row] = []
            for run_id in ids:  # which run's answer is the bad one: each on its own
                out += self.history((run_id,), key, lo, hi)
            return out
        self.answered += 1
        return rows

    def outage(self) -> str | None:
        """Why the server, not a run, failed: no history answer at all and several runs refused."""
        if self.answered or len(self.unreadable) < 2:
            return None
        return next(iter(self.unreadable.values()))
