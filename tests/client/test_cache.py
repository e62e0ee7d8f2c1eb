"""The informer's indexer (kubeplane.client.cache.Indexer): its listeners, which in-process readers keeping columns
derived from the cache (the node lifecycle controller's health pass) rely on to know what changed.

Upstream behaviour pinned (client-go ``tools/cache`` ``threadSafeMap``): a put replaces the object under its key,
a delete removes it, ``Replace`` swaps the whole contents; reads see the new state at once."""

from __future__ import annotations

from kubeplane.client.cache import Indexer


def _obj(name: str, rv: str = "1") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def test_listeners_hear_every_put_and_delete_after_the_change() -> None:
    indexer = Indexer()
    heard: list[tuple[str | None, object]] = []
    indexer.add_listener(lambda key: heard.append((key, indexer.get(key) if key else len(indexer))))
    indexer.add(_obj("a"))
    indexer.add(_obj("a", "2"))
    indexer.delete("ns/a")
    indexer.delete("ns/a")  # nothing stored: nothing changed, nothing heard
    indexer.replace([_obj("b"), _obj("c")])
    assert heard == [
        ("ns/a", _obj("a")),
        ("ns/a", _obj("a", "2")),
        ("ns/a", None),
        (None, 2),
    ]
