"""ShapeMemo and json_key: the bounded per-shape memo plugins keep what they derive from a pod's own fields in."""

from __future__ import annotations

import pytest

from kubeplane.scheduler.plugins.shape_memo import ShapeMemo, json_key


def test_a_key_is_built_once_then_read() -> None:
    memo: ShapeMemo[tuple[int, ...]] = ShapeMemo()
    built: list[int] = []

    def build() -> tuple[int, ...]:
        built.append(1)
        return (len(built),)

    assert memo.get(b"a", build) == (1,)
    assert memo.get(b"a", build) == (1,)
    assert memo.get(b"b", build) == (2,)
    assert len(built) == 2


def test_bounded_it_forgets_everything_when_full() -> None:
    memo: ShapeMemo[int] = ShapeMemo(limit=3)
    for i in range(3):
        memo.get(i, lambda i=i: i)  # type: ignore[misc]
    assert len(memo) == 3
    assert memo.get(99, lambda: 99) == 99
    assert len(memo) == 1


def test_a_build_that_raises_is_not_kept() -> None:
    memo: ShapeMemo[int] = ShapeMemo()

    def bad() -> int:
        raise ValueError("bad selector")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad selector"):
            memo.get(b"k", bad)
    assert len(memo) == 0


def test_json_key_is_canonical_and_none_for_non_json() -> None:
    assert json_key({"b": 1, "a": [1, None]}) == json_key({"a": [1, None], "b": 1})
    assert json_key({"a": 1}) != json_key({"a": "1"})
    assert json_key({"a": object()}) is None
