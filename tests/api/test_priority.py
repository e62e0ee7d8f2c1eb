"""global_default_class: the class pods without priorityClassName get (upstream's getDefaultPriorityClass)."""

from __future__ import annotations

from kubeplane.api.priority import global_default_class


def _class(name: str, value: int, default: bool = False) -> dict[str, object]:
    return {"metadata": {"name": name}, "value": value, "globalDefault": default}


def test_none_without_a_global_default() -> None:
    assert global_default_class([_class("a", 10)]) is None
    assert global_default_class([]) is None


def test_the_lowest_value_wins_when_several_are_global_default() -> None:
    got = global_default_class([_class("high", 100, True), _class("plain", 1), _class("low", 5, True)])
    assert got is not None
    assert got["metadata"] == {"name": "low"}
