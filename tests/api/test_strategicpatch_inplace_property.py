"""The in-place merge of a keyed list (``strategicpatch._in_place``) against the general path it short-cuts.

A kubelet's status patch merges its conditions (merge key ``type``) and IPs (``ip``) into elements the pod
already has, in the pod's order. Upstream (``patch.go`` ``mergeSliceHandler`` -> ``mergeSlice`` ->
``mergeSliceWithoutSpecialElements``, then ``normalizeElementOrder``) runs the full merge, partition and
re-ordering; kubeplane takes a shortcut when the patch only merges in place. These tests hold the shortcut to the
general path (the shortcut switched off) on random lists: same result or the same error, and that the shortcut
does engage on the kubelet's shape.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import strategicpatch
from kubeplane.api.patch import PatchError
from kubeplane.api.strategicpatch import strategic_merge_patch

KEYS = st.sampled_from(["Ready", "Initialized", "ContainersReady", "PodScheduled", "", 1, 1.0, True, None])
VALUES = st.one_of(st.none(), st.sampled_from(["True", "False", "", 0, 1, 1.0, True]))


def _condition(key: Any, status: Any, reason: Any, *, keyed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": key} if keyed else {}
    out["status"] = status
    out["reason"] = reason
    return out


ELEMENT = st.builds(_condition, KEYS, VALUES, VALUES, keyed=st.booleans().map(lambda b: b or True))
PATCH_ELEMENT = st.one_of(
    ELEMENT,
    st.builds(lambda k: {"$patch": "delete", "type": k}, KEYS),
    st.builds(lambda k, s: {"type": k, "status": s, "$retainKeys": ["type"]}, KEYS, VALUES),
    st.builds(lambda s: {"status": s}, VALUES),  # no merge key
)


def _outcome(original: dict[str, Any], patch: dict[str, Any]) -> Any:
    try:
        return ("ok", strategic_merge_patch(original, patch, kind=("", "Pod")))
    except PatchError as exc:
        return ("error", exc.code, str(exc))


def _both(original: dict[str, Any], patch: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = _outcome(original, patch)
    with monkeypatch.context() as m:
        m.setattr(strategicpatch, "_in_place", lambda old, new, merge_key: None)
        general = _outcome(original, patch)
    return fast, general


@settings(max_examples=400, deadline=None)
@given(st.lists(ELEMENT, max_size=6), st.lists(PATCH_ELEMENT, min_size=1, max_size=6))
def test_in_place_merge_is_the_general_merge_on_random_lists(old: list[Any], new: list[Any]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, general = _both({"status": {"conditions": old}}, {"status": {"conditions": new}}, monkeypatch)
    assert fast == general


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["Ready", "Initialized", "ContainersReady", "PodScheduled", "X"]), unique=True),
    st.data(),
)
def test_in_place_merge_is_the_general_merge_on_subsequences(types: list[str], data: st.DataObject) -> None:
    """The shape the shortcut takes: patch keys a subsequence (or any selection) of the pod's unique keys."""
    old = [{"type": t, "status": "False", "reason": "Old", "message": "m"} for t in types]
    chosen = data.draw(st.lists(st.sampled_from(types), unique=True) if types else st.just([]))
    if data.draw(st.booleans()):
        chosen = [t for t in types if t in chosen]  # in the pod's order: the shortcut engages
    new = [{"type": t, "status": data.draw(VALUES), "reason": data.draw(VALUES)} for t in chosen]
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, general = _both({"status": {"conditions": old}}, {"status": {"conditions": new}}, monkeypatch)
    assert fast == general


@pytest.mark.parametrize(
    ("old", "new", "engages"),
    [
        (["A", "B", "C", "D"], ["A", "B", "C", "D"], True),
        (["A", "B", "C", "D", "PodScheduled"], ["A", "B", "C", "D"], True),  # kubelet after its first write
        (["PodScheduled"], ["A", "B", "C", "D"], False),  # appends: general path
        (["A", "B"], ["B", "A"], False),  # reorders: general path
        (["A", "A"], ["A"], False),  # duplicate keys: Go's first match, general path
    ],
    ids=["same-order", "subsequence", "appends", "reorders", "duplicate-keys"],
)
def test_in_place_engages_on_the_kubelets_shape(
    old: list[str], new: list[str], engages: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """patch.go mergeSliceWithoutSpecialElements + normalizeElementOrder: same result with or without the shortcut,
    and the shortcut taken exactly when the patch only merges into existing elements in the pod's order."""
    original = {"status": {"conditions": [{"type": t, "status": "False"} for t in old]}}
    patch = {"status": {"conditions": [{"type": t, "status": "True", "reason": None} for t in new]}}
    calls: list[bool] = []
    real = strategicpatch._in_place

    def spy(a: list[Any], b: list[Any], merge_key: str) -> list[int] | None:
        found = real(a, b, merge_key)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(strategicpatch, "_in_place", spy)
    fast = _outcome(original, patch)
    monkeypatch.setattr(strategicpatch, "_in_place", lambda a, b, merge_key: None)
    assert fast == _outcome(original, patch)
    assert calls == [engages]


def test_consume_gives_the_same_document() -> None:
    """``consume=True`` (the API server's private copy) changes where the work happens, not the answer; without
    it the original is left as it was."""
    original = {
        "metadata": {"name": "p", "uid": "u"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "X"}], "phase": "Pending"},
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}], "phase": "Running"}}
    kept = orjson.dumps(original)
    plain = strategic_merge_patch(original, patch, kind=("", "Pod"))
    assert orjson.dumps(original) == kept
    private = orjson.loads(kept)
    assert strategic_merge_patch(private, patch, kind=("", "Pod"), consume=True) == plain
    assert plain["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


FLAT_VALUES = st.one_of(st.none(), st.sampled_from(["True", "", 0, 1, 1.5, True, False]))
ORIGINAL_VALUES = st.one_of(
    FLAT_VALUES, st.just({"a": 1}), st.just([1, 2]), st.just({"$patch": "delete"}), st.just([{"k": None}])
)
NAMES = st.sampled_from(["type", "status", "reason", "message", "lastTransitionTime", "x"])


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(NAMES, ORIGINAL_VALUES, max_size=5),
    st.dictionaries(NAMES, FLAT_VALUES, max_size=5),
    st.sampled_from([("", "Pod"), ("apps", "Deployment"), ("example.com", "Unknown")]),
)
def test_flat_merge_is_the_general_merge(original: dict[str, Any], flat: dict[str, Any], kind: tuple[str, str]) -> None:
    """patch.go mergeMap over a map of scalars and nulls (a condition, a port): the shortcut
    (``strategicpatch._merge_flat``) gives the general loop's document, key order included, whatever the
    original holds under those keys (scalars, maps, lists), nested or at the top."""
    for doc, patch in ((original, flat), ({"status": original}, {"status": flat})):
        fast = _outcome(doc, patch)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(strategicpatch, "_merge_flat", lambda original, patch: False)
            general = _outcome(doc, patch)
        assert orjson.dumps(fast) == orjson.dumps(general)


def test_flat_merge_engages_on_a_kubelets_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut is taken for the conditions of a status patch (scalars and nulls), not for maps holding
    containers or ``$`` keys."""
    taken: list[bool] = []
    real = strategicpatch._merge_flat

    def spy(original: dict[str, Any], patch: dict[str, Any]) -> bool:
        taken.append(real(original, patch))
        return taken[-1]

    monkeypatch.setattr(strategicpatch, "_merge_flat", spy)
    original = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "X"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}]}}
    assert _outcome(original, patch) == ("ok", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert taken == [False, False, True]  # the document, status (a list inside), the condition
