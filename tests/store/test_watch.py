"""The store's watch fan-out (kubeplane.store.watch.WatchHub): a write reaches exactly the watchers whose prefix
it starts with, as etcd's watch ranges (a prefix watch is the range [prefix, prefix+1)), whatever the prefix's
length relative to the key's resource part, and watchers added or removed later are seen at once."""

from __future__ import annotations

import pytest

from kubeplane.store.memory import MemoryStore

KEY = "/registry/leases/kube-node-lease/n1"


@pytest.mark.parametrize(
    ("prefix", "delivered"),
    [
        ("", True),
        ("/registry/", True),
        ("/registry/le", True),
        ("/registry/leases/", True),
        ("/registry/leases/kube-node-lease/", True),
        (KEY, True),
        ("/registry/leases/default/", False),
        ("/registry/pods/", False),
        ("/registry/leasesx/", False),
        (KEY + "0", False),
    ],
    ids=[
        "everything",
        "the-registry",
        "a-prefix-inside-a-segment",
        "the-resource",
        "the-namespace",
        "the-key-itself",
        "another-namespace",
        "another-resource",
        "a-longer-resource-name",
        "a-longer-key",
    ],
)
async def test_a_write_reaches_the_watchers_whose_prefix_it_starts_with(prefix: str, delivered: bool) -> None:
    store = MemoryStore()
    watch = store.watch(prefix)
    await store.create(KEY, b"{}")
    assert [e.kv.key for e in watch.take_buffered()] == ([KEY] if delivered else [])
    await store.close()


async def test_watchers_added_and_removed_between_writes() -> None:
    """The hub's per-resource lookup is rebuilt when watchers come and go: a new watcher of a resource already
    written to gets the next write; a closed one gets nothing more."""
    store = MemoryStore()
    first = store.watch("/registry/leases/")
    await store.create(KEY, b"{}")
    later = store.watch("/registry/leases/kube-node-lease/")
    await store.update(KEY, b"{}")
    assert [e.kv.mod_revision for e in first.take_buffered()] == [1, 2]
    first.close()
    await store.update(KEY, b"{}")
    assert first.take_buffered() == []
    assert [e.kv.mod_revision for e in later.take_buffered()] == [2, 3]
    await store.close()
