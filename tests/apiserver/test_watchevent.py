"""Stored values and their decoding (kubeplane.apiserver.watchevent): a value costs its own length, and decoding
it again gives an equal object, key order and resourceVersion included (upstream's storage codec: an object
read back from etcd is the object written, with ``metadata.resourceVersion`` set from the revision)."""

from __future__ import annotations

import copy
import tracemalloc
import weakref
from typing import Any

from kubeplane.apiserver.watchevent import Decoded, WatchEvent, decode, encode, load, tight
from kubeplane.store.interface import KeyValue

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {f"l{i}": "v" * 40 for i in range(40)}},
    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
}


def test_an_encoded_value_occupies_its_own_length() -> None:
    """orjson returns its output in the buffer it grew while writing (kilobytes for a few hundred bytes): the
    store keeps a copy of the value's own size."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = encode({**POD, "metadata": {**POD["metadata"], "resourceVersion": "7"}})
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(value) > 2000
    assert held < len(value) * 5 // 4  # orjson's own buffer: several times the length
    assert b"resourceVersion" not in value
    assert tight(b"abc") == b"abc"


def test_decoding_again_gives_an_equal_object_in_the_same_key_order() -> None:
    kv = KeyValue("/registry/pods/default/p", encode(POD), 3, 9, 2)
    first, second = load(kv, 9), load(kv, 9)
    assert first == second == decode(kv)
    assert first is not second
    assert list(first["metadata"]) == [*POD["metadata"], "resourceVersion"]
    assert first["metadata"]["resourceVersion"] == "9"
    assert load(kv, 12)["metadata"]["resourceVersion"] == "12"  # a DELETED event's last state
    assert isinstance(first, Decoded)
    assert weakref.ref(first)() is first  # what the watch cache references weakly


def test_a_copy_of_a_decoded_object_is_a_plain_dict() -> None:
    """Components copy a shared object before changing it (``copy.deepcopy``): the copy is theirs, a dict."""
    obj = load(KeyValue("/registry/pods/default/p", encode(POD), 3, 9, 2), 9)
    deep, shallow = copy.deepcopy(obj), copy.copy(obj)
    assert type(deep) is dict
    assert type(shallow) is dict
    assert deep == shallow == obj
    assert deep["metadata"] is not obj["metadata"]
    assert shallow["metadata"] is obj["metadata"]


def test_a_watch_line_occupies_its_own_length() -> None:
    """A watch line waits in the queues of the watchers that have not sent it (their byte budget counts its
    length): it is kept right-sized too."""
    event = WatchEvent("ADDED", "/registry/pods/default/p", 9, dict(POD), None)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        line = event.frame()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert line.startswith(b'{"type":"ADDED","object":{')
    assert line.endswith(b"}\n")
    assert held < len(line) * 5 // 4
