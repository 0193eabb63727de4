"""The soak's helpers (bench/soak.py): the webhook receiver on loopback, the SQL statement counter, and
the figures it prints per simulated day (RSS, object counts, database sizes and row counts)."""

from __future__ import annotations

import gc
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

# the alert history: what grows with the alerts raised (kept on purpose), apart from the rest
HISTORY = ("alerts", "alert_transitions", "alert_groups", "alert_group_members", "notifications")


class Receiver:
    """A webhook receiver on 127.0.0.1 that counts what it is told."""

    def __init__(self) -> None:
        self.count = 0
        self.kinds: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    kind = str(json.loads(body).get("kind"))
                except ValueError:
                    kind = "?"
                outer.count += 1
                outer.kinds[kind] = outer.kinds.get(kind, 0) + 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


class StatementCounter:
    """Counts the SQL statements the service's engine issues (an executemany counts once: one round trip)."""

    def __init__(self, db) -> None:  # noqa: ANN001
        self.n = 0
        event.listen(db, "before_cursor_execute", self._count)

    def _count(self, *args: object) -> None:
        self.n += 1


def object_counts() -> dict[str, int]:
    """Live objects by type, the frozen ones included (the GC policy freezes what survives a full
    collection, and ``gc.get_objects`` leaves frozen objects out): thawed to count, frozen again."""
    gc.collect()
    gc.unfreeze()
    out: dict[str, int] = {}
    for o in gc.get_objects():
        name = type(o).__qualname__
        out[name] = out.get(name, 0) + 1
    gc.freeze()
    return out


def fresh_database(admin_url: str, name: str) -> str:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def autovacuum_on(db) -> bool:  # noqa: ANN001
    with db.connect() as c:
        return c.scalar(text("SHOW autovacuum")) == "on"


def vacuum(db) -> None:  # noqa: ANN001
    """What autovacuum does in production (it is on by default): dead row versions made reusable."""
    with db.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM"))


def sizes(db) -> tuple[float, float, float, dict[str, int]]:  # noqa: ANN001
    """Total database MB, alert history MB, the rest MB, and each table's size in bytes."""
    with db.connect() as c:
        total = c.scalar(text("SELECT pg_database_size(current_database())"))
        rows = c.execute(
            text("SELECT relname, pg_total_relation_size(relid) FROM pg_catalog.pg_statio_user_tables")
        ).all()
    tables = {name: int(size) for name, size in rows}
    history = sum(v for k, v in tables.items() if k in HISTORY)
    rest = sum(v for k, v in tables.items() if k not in HISTORY)
    return total / 2**20, history / 2**20, rest / 2**20, tables


def counts(db) -> dict[str, int]:  # noqa: ANN001
    with db.connect() as c:
        return {
            t: c.scalar(text(f"SELECT count(*) FROM {t}"))
            for t in ("alerts", "notifications", "series_buckets", "rule_state", "runs")
        }
