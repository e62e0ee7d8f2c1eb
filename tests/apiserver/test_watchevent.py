"""Stored values and their decoding (kubeplane.apiserver.watchevent): a value costs its own length, and decoding
it again gives an equal object, key order and resourceVersion included (upstream's storage codec: an object
read back from etcd is the object written, with ``metadata.resourceVersion`` set from the revision)."""

from __future__ import annotations

import copy
import tracemalloc
import weakref
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver import watchevent
from kubeplane.apiserver.watchevent import Decoded, SharedParts, WatchEvent, decode, encode, load, tight
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


# -- shared parts (SharedParts): equal parts of decoded objects are one object -----------------------------


def _pod(name: str, ip: str, *, ready: str = "True") -> dict[str, Any]:
    """A kubelet-shaped pod: managed fields of the scheduler and the kubelet (whose set names the pod's IP)."""
    status_fields: dict[str, Any] = {
        "f:status": {
            "f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}},
            "f:podIP": {},
            "f:podIPs": {".": {}, f'k:{{"ip":"{ip}"}}': {".": {}, "f:ip": {}}},
        }
    }
    labels = {"manager": "sim", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
              "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}  # fmt: skip
    status = {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:05Z",
              "fieldsType": "FieldsV1", "fieldsV1": status_fields, "subresource": "status"}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}, "managedFields": [labels, status]},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "nodeName": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": ready}], "podIP": ip, "podIPs": [{"ip": ip}]},
    }


def _stored(obj: dict[str, Any], revision: int) -> KeyValue:
    return KeyValue(f"/registry/pods/default/{obj['metadata']['name']}", encode(obj), revision, revision, 1)


def test_pods_of_one_template_share_their_managed_fields_and_spec() -> None:
    """What one template makes equal is one object across pods and versions; what differs (a pod's IP) is the
    pod's own, and the rest of a set that differs in one field is still shared."""
    a = load(_stored(_pod("a", "10.0.0.1"), 5), 5)
    b = load(_stored(_pod("b", "10.0.0.2"), 6), 6)
    a2 = load(_stored(_pod("a", "10.0.0.1", ready="False"), 7), 7)
    fields = [[e["fieldsV1"] for e in o["metadata"]["managedFields"]] for o in (a, b, a2)]
    assert fields[0][0] is fields[1][0] is fields[2][0]  # the labels' set: same for every pod
    assert fields[0][1] is fields[2][1]  # a pod's status set across its versions
    assert fields[0][1] is not fields[1][1]  # another IP: another set ...
    conditions = [f[1]["f:status"]["f:conditions"] for f in fields]
    assert conditions[0] is conditions[1]  # ... sharing its members
    assert a["spec"] is b["spec"] is a2["spec"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    other = load(_stored({**_pod("c", "10.0.0.3"), "spec": {**_pod("c", "10.0.0.3")["spec"], "nodeName": "n2"}}, 8), 8)
    assert other["spec"] is not a["spec"]  # another node: another spec, sharing its containers
    assert other["spec"]["containers"] is a["spec"]["containers"]
    assert a["status"]["podIPs"] is a2["status"]["podIPs"]
    assert a["status"]["conditions"] is not a2["status"]["conditions"]
    assert a2["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    for obj, rv in ((a, 5), (b, 6), (a2, 7)):
        kv = _stored(obj, rv)
        assert orjson.dumps(obj) == orjson.dumps(decode(kv))  # equal to a plain decode, key order included


def test_shared_parts_table_is_bounded() -> None:
    """Parts seen once cost their key for a while only: past its limit the table starts again, and what it
    hands out afterwards is still equal to what was decoded."""
    parts = SharedParts(limit=8)
    for i in range(100):
        obj = _pod(f"p{i}", f"10.0.{i}.1")
        parts.share(obj)
        assert obj == _pod(f"p{i}", f"10.0.{i}.1")
        assert len(parts) <= 16


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y", "", "é"]))
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c", "f:d"]), inner, max_size=4)
    ),
    max_leaves=12,
)
SMALL = st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 1), min_size=2, max_size=2)
"""Often equal as dicts in another key order: what a memo keyed by dict equality would exchange."""
MEMBER = st.one_of(SMALL, st.lists(SMALL, min_size=1, max_size=2), JSON)
FIELDS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.just({}), lambda inner: st.dictionaries(st.sampled_from(["f:a", "f:b", ".", "k:{}"]), inner, max_size=3)
)
OBJECT = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": st.sampled_from(["p", "q"])},
            optional={
                "labels": SMALL,
                "ownerReferences": st.lists(SMALL, max_size=2),
                "managedFields": st.lists(st.fixed_dictionaries({"manager": st.just("m"), "fieldsV1": FIELDS})),
            },
        ),
        "spec": st.dictionaries(st.sampled_from(["a", "b", "c"]), MEMBER, max_size=3),
        "status": st.dictionaries(st.sampled_from(["a", "b", "c"]), MEMBER, max_size=3),
    }
)


@pytest.mark.parametrize("collide", [False, True], ids=["hash", "every-key-collides"])
@settings(max_examples=150, deadline=None)
@given(objs=st.lists(OBJECT, min_size=1, max_size=8))
def test_a_shared_decode_encodes_as_the_plain_decode(collide: bool, objs: list[dict[str, Any]]) -> None:
    """Property: sharing never changes what an object says, key order included — parts equal as dicts but in
    another key order (``{"a":1,"b":2}`` and ``{"b":2,"a":1}``) are never exchanged, nor parts whose encodings'
    hashes collide (the table keeps hashes only)."""
    parts = SharedParts(limit=5)
    saved = watchevent._digest
    watchevent._digest = (lambda _key: 0) if collide else hash
    try:
        for obj in objs:
            raw = orjson.dumps(obj)
            mine = orjson.loads(raw)
            parts.share(mine)
            assert orjson.dumps(mine) == raw
    finally:
        watchevent._digest = saved
