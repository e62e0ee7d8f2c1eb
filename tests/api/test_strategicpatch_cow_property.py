"""Copy-on-write strategic merge (``strategic_merge_patch(share=True)`` over ``reachable_copy``) against the merge
over a deep copy.

Upstream (``patch.go`` ``StrategicMergeMapPatch``) merges into a fresh decode of the stored object; kubeplane's
status writes hand the merge the stored object itself and copy only what the patch can reach. The answer must not
change: on random documents and random patches -- nested maps, keyed lists merged in place and by the general
path, atomic lists, nulls, ``$patch`` replace/delete, ``$retainKeys``, ``$setElementOrder`` and
``$deleteFromPrimitiveList`` directives -- the shared merge gives the copied merge's document or its error, and
leaves the original as it was, byte for byte. Untouched containers are shared by identity (what the comparisons
after the merge count on), and a copy that misses a reached container is caught.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import strategicpatch
from kubeplane.api.patch import PatchError
from kubeplane.api.strategicpatch import reachable_copy, strategic_merge_patch
from kubeplane.api.strategicpatch_meta import BUILTIN_SCHEMA

TYPES = st.sampled_from(["Ready", "Initialized", "ContainersReady", "PodScheduled", "X"])
SCALARS = st.one_of(st.none(), st.sampled_from(["True", "False", "", 0, 1, True]))
CONDITION = st.fixed_dictionaries(
    {"type": TYPES}, optional={"status": SCALARS, "reason": SCALARS, "lastTransitionTime": SCALARS}
)
PATCH_CONDITION = st.one_of(
    CONDITION,
    st.builds(lambda t: {"$patch": "delete", "type": t}, TYPES),
    st.builds(lambda t, s: {"type": t, "status": s, "$retainKeys": ["type", "status"]}, TYPES, SCALARS),
)
IPS = st.lists(st.builds(lambda i: {"ip": f"10.0.0.{i}"}, st.integers(0, 3)), max_size=3)
CONTAINER_STATUS = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b"])},
    optional={
        "ready": st.booleans(),
        "state": st.one_of(
            st.just({"waiting": {"reason": "ContainerCreating"}}), st.just({"running": {"startedAt": "t"}})
        ),
    },
)
LABELS = st.dictionaries(st.sampled_from(["app", "tier", "x"]), st.one_of(st.none(), st.sampled_from(["a", "b"])))
STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": SCALARS,
        "conditions": st.lists(CONDITION, max_size=5),
        "podIPs": IPS,
        "containerStatuses": st.lists(CONTAINER_STATUS, max_size=2),
        "nominatedNodeName": SCALARS,
    },
)
FINALIZERS = st.lists(st.sampled_from(["a/x", "b/y", "c/z"]), max_size=3)
METADATA = st.fixed_dictionaries(
    {"name": st.just("p")}, optional={"labels": LABELS, "annotations": LABELS, "finalizers": FINALIZERS}
)
SPEC = st.fixed_dictionaries(
    {"containers": st.just([{"name": "a", "image": "i", "ports": [{"containerPort": 80}]}])},
    optional={"nodeName": st.sampled_from(["n1", "n2"])},
)
DOCUMENT = st.fixed_dictionaries({"metadata": METADATA, "spec": SPEC}, optional={"status": STATUS})


@st.composite
def patches(draw: st.DrawFn) -> dict[str, Any]:
    """A patch of the kinds of changes status and metadata writes send, directives included."""
    status: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "phase": SCALARS,
                "conditions": st.lists(PATCH_CONDITION, max_size=5),
                "podIPs": st.one_of(st.none(), IPS),
                "containerStatuses": st.one_of(st.none(), st.lists(CONTAINER_STATUS, max_size=2)),
                "nominatedNodeName": SCALARS,
            },
        )
    )
    if "conditions" in status and draw(st.booleans()):
        status["$setElementOrder/conditions"] = [{"type": t} for t in draw(st.lists(TYPES, unique=True, max_size=4))]
    if draw(st.booleans()):
        status = {**status, "$patch": draw(st.sampled_from(["replace", "delete"]))}
    patch: dict[str, Any] = {}
    if draw(st.booleans()) or not status:
        patch["status"] = status
    meta: dict[str, Any] = draw(
        st.fixed_dictionaries({}, optional={"labels": st.one_of(st.none(), LABELS), "uid": st.just("u")})
    )
    if draw(st.booleans()):
        meta["$deleteFromPrimitiveList/finalizers"] = draw(FINALIZERS)
    if meta:
        patch["metadata"] = meta
    if draw(st.booleans()):
        patch["spec"] = {"nodeName": draw(SCALARS)}
    return patch


def _outcome(original: dict[str, Any], patch: dict[str, Any], *, share: bool) -> Any:
    try:
        return ("ok", strategic_merge_patch(original, patch, kind=("", "Pod"), share=share))
    except PatchError as exc:
        return ("error", exc.code, str(exc))


@settings(max_examples=300, deadline=None)
@given(DOCUMENT, patches())
def test_shared_merge_is_the_copied_merge(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """patch.go StrategicMergeMapPatch over a fresh decode: the same document or error when the merge shares the
    original, and the original unchanged."""
    before = orjson.dumps(original)
    copied = _outcome(original, patch, share=False)
    shared = _outcome(original, patch, share=True)
    assert orjson.dumps(original) == before
    assert orjson.dumps(shared) == orjson.dumps(copied)


def test_untouched_containers_are_shared_by_identity() -> None:
    """A kubelet-shaped status patch copies the status it merges into; the spec and the metadata's untouched maps
    are the original's very objects (what typed.compare's and validation's identity checks find)."""
    original: dict[str, Any] = {
        "metadata": {"name": "p", "labels": {"app": "a"}, "managedFields": [{"manager": "m"}]},
        "spec": {"containers": [{"name": "a", "image": "i"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}], "hostIPs": [{"ip": "h"}]},
    }
    patch = {
        "metadata": {"uid": "u"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    before = orjson.dumps(original)
    result = strategic_merge_patch(original, patch, kind=("", "Pod"), share=True)
    assert orjson.dumps(original) == before
    assert result["spec"] is original["spec"]
    assert result["metadata"]["labels"] is original["metadata"]["labels"]
    assert result["metadata"]["managedFields"] is original["metadata"]["managedFields"]
    assert result["status"]["hostIPs"] is original["status"]["hostIPs"]
    assert result["status"] is not original["status"]
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


@pytest.mark.parametrize(
    "patch",
    [
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"status": {"$setElementOrder/conditions": [{"type": "Ready"}, {"type": "X"}]}},
    ],
    ids=["merged-list", "set-element-order-list"],
)
def test_a_copy_missing_a_reached_list_is_caught(patch: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The property has teeth: were ``reachable_copy`` to share a list the merge reaches (by its name or by the
    ``$setElementOrder`` directive naming it: its elements are merged in place), the original would change
    under the merge."""
    original = {
        "metadata": {"name": "p", "finalizers": ["a/x", "b/y"]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}]},
    }
    before = orjson.dumps(original)
    strategic_merge_patch(original, patch, kind=("", "Pod"), share=True)
    assert orjson.dumps(original) == before

    def shallow(doc: dict[str, Any], changes: dict[str, Any], t: str | None = None, **_: Any) -> dict[str, Any]:
        out = dict(doc)
        for key, value in changes.items():
            if isinstance(doc.get(key), dict) and isinstance(value, dict):
                out[key] = shallow(doc[key], value)
        return out  # lists (and what directives name) left shared: wrong

    monkeypatch.setattr(strategicpatch, "reachable_copy", shallow)
    if "$setElementOrder/conditions" in patch["status"]:  # the directive's list, merged by the directive alone
        patch = {"status": {**patch["status"], "conditions": [{"type": "X", "status": "False"}]}}
    strategic_merge_patch(original, patch, kind=("", "Pod"), share=True)
    assert orjson.dumps(original) != before


def test_reachable_copy_shares_an_atomic_list_the_merge_replaces() -> None:
    """patch.go mergeSliceHandler: a list without the merge strategy takes the patch's value unread (a pod's
    containerStatuses), so it is shared; a merged list (conditions, by type) is copied."""
    original: dict[str, Any] = {
        "status": {"containerStatuses": [{"name": "a", "ready": False}], "conditions": [{"type": "Ready"}]}
    }
    patch = {"status": {"containerStatuses": [{"name": "a", "ready": True}], "conditions": [{"type": "Ready"}]}}
    out = reachable_copy(original, patch, "Pod", schema=BUILTIN_SCHEMA)
    assert out["status"]["containerStatuses"] is original["status"]["containerStatuses"]
    assert out["status"]["conditions"] is not original["status"]["conditions"]
    unknown = reachable_copy(original, patch)  # no schema: every list copied
    assert unknown["status"]["containerStatuses"] is not original["status"]["containerStatuses"]


def test_reachable_copy_copies_only_what_the_patch_names() -> None:
    original: dict[str, Any] = {"a": {"b": {"c": 1}, "d": [1]}, "e": [2], "f": {"g": 3}}
    out = reachable_copy(original, {"a": {"b": {"c": 2}}, "$setElementOrder/e": []})
    assert out is not original
    assert out["a"] is not original["a"]
    assert out["a"]["b"] is not original["a"]["b"]
    assert out["a"]["d"] is original["a"]["d"]
    assert out["f"] is original["f"]
    assert out["e"] is not original["e"]
    assert out["e"] == original["e"]
