"""What the overview's refresh sends: only what changed since the version the page shows.

A version is the ETag of the overview's live list (24 hex digits, the page's ``data-version``): it names
content, not a moment, so two snapshots (or two replicas) that render the same list give the same
version. Each rendered list is kept as a :class:`Generation`: a digest of its head (kinds, counts,
firing alerts) and of each run's row, and the order of the rows. The app remembers the last ``KEEP``
generations (all kinds together; digests only, about 36 KB each for 200 runs), so memory does not grow
with time, clients or the versions they send.

Asked what changed since a version it remembers, the refresh gets JSON (:func:`changes`)::

    {"version": "<new>", "n": <rows>, "head": "<html>" | null,
     "rows": [{"id": "<run id>", "html": "<li ...>"}], "removed": ["<run id>"], "order": [...] | null}

``rows`` are the changed and added rows (as the page renders them: ``overview.run_row``), ``removed``
the ids gone, ``order`` every id in order when the rows moved (else null: added rows go last; a
row's ``data-section`` says which list it goes in, the live or the Finished one). A
version it does not remember (too old, from before a restart, from another replica) gets the whole
list, as does a change whose JSON would be no smaller.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from monitor.web.conditional import Encoded

KEEP = 16  # generations remembered per app, all kinds together (~36 KB each at 200 runs)
VERSION = re.compile(r"[0-9a-f]{24}")  # the hex digits of an overview ETag (snapshot.etag_of)
JSON = "application/json"


def version_of(etag: str) -> str:
    """``W/"<hex>"`` -> ``<hex>``."""
    return etag.removeprefix("W/").strip('"')


def valid_version(text: str) -> bool:
    return len(text) == 24 and VERSION.fullmatch(text) is not None


def digest(html: str) -> bytes:
    return hashlib.blake2b(html.encode(), digest_size=8).digest()


@dataclass(frozen=True)
class Generation:
    version: str
    head: bytes  # digest of the head's HTML
    rows: dict[str, bytes]  # run id -> digest of its row's HTML
    order: tuple[str, ...]  # the run ids, as listed
    live: int = -1  # how many of them are in the live list (the rest: the Finished list); -1: one list


@dataclass(frozen=True)
class Rendered:
    """One rendered overview list: the whole live section and its pieces."""

    part: Encoded  # the live section, as /fragments/overview sends it (its ETag names the version)
    head: str
    rows: dict[str, str]  # run id -> its row's HTML, in the order listed
    generation: Generation


def rendered(part: Encoded, head: str, rows: dict[str, str], live: int = -1) -> Rendered:
    """``rows`` in the order listed; the first ``live`` of them in the live list, the rest finished."""
    gen = Generation(
        version_of(part.etag),
        digest(head),
        {rid: digest(html) for rid, html in rows.items()},
        tuple(rows),
        live,
    )
    return Rendered(part, head, rows, gen)


class Generations:
    """The last ``keep`` generations of the overview, by (kind, version); the oldest is forgotten."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._gens: OrderedDict[tuple[str | None, str], Generation] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, kind: str | None, gen: Generation) -> None:
        with self._lock:
            self._gens[(kind, gen.version)] = gen
            self._gens.move_to_end((kind, gen.version))
            while len(self._gens) > self.keep:
                self._gens.popitem(last=False)

    def find(self, kind: str | None, version: str) -> Generation | None:
        with self._lock:
            return self._gens.get((kind, version))

    def __len__(self) -> int:
        return len(self._gens)


def changes(cur: Rendered, old: Generation) -> Encoded | None:
    """What turns the list ``old`` into ``cur``, as JSON; None when it would be no smaller than the
    whole section."""
    new = cur.generation
    rows = [{"id": rid, "html": html} for rid, html in cur.rows.items() if old.rows.get(rid) != new.rows[rid]]
    removed = [rid for rid in old.order if rid not in new.rows]
    kept = [rid for rid in old.order if rid in new.rows]
    added = [rid for rid in new.order if rid not in old.rows]
    delta = {
        "version": new.version,
        "n": len(new.order),
        "head": cur.head if old.head != new.head else None,
        "rows": rows,
        "removed": removed,
        # the same order and as many live rows: no row moved, none went between the lists
        "order": None if kept + added == list(new.order) and old.live == new.live else list(new.order),
    }
    body = json.dumps(delta, ensure_ascii=False, separators=(",", ":")).encode()
    if len(body) >= len(cur.part.body):
        return None
    return Encoded(body, cur.part.etag, JSON)
