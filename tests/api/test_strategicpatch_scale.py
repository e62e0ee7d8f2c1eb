"""Strategic merge patch on big lists: linear in the list sizes, and the same results as Go's quadratic loops.

Upstream (``staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go``) merges keyed lists with one
``findMapInSliceBasedOnKeyValue`` scan per patch element, deletes with ``deleteMatchingEntries`` (a scan and a
shift per removal) and unions primitive lists with ``deduplicateScalars`` (every pair compared). Transcribed
literally, one patch of 20,000 containers held kube-plane's event loop for 46 s. These tests pin that the indexed
replays give exactly what the literal transcriptions (kept here as oracles) give, including Go's order quirks and
slice aliasing, and count the key comparisons instead of timing anything.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import strategicpatch, strategicpatch_meta
from kubeplane.api.patch import PatchError
from kubeplane.api.strategicpatch import strategic_merge_patch
from kubeplane.api.strategicpatch_meta import KeyIndex, dedup, find_by_key, same

SCALARS = st.sampled_from([0, 1, 1.0, True, False, "a", "b", "1", None])


def go_deduplicate_scalars(items: list[Any]) -> list[Any]:
    """patch.go ``deduplicateScalars``, line by line."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if same(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def go_delete_matching(old: list[Any], merge_key: str, values: list[Any]) -> tuple[list[Any], list[Any]]:
    """patch.go ``deleteMatchingEntries`` for each value in turn, over one backing array: (kept, backing)."""
    backing, size = list(old), len(old)
    for value in values:
        while (at := find_by_key(backing[:size], merge_key, value)) >= 0:
            backing[at : size - 1] = backing[at + 1 : size]
            size -= 1
    return backing[:size], backing


@settings(max_examples=300, deadline=None)
@given(st.lists(SCALARS, max_size=30))
def test_dedup_replays_deduplicate_scalars(items: list[Any]) -> None:
    expected = go_deduplicate_scalars(items)
    got = dedup(items)
    assert [strategicpatch_meta.ident(x) for x in got] == [strategicpatch_meta.ident(x) for x in expected]


ELEMENTS = st.lists(
    st.one_of(
        st.builds(lambda k, v: {"k": k, "v": v}, SCALARS, st.integers(0, 99)),
        st.builds(lambda v: {"v": v}, st.integers(0, 99)),  # no merge key: never matched
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(ELEMENTS, st.lists(SCALARS, max_size=12))
def test_delete_matching_replays_go_backing_array(old: list[Any], values: list[Any]) -> None:
    """The backing array matters: ``$setElementOrder`` reads it as the server's order after appends."""
    assert strategicpatch._delete_matching(old, "k", values) == go_delete_matching(old, "k", values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.builds(lambda k: {"k": k}, SCALARS), st.just({}), st.just("x")), max_size=20), SCALARS)
def test_key_index_finds_what_find_by_key_finds(items: list[Any], value: Any) -> None:
    try:
        expected: int | str = find_by_key(items, "k", value)
    except PatchError as exc:
        expected = str(exc)
    try:
        got: int | str = KeyIndex(items, "k").find(value)
    except PatchError as exc:
        got = str(exc)
    assert got == expected


def go_merge_by_key(old: list[Any], new: list[Any]) -> list[Any]:
    """patch.go ``mergeSliceWithoutSpecialElements`` with a flat merge: a scan per patch element."""
    merged = list(old)
    for item in new:
        at = find_by_key(merged, "k", item["k"])
        if at >= 0:
            merged[at] = {key: value for key, value in {**merged[at], **item}.items() if value is not None}
        else:
            merged.append({key: value for key, value in item.items() if value is not None})
    return merged


@settings(max_examples=300, deadline=None)
@given(ELEMENTS, st.lists(st.builds(lambda k, v: {"k": k, "v": v}, SCALARS, st.integers(0, 99)), max_size=25))
def test_merge_by_key_follows_keys_that_a_merge_removes(old: list[Any], new: list[Any]) -> None:
    """A patch element whose merge key is ``null`` deletes the key of the element it merged into: a later
    element with the same key no longer finds it (the index must re-file, as a fresh scan would)."""
    opts = strategicpatch._Merge(strategicpatch_meta.BUILTIN_SCHEMA, server=True)
    expected = go_merge_by_key([dict(x) for x in old], new)
    mine = [dict(x) for x in old]  # _merge_by_key consumes its inputs
    got = strategicpatch._merge_by_key(mine, [dict(x) for x in new], None, "k", opts, list(mine))
    assert got == expected


# sha256 of the results the quadratic transcriptions (kube-plane before this change) gave for these patches
PINNED = {
    600: {
        "append": "139c13bbf1c5c503d2ac11e09dd0a827f31e0b68551f8284c0ac46809c92c12b",
        "merge": "b64f9176ab8265cc8cc106dcc5e079d834b41dacfc628c28b9281291435cea0b",
        "order": "c569eb3375ca8c2ed5e10d831d95d786fa202a151c89228522f2f16106270e31",
        "delete": "bb98886c38ad19e6a3bcd08fad6b2ec882a85f8a3d8fbc8ab667daac0a8d400f",
        "dedup": "6402437ce25ad4a9bf689a11e4539d0a55fb93fcd4925fb56baa800e6fdab4d7",
    },
}


def big_cases(n: int) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Pods and patches of ``n`` containers: appended, merged in reverse order, reordered by
    ``$setElementOrder``, half deleted by ``$patch: delete`` (with repeats), and a finalizer union with duplicates."""
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a", "b"]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    containers = [{"name": f"c{i}", "image": "x", "env": [{"name": "A", "value": "1"}]} for i in range(n)]
    big = {**base, "spec": {"containers": containers}}
    rng = random.Random(7)
    order = [{"name": f"c{i}"} for i in range(n - 1, -1, -1)]
    deletes = [{"name": f"c{rng.randrange(n)}", "$patch": "delete"} for _ in range(n // 2)]
    return [
        ("append", base, {"spec": {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(n)]}}),
        ("merge", big, {"spec": {"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(n - 1, -1, -1)]}}),
        (
            "order",
            big,
            {
                "spec": {
                    "$setElementOrder/containers": order,
                    "containers": [{"name": f"c{i}", "image": "y"} for i in range(n - 1, -1, -3)],
                }
            },
        ),
        ("delete", big, {"spec": {"containers": deletes + [{"name": f"n{i}", "image": "z"} for i in range(n // 4)]}}),
        ("dedup", base, {"metadata": {"finalizers": [f"f{rng.randrange(n // 3)}" for _ in range(n)]}}),
    ]


@pytest.mark.parametrize("n", sorted(PINNED))
def test_big_patches_give_the_pinned_results(n: int) -> None:
    for name, original, patch in big_cases(n):
        result = strategic_merge_patch(original, patch, kind=("", "Pod"))
        assert hashlib.sha256(orjson.dumps(result)).hexdigest() == PINNED[n][name], name


def test_key_comparisons_grow_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: each big patch costs a bounded number of key identities/comparisons per element
    (the scans compared every pair: n = 2,000 containers took millions)."""
    calls = 0
    real_ident, real_same = strategicpatch_meta.ident, strategicpatch_meta.same

    def ident(value: Any) -> Any:
        nonlocal calls
        calls += 1
        return real_ident(value)

    def same_(a: Any, b: Any) -> bool:
        nonlocal calls
        calls += 1
        return real_same(a, b)

    for module in (strategicpatch_meta, strategicpatch):
        monkeypatch.setattr(module, "ident", ident, raising=False)
        monkeypatch.setattr(module, "same", same_, raising=False)
    n = 2000
    for name, original, patch in big_cases(n):
        calls = 0
        strategic_merge_patch(original, patch, kind=("", "Pod"))
        assert calls <= 40 * n, (name, calls)
