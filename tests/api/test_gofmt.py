"""fmt's %+v of decoded JSON (what kube-apiserver quotes for a strategic merge patch it could not apply)."""

from __future__ import annotations

import pytest

from kubeplane.api.gofmt import format_float, sprint_v


def test_maps_sort_their_keys_and_slices_use_spaces() -> None:
    patch = {"spec": {"schedulerName": 5, "containers": [{"name": "c", "x": None}], "a": True}}
    assert sprint_v(patch) == "map[spec:map[a:true containers:[map[name:c x:<nil>]] schedulerName:5]]"


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.5, "1.5"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"), (1e-5, "1e-05"), (100.0, "100")],
)
def test_floats_print_in_gs_shortest_form(value: float, text: str) -> None:
    assert format_float(value) == text


def test_deep_values_print_without_recursion() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    assert sprint_v(deep) == "[" * 5000 + "1" + "]" * 5000
