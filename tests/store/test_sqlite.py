"""SQLite-specific guarantees: persistence across reopen, physical compaction, the single-writer lock, and the
read-only follower used by the store inspection command."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kubeplane.store.interface import Compacted, EventType, KeyValue, StoreError
from kubeplane.store.sqlite import Durability, SqliteStore
from kubeplane.store.sqlite_reader import SqliteReader

DURABILITIES = pytest.mark.parametrize("durability", list(Durability), ids=[d.value for d in Durability])


def _rows(path: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, name, deleted FROM kv ORDER BY id").fetchall()


@DURABILITIES
async def test_reopen_restores_revision_content_and_history(tmp_path: Path, durability: Durability) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path, durability=durability)
    await store.create("/a", b"1")
    await store.update("/a", b"2")
    await store.create("/b", b"x")
    await store.delete("/b")
    await store.close()

    store = SqliteStore(path, durability=durability)
    assert store.revision == 4
    assert [(kv.key, kv.value, kv.version) for kv in (await store.range("/")).kvs] == [("/a", b"2", 2)]
    assert (await store.get("/b", revision=3)) == KeyValue("/b", b"x", 3, 3, 1)
    watch = store.watch("/", start_revision=1)
    events = await watch.next_batch()
    assert [(e.type, e.revision) for e in events] == [
        (EventType.PUT, 1),
        (EventType.PUT, 2),
        (EventType.PUT, 3),
        (EventType.DELETE, 4),
    ]
    assert (await store.create("/b", b"again")).mod_revision == 5  # the tombstone's key can be re-created
    await store.close()


async def test_physical_compaction_keeps_exactly_the_reachable_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    await store.create("/a", b"1")  # 1  superseded by 2 -> deleted
    await store.update("/a", b"2")  # 2  latest of /a at 5 -> kept
    await store.create("/b", b"1")  # 3  superseded by tombstone 4 -> deleted
    await store.delete("/b")  # 4  tombstone at or below 5 -> deleted
    await store.create("/c", b"1")  # 5  kept
    await store.update("/c", b"2")  # 6  after the compaction point -> kept
    await store.delete("/a")  # 7  kept (tombstone above the compaction point)
    await store.compact(5)
    assert [r[0] for r in _rows(path)] == [2, 5, 6, 7]
    watch = store.watch("/", start_revision=6)
    events = await watch.next_batch()
    assert [(e.revision, e.prev_kv.value if e.prev_kv else None) for e in events] == [(6, b"1"), (7, b"2")]
    await store.close()


async def test_revisions_are_not_reused_when_compaction_removed_the_newest_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    await store.create("/a", b"1")
    await store.delete("/a")  # revision 2, a tombstone: compacting at 2 deletes every row
    await store.compact(2)
    assert _rows(path) == []
    await store.close()
    store = SqliteStore(path)
    assert (store.revision, store.compacted_revision) == (2, 2)
    assert (await store.create("/a", b"again")).mod_revision == 3
    await store.close()


async def test_compaction_cut_short_is_finished_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    for i in range(10):
        await store.create("/k", str(i).encode()) if i == 0 else await store.update("/k", str(i).encode())
    await store.close()
    with sqlite3.connect(path) as conn:  # as if killed after recording the compaction, before deleting rows
        conn.execute("INSERT INTO meta (k, v) VALUES ('compacted', 8)")
    store = SqliteStore(path)
    assert store.compacted_revision == 8
    assert [r[0] for r in _rows(path)] == [8, 9, 10]
    with pytest.raises(Compacted):
        await store.get("/k", revision=7)
    await store.close()


async def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    with pytest.raises(StoreError, match="open for writing by another process"):
        SqliteStore(path)
    await store.close()
    again = SqliteStore(path)  # released on close
    await again.close()


async def test_reader_follows_a_live_store_by_polling(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    await store.create("/registry/pods/ns/a", b"1")
    reader = SqliteReader(path)
    assert reader.revision == 1
    assert reader.get("/registry/pods/ns/a") == KeyValue("/registry/pods/ns/a", b"1", 1, 1, 1)
    seen: list[tuple[int, str]] = []

    async def follow() -> None:
        async for event in reader.follow("/registry/pods/", start_revision=1, poll_interval=0.01):
            seen.append((event.revision, event.type.value))
            if len(seen) == 3:
                return

    follower = asyncio.ensure_future(follow())
    await store.update("/registry/pods/ns/a", b"2")
    await store.create("/registry/nodes/n", b"not followed")
    await asyncio.sleep(0.05)
    await store.delete("/registry/pods/ns/a")
    await asyncio.wait_for(follower, 5)
    assert seen == [(1, "PUT"), (2, "PUT"), (4, "DELETE")]
    assert reader.range("/registry/", revision=3).count == 2
    await store.compact(3)
    with pytest.raises(Compacted):
        reader.events("/", first=2)
    reader.close()
    await store.close()


async def test_reader_in_another_process_sees_committed_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path, durability=Durability.FSYNC)
    for i in range(5):
        await store.create(f"/k/{i}", str(i).encode())
    script = textwrap.dedent(
        f"""
        from kubeplane.store.sqlite_reader import SqliteReader
        r = SqliteReader({str(path)!r})
        print(r.revision, [kv.key for kv in r.range("/k/").kvs], len(r.events("/", first=1)))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split(maxsplit=1) == ["5", "['/k/0', '/k/1', '/k/2', '/k/3', '/k/4'] 5\n"]
    await store.close()


@pytest.mark.parametrize("durability", list(Durability), ids=lambda d: d.value)
async def test_store_files_are_private(tmp_path: Path, durability: Durability) -> None:
    """The store holds every Secret: its directory is created 0700 and the database, WAL, shared-memory and lock
    files are 0600 whatever the umask (etcd keeps its data dir 0700); files an older version left 0644 are
    tightened when the store opens."""

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "data" / "store.db"
        store = SqliteStore(path, durability=durability)
        await store.create("/registry/secrets/default/s", b"token")
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}.lock")]
        assert Path(f"{path}-wal").exists()
        assert {p.name: mode(p) for p in files if p.exists()} == {p.name: 0o600 for p in files if p.exists()}
        await store.close()
        assert mode(path.parent) == 0o700
        assert {p.name: mode(p) for p in files if p.exists()} == {p.name: 0o600 for p in files if p.exists()}
        assert path.exists()
        path.chmod(0o644)
        store = SqliteStore(path, durability=durability)
        await store.close()
        assert mode(path) == 0o600
    finally:
        os.umask(old_umask)
