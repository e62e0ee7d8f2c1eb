"""Typed plugin args: strict decoding into a dataclass, one error line per problem with its field path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.plugin_args import InvalidArgs, args_type_of, decode_args
from tests.scheduler.plugins.standin_plugins import (
    LabelGate,
    LabelGateArgs,
    Selector,
    StandinFilter,
    new_label_gate,
)

PATH = fielderr.new_path("profiles").index(0).child("pluginConfig").index(1).child("args")


def _errors(raw: object) -> list[str]:
    value, errors = decode_args(LabelGateArgs, raw, PATH)
    assert (value is None) == bool(errors)
    return errors


def test_decodes_every_supported_annotation() -> None:
    raw = {
        "label": "zone",
        "mode": "Forbid",
        "weight": 2,
        "maxPods": 3,
        "enabled": False,
        "selectors": [{"key": "a", "values": ["x", "y"]}],
        "extra": {"cpu": 1},
        "otherName": "r",
    }
    value, errors = decode_args(LabelGateArgs, raw, PATH)
    assert errors == []
    assert value == LabelGateArgs(
        label="zone",
        mode="Forbid",
        weight=2.0,
        max_pods=3,
        enabled=False,
        selectors=[Selector("a", ("x", "y"))],
        extra={"cpu": 1},
        renamed="r",
    )
    assert isinstance(value.weight, float)


def test_defaults_apply_and_null_reads_as_absent() -> None:
    value, errors = decode_args(LabelGateArgs, {"label": "zone", "maxPods": None}, PATH)
    assert errors == []
    assert value == LabelGateArgs(label="zone")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"label": "z", "maxPods": "x"},
            ['profiles[0].pluginConfig[1].args.maxPods: Invalid value: "x": must be of type integer'],
        ),
        (
            {"label": "z", "maxPods": True},
            ["profiles[0].pluginConfig[1].args.maxPods: Invalid value: true: must be of type integer"],
        ),
        (
            {"label": "z", "weight": "1"},
            ['profiles[0].pluginConfig[1].args.weight: Invalid value: "1": must be of type number'],
        ),
        ({"label": 3}, ["profiles[0].pluginConfig[1].args.label: Invalid value: 3: must be of type string"]),
        (
            {"label": "z", "enabled": 1},
            ["profiles[0].pluginConfig[1].args.enabled: Invalid value: 1: must be of type boolean"],
        ),
        (
            {"label": "z", "mode": "Maybe"},
            [
                'profiles[0].pluginConfig[1].args.mode: Unsupported value: "Maybe": '
                'supported values: "Require", "Forbid"'
            ],
        ),
        ({}, ["profiles[0].pluginConfig[1].args.label: Required value"]),
        (
            {"label": "z", "podCount": 1},
            ['strict decoding error: unknown field "profiles[0].pluginConfig[1].args.podCount"'],
        ),
        (
            {"label": "z", "selectors": [{"values": ["a", 1]}, "s"]},
            [
                "profiles[0].pluginConfig[1].args.selectors[0].key: Required value",
                "profiles[0].pluginConfig[1].args.selectors[0].values[1]: Invalid value: 1: must be of type string",
                'profiles[0].pluginConfig[1].args.selectors[1]: Invalid value: "s": must be of type object',
            ],
        ),
        (
            {"label": "z", "extra": {"cpu": "one"}},
            ['profiles[0].pluginConfig[1].args.extra[cpu]: Invalid value: "one": must be of type integer'],
        ),
        (
            {"label": "z", "extra": [1]},
            ["profiles[0].pluginConfig[1].args.extra: Invalid value: [1]: must be of type object"],
        ),
        ([1], ["profiles[0].pluginConfig[1].args: Invalid value: [1]: must be of type object"]),
        ({"label": ""}, ["profiles[0].pluginConfig[1].args: Invalid value: label must not be empty"]),
    ],
)
def test_every_problem_is_one_line_with_its_field_path(raw: object, expected: list[str]) -> None:
    assert _errors(raw) == expected


def test_all_problems_are_reported_together() -> None:
    assert _errors({"maxPods": "x", "nope": 1}) == [
        "profiles[0].pluginConfig[1].args.label: Required value",
        'profiles[0].pluginConfig[1].args.maxPods: Invalid value: "x": must be of type integer',
        'strict decoding error: unknown field "profiles[0].pluginConfig[1].args.nope"',
    ]


def test_invalid_args_from_post_init_names_the_field() -> None:
    @dataclass(frozen=True)
    class Limit:
        pod_count_limit: int

        def __post_init__(self) -> None:
            if self.pod_count_limit < 0:
                raise InvalidArgs("podCountLimit", self.pod_count_limit, "must be greater than or equal to 0")

    assert decode_args(Limit, {"podCountLimit": -1}, PATH)[1] == [
        "profiles[0].pluginConfig[1].args.podCountLimit: Invalid value: -1: must be greater than or equal to 0"
    ]
    assert decode_args(Limit, None, PATH)[1] == ["profiles[0].pluginConfig[1].args.podCountLimit: Required value"]


def test_args_type_is_found_on_the_class_or_the_factory_signature() -> None:
    class WithArgs:
        Args = LabelGateArgs

        def name(self) -> str:
            return "WithArgs"

    class ByConstructor:
        def __init__(self, args: LabelGateArgs, handle: Handle) -> None:
            pass

        def name(self) -> str:
            return "ByConstructor"

    def mapping_factory(args: Mapping[str, Any], handle: Handle) -> StandinFilter:
        return StandinFilter(args, handle)

    assert args_type_of(WithArgs) is LabelGateArgs
    assert args_type_of(LabelGate, new_label_gate) is LabelGateArgs
    assert args_type_of(ByConstructor, ByConstructor) is LabelGateArgs
    assert args_type_of(StandinFilter, StandinFilter) is None
    assert args_type_of(StandinFilter, mapping_factory) is None
