"""Typed walks pinned to structured-merge-diff's typed package (tofieldset.go, compare.go, merge.go, remove.go)
with kube-apiserver's schema for built-in kinds (list and map types from the Go markers)."""

from __future__ import annotations

from kubeplane.api.smd import schema
from kubeplane.api.smd.fieldpath import Set
from kubeplane.api.smd.typed import added_fields_v1, compare, merge, remove_from_object, to_field_set

POD = schema.type_of("", "v1", "Pod")


def _f(atom: schema.Atom | None, *keys: str) -> schema.Atom:
    """The type at ``keys`` below ``atom`` (list element types stepped through)."""
    assert atom is not None
    for key in keys:
        if atom.kind == "list":
            assert atom.elem is not None
            atom = atom.elem
        found = atom.field(key)
        assert found is not None
        atom = found
    return atom


def test_markers_become_types() -> None:
    containers = _f(POD, "spec", "containers")
    assert (containers.rel, containers.keys) == ("map", ("name",))
    assert _f(POD, "spec", "tolerations").rel == "atomic"  # +listType=atomic
    assert _f(POD, "spec", "nodeSelector").rel == "atomic"  # +mapType=atomic
    assert _f(POD, "spec", "containers", "ports").keys == ("containerPort", "protocol")
    assert _f(POD, "metadata", "finalizers").rel == "set"  # patchStrategy=merge without a key
    assert _f(POD, "metadata", "ownerReferences").keys == ("uid",)
    assert _f(schema.type_of("apps", "v1", "Deployment"), "spec", "selector").rel == "atomic"  # +structType
    assert _f(schema.type_of("", "v1", "Pod"), "spec") is _f(POD, "spec")
    assert schema.type_of("example.com", "v1", "Widget") is schema.DEDUCED


def test_to_field_set() -> None:
    # tofieldset.go: struct fields with content are not members; map entries and list items are
    pod = {
        "metadata": {"labels": {"app": "x"}, "annotations": {}},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}], "nodeSelector": {"a": "b"}},
    }
    assert to_field_set(pod, POD).to_fields_v1() == {
        "f:metadata": {"f:annotations": {}, "f:labels": {"f:app": {}}},
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {
                    ".": {},
                    "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                }
            },
            "f:nodeSelector": {},
        },
    }


def test_compare_added_map_includes_itself() -> None:
    # compare.go: a granular value present on one side only is itself added/removed, then its children
    old = {"metadata": {"name": "x"}}
    new = {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"nodeName": "n"}}
    result = compare(old, new, POD)
    assert result.added.to_fields_v1() == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {".": {}, "f:nodeName": {}},
    }
    assert result.modified.empty()
    back = compare(new, old, POD)
    assert back.removed == result.added


def test_compare_modified_and_equal_subtrees() -> None:
    old = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}
    new = {"spec": {"containers": [{"name": "b", "image": "1"}, {"name": "a", "image": "2"}]}}
    result = compare(old, new, POD)
    assert list(result.modified.paths()) == [
        (("f", "spec"), ("f", "containers"), ("k", (("name", "a"),)), ("f", "image"))
    ]
    assert compare(old, old, POD).is_same()


def test_merge_keeps_live_and_orders_lists() -> None:
    # merge.go: rhs wins on leaves; maps union; associative lists keep live items and the applied order of
    # shared ones (visitListItems)
    live = {"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "nodeSelector": {"x": "1"}}}
    config = {"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "a"}], "nodeSelector": {"y": "2"}}}
    merged = merge(live, config, POD)
    assert [c["name"] for c in merged["spec"]["containers"]] == ["b", "c", "a"]
    assert merged["spec"]["containers"][1] == {"name": "c", "image": "i"}
    assert merged["spec"]["nodeSelector"] == {"y": "2"}  # atomic map: replaced


def test_remove_items() -> None:
    obj = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    gone = Set.from_fields_v1(
        {"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:containers": {'k:{"name":"b"}': {}}}}
    )
    assert remove_from_object(obj, gone, POD) == {
        "metadata": {"labels": {"b": "2"}},
        "spec": {"containers": [{"name": "a"}]},
    }


def test_added_fields_v1_is_compare_from_nothing() -> None:
    # the create shortcut equals compare.go's Added from an empty object (keys in serialize.go's order)
    pod = {
        "apiVersion": "v1",
        "metadata": {"name": "p", "labels": {"b": "1", "a": "2"}, "annotations": {}},
        "spec": {
            "containers": [{"name": "z", "ports": [{"containerPort": 81}, {"containerPort": 80, "protocol": "UDP"}]}],
            "nodeSelector": {"k": "v"},
            "tolerations": [{"key": "x"}],
        },
    }
    fast = added_fields_v1(pod, POD)
    assert fast == compare({}, pod, POD).added.to_fields_v1()
    assert list(fast["f:metadata"]["f:labels"]) == [".", "f:a", "f:b"]
