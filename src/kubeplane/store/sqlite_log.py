"""The SQLite log: schema and every read query, shared by :class:`SqliteStore` and :class:`SqliteReader`.

Schema in the style of k3s's kine: an append-only table ``kv`` where the row id *is* the revision. A row is one
write: a PUT (``deleted = 0``) or a tombstone (``deleted = 1``). ``prev_revision`` points at the key's previous
row (0 for the very first create of a key; a create after a delete points at the tombstone), and
UNIQUE(name, prev_revision) makes a second writer that raced on the same key version fail, as in kine.
The ``kv`` table is AUTOINCREMENT, so ``sqlite_sequence`` remembers the highest revision ever written even when
compaction deletes the newest rows: revisions are never reused after a restart.

``meta`` holds ``compacted`` (the logical compacted revision: reads below it fail) and ``compacted_physical``
(how far rows have actually been deleted; compaction runs in small batches and resumes after a crash).

Every function here runs on whichever thread owns the connection passed in.
"""

from __future__ import annotations

import sqlite3

from .interface import Event, EventType, KeyValue, RangeResult
from .keyindex import KeyIndex, range_bounds

SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    version INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS kv_name_prev_revision ON kv (name, prev_revision);
CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
"""

INSERT = (
    "INSERT INTO kv (id, name, deleted, create_revision, prev_revision, version, value) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _name_bounds(prefix: str, start_key: str | None) -> tuple[str, list[str]]:
    """SQL condition on ``name`` for a prefix range from ``start_key``, and its parameters."""
    low, high = range_bounds(prefix, start_key)
    if high is None:
        return "name >= ?", [low]
    return "name >= ? AND name < ?", [low, high]


def current_revision(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'kv'").fetchone()
    return int(row[0]) if row else 0


def read_meta(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def load_latest(conn: sqlite3.Connection) -> tuple[KeyIndex, dict[str, int]]:
    """The current state (live keys) and, for keys whose latest row is a tombstone, that tombstone's revision."""
    index = KeyIndex()
    tombstones: dict[str, int] = {}
    rows = conn.execute(
        "SELECT kv.id, kv.name, kv.deleted, kv.create_revision, kv.version, kv.value FROM kv "
        "JOIN (SELECT MAX(id) AS mid FROM kv GROUP BY name) AS latest ON kv.id = latest.mid ORDER BY kv.name"
    )
    for revision, name, deleted, create_revision, version, value in rows:
        if deleted:
            tombstones[name] = revision
        else:
            index.put(KeyValue(name, bytes(value), create_revision, revision, version))
    return index, tombstones


def read_at(conn: sqlite3.Connection, *, prefix: str, revision: int, start_key: str | None, limit: int) -> RangeResult:
    """The prefix range as of ``revision``: each key's newest row at or below it, unless a tombstone."""
    cond, params = _name_bounds(prefix, start_key)
    inner = f"SELECT MAX(id) AS mid FROM kv WHERE {cond} AND id <= ? GROUP BY name"
    query = (
        "SELECT kv.name, kv.value, kv.create_revision, kv.id, kv.version FROM kv "
        f"JOIN ({inner}) AS at ON kv.id = at.mid WHERE kv.deleted = 0 ORDER BY kv.name"
    )
    args: list[object] = [*params, revision]
    if limit > 0:
        query += " LIMIT ?"
        args.append(limit + 1)
    rows = conn.execute(query, args).fetchall()
    kvs = [KeyValue(name, bytes(value), cr, mr, ver) for name, value, cr, mr, ver in rows]
    if limit > 0 and len(kvs) > limit:
        count_query = f"SELECT COUNT(*) FROM kv JOIN ({inner}) AS at ON kv.id = at.mid WHERE kv.deleted = 0"
        (count,) = conn.execute(count_query, [*params, revision]).fetchone()
        return RangeResult(kvs[:limit], revision, True, int(count))
    return RangeResult(kvs, revision, False, len(kvs))


def get_at(conn: sqlite3.Connection, *, key: str, revision: int) -> KeyValue | None:
    """One key as of ``revision``: its newest row at or below it, unless a tombstone. One index probe on
    (name, id), whatever the key's history length (a prefix range would read every version of every key
    sharing the prefix)."""
    row = conn.execute(
        "SELECT id, deleted, create_revision, version, value FROM kv WHERE name = ? AND id <= ? "
        "ORDER BY id DESC LIMIT 1",
        (key, revision),
    ).fetchone()
    if row is None or row[1]:
        return None
    mod_revision, _, create_revision, version, value = row
    return KeyValue(key, bytes(value), create_revision, mod_revision, version)


def events_between(conn: sqlite3.Connection, *, prefix: str, first: int, last: int, limit: int) -> list[Event]:
    """Events first <= revision <= last on the prefix, in revision order, each with its previous version."""
    cond, params = _name_bounds(prefix, None)
    cond = cond.replace("name", "kv.name")
    rows = conn.execute(
        "SELECT kv.id, kv.name, kv.deleted, kv.create_revision, kv.version, kv.value, "
        "p.id, p.deleted, p.create_revision, p.version, p.value "
        "FROM kv LEFT JOIN kv AS p ON p.id = kv.prev_revision "
        f"WHERE kv.id >= ? AND kv.id <= ? AND {cond} ORDER BY kv.id LIMIT ?",
        [first, last, *params, limit],
    ).fetchall()
    events: list[Event] = []
    for rev, name, deleted, cr, ver, value, p_rev, p_deleted, p_cr, p_ver, p_value in rows:
        prev = None
        if p_rev is not None and not p_deleted:
            prev = KeyValue(name, bytes(p_value), p_cr, p_rev, p_ver)
        if deleted:
            events.append(Event(EventType.DELETE, KeyValue(name, b"", 0, rev, 0), prev))
        else:
            events.append(Event(EventType.PUT, KeyValue(name, bytes(value), cr, rev, ver), prev))
    return events


def compact_window(conn: sqlite3.Connection, *, low: int, high: int) -> int:
    """Delete rows made unreachable by compacting to ``high``, for writes with low < revision <= high.

    A row is unreachable once a later row of the same key exists at or below the compacted revision (it is
    the ``prev_revision`` of such a row), and a tombstone is unreachable once it is at or below it. Returns the
    number of rows deleted. Run inside the writer's transaction.
    """
    superseded = conn.execute(
        "DELETE FROM kv WHERE id IN (SELECT prev_revision FROM kv WHERE id > ? AND id <= ? AND prev_revision != 0)",
        (low, high),
    ).rowcount
    tombstones = conn.execute("DELETE FROM kv WHERE id > ? AND id <= ? AND deleted = 1", (low, high)).rowcount
    conn.execute(
        "INSERT INTO meta (k, v) VALUES ('compacted_physical', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
        (high,),
    )
    return superseded + tombstones


def write_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", (key, value))


def event_row(event: Event, prev_revision: int) -> tuple[object, ...]:
    kv = event.kv
    if event.type is EventType.DELETE:
        return (kv.mod_revision, kv.key, 1, 0, prev_revision, 0, b"")
    return (kv.mod_revision, kv.key, 0, kv.create_revision, prev_revision, kv.version, kv.value)
