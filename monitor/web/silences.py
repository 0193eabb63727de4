"""Silences as the API and the dashboard read and write them: a request body into the on-call action
(``monitor.delivery.oncall``), a stored row into what is shown."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from alerts.routing import Matcher
from alerts.silences import CompiledSilences
from monitor.delivery.oncall import ActionError, create_silence, parse_time
from monitor.storage import views
from monitor.storage.models import Alert, Silence
from monitor.web.schemas import SilenceIn, SilenceOut


def run_matchers(s: Session, matchers: Sequence[str]) -> list[str]:
    """``run=<display name>`` as people type it, made ``run="<run id>"`` (alerts carry the id: a silence
    on the name would mute nothing). A name several runs share is refused, naming their ids."""
    out = []
    for text in matchers:
        try:
            m = Matcher.parse(text)
        except ValueError:
            out.append(text)  # refused with its reason by the on-call action
            continue
        if m.name == "run" and m.op == "=" and views.get_run(s, m.value) is None:
            found = views.lookup_runs(s, m.value)
            if len(found) > 1:
                ids = ", ".join(r.id for r in found)
                raise ActionError(
                    422, f"{len(found)} runs are called {m.value!r}: {ids}; say which (run=<id>)"
                )
            if found:
                text = f'run="{found[0].id}"'
        out.append(text)
    return out


def unknown_runs(s: Session, matchers: Sequence[str]) -> list[str]:
    """What to tell the person of a silence on a run herowatch does not know (a typo, or a run not yet
    started): it is made, and mutes nothing until such a run appears."""
    notes = []
    for text in matchers:
        try:
            m = Matcher.parse(text)
        except ValueError:
            continue
        if (
            m.name == "run"
            and m.op == "="
            and views.get_run(s, m.value) is None
            and not views.lookup_runs(s, m.value)
        ):
            notes.append(
                f"no watched run is called {m.value!r} (nor has that id): this silence mutes nothing "
                "until one does (GET /api/runs lists the runs)"
            )
    return notes


def create_from(s: Session, body: SilenceIn, now: float) -> Silence:
    """A silence from an API body or a dashboard form (the same on-call action as Slack and the CLI)."""
    return create_silence(
        s,
        run_matchers(s, body.matchers),
        created_by=body.created_by,
        comment=body.comment,
        now=now,
        starts_at=parse_time(body.starts_at, "starts_at"),
        ends_at=parse_time(body.ends_at, "ends_at"),
        duration=float(body.duration) if body.duration is not None else None,
    )


def silence_out(
    row: Silence, now: float, compiled: CompiledSilences, active: Sequence[Alert] = ()
) -> SilenceOut:
    """What the API and the pages show of a silence; only one in force is compiled (to count what it
    mutes), and then only once while it lasts (``compiled`` keeps it)."""
    state = views.silence_state(row, now)
    muting = 0
    spec = views.spec_of(row, compiled, now) if state == "active" and active else None
    if spec is not None:
        muting = sum(1 for a in active if spec.matches({k: str(v) for k, v in (a.labels or {}).items()}))
    return SilenceOut(
        id=row.id,
        matchers=views.matchers_of(row),
        starts_at=isoformat(row.starts_at) or "",
        ends_at=isoformat(row.ends_at) or "",
        state=state,
        created_by=row.created_by,
        comment=row.comment or "",
        created_at=isoformat(row.created_at) or "",
        muting=muting,
    )
