"""source-qualified run ids (wandb:entity/project/id, sim:watch/run, prometheus:watch/run); run name,
project and kind

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 10:00:00

Every stored run is re-keyed from the source's bare run id to its source-qualified id
(monitor/run_ids.py), everywhere the id is stored: runs, source_cursors, rule_state, series_meta,
series_buckets, alerts (run_id, the ``run`` label and the fingerprint, a hash of the labels),
alert_transitions, open alert groups (the ``run`` group label and ``open_key``, so a firing alert keeps
its Slack thread; ``group_key`` stays, so the buttons of messages already sent keep working) and
silences (``run="<old id>"`` equality matchers; a regular expression on ``run`` cannot be rewritten
and is left as it was: ``herowatch silence list`` shows it).

Where the qualified id comes from: a W&B run's project is in its ``wandb_project`` label (or its W&B
cursor); a simulated or Prometheus-only run is qualified by its watch. A W&B run whose project is not
stored anywhere keeps its bare id: the next poll files it under its new id as a new run, and the old
row stays as an ended run (delete it with `herowatch db` tooling or leave it).

Downgrade drops the new columns and puts the bare ids back.
"""

import hashlib
import json
import re

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_RUN_MATCHER = re.compile(r'^(\s*run\s*=\s*)"?([^"~]*?)"?\s*$')  # run=x or run="x" (not =~, not !=)


def _fingerprint(labels):  # alerts.model.fingerprint, frozen here as the migration's own copy
    canonical = json.dumps(sorted((str(k), str(v)) for k, v in labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _group_key(receiver, labels):  # alerts.grouping.group_key over the stored group labels
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return f"{receiver}:{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


def _json(value):
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


def _tables(bind):
    meta = sa.MetaData()
    names = (
        "runs",
        "source_cursors",
        "rule_state",
        "series_meta",
        "series_buckets",
        "fleet_rasters",
        "fleet_columns",
        "alerts",
        "alert_transitions",
        "alert_groups",
        "silences",
    )
    return {n: sa.Table(n, meta, autoload_with=bind) for n in names}


def _new_ids(bind, t):
    """old id -> (new id, name, project) for every run that can be qualified."""
    wandb_projects = {
        r.run_id: _json(r.cursor).get("project")
        for r in bind.execute(sa.select(t["source_cursors"]).where(t["source_cursors"].c.source == "wandb"))
    }
    out = {}
    for r in bind.execute(sa.select(t["runs"])):
        source = r.source or ""
        if r.id.startswith(f"{source}:"):
            continue  # already qualified
        if source == "wandb":
            project = _json(r.labels).get("wandb_project") or wandb_projects.get(r.id)
        elif source in ("sim", "prometheus"):
            project = r.watch
        else:
            project = None
        if project:
            out[r.id] = (f"{source}:{project}/{r.id}", r.id, project)
    return out


def _rekey(bind, t, ids):
    """Move every row of every run in ``ids`` (old -> new) to its new id."""
    runs = t["runs"]
    for old, new in ids.items():
        row = bind.execute(sa.select(runs).where(runs.c.id == old)).mappings().first()
        if row is None or bind.execute(sa.select(runs.c.id).where(runs.c.id == new)).first():
            continue
        values = dict(row)
        values["id"] = new
        bind.execute(runs.insert().values(**values))  # the new parent first: children move to it
        for name in (
            "source_cursors",
            "rule_state",
            "series_meta",
            "series_buckets",
            "fleet_rasters",
            "fleet_columns",
            "alert_transitions",
        ):
            table = t[name]
            bind.execute(table.update().where(table.c.run_id == old).values(run_id=new))
        bind.execute(runs.delete().where(runs.c.id == old))
    alerts = t["alerts"]
    for a in bind.execute(sa.select(alerts.c.id, alerts.c.run_id, alerts.c.labels)).all():
        labels = _json(a.labels)
        new = ids.get(a.run_id)
        if new is None:
            continue
        if labels.get("run") == a.run_id:
            labels["run"] = new
        bind.execute(
            alerts.update()
            .where(alerts.c.id == a.id)
            .values(run_id=new, labels=labels, fingerprint=_fingerprint(labels))
        )
    groups = t["alert_groups"]
    for g in bind.execute(sa.select(groups)).all():
        labels = _json(g.labels)
        new = ids.get(labels.get("run", ""))
        if new is None:
            continue
        labels["run"] = new
        values = {"labels": labels}
        if g.open_key is not None:
            values["open_key"] = _group_key(g.receiver, labels)
        bind.execute(groups.update().where(groups.c.id == g.id).values(**values))
    silences = t["silences"]
    for row in bind.execute(sa.select(silences.c.id, silences.c.matchers)).all():
        doc = _json(row.matchers)
        changed = False
        matchers = []
        for m in doc.get("matchers") or []:
            hit = _RUN_MATCHER.match(str(m))
            if hit and hit.group(2) in ids:
                m = f'run="{ids[hit.group(2)]}"'
                changed = True
            matchers.append(m)
        if changed:
            doc = {**doc, "matchers": matchers}
            bind.execute(silences.update().where(silences.c.id == row.id).values(matchers=doc))


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("name", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("project", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("kind", sa.String(length=32), nullable=True))
        batch.create_index("ix_runs_kind", ["kind"], unique=False)
    bind = op.get_bind()
    t = _tables(bind)
    found = _new_ids(bind, t)
    runs = t["runs"]
    for old, (_, name, project) in found.items():
        bind.execute(runs.update().where(runs.c.id == old).values(name=name, project=project))
    _rekey(bind, t, {old: new for old, (new, _, _) in found.items()})


def downgrade() -> None:
    bind = op.get_bind()
    t = _tables(bind)
    runs = t["runs"]
    back = {
        r.id: r.name
        for r in bind.execute(sa.select(runs.c.id, runs.c.name, runs.c.source))
        if r.name and r.id.startswith(f"{r.source}:")
    }
    _rekey(bind, t, back)
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_kind")
        batch.drop_column("kind")
        batch.drop_column("project")
        batch.drop_column("name")
