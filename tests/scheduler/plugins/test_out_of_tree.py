"""Out-of-tree plugins: entry points, ``outOfTreeRegistry`` import paths, collisions and load errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubeplane.scheduler.config import ConfigError, parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.plugins.out_of_tree import ENTRY_POINT_GROUP
from kubeplane.scheduler.plugins.registry import new_in_tree_registry, registry_for
from kubeplane.scheduler.profile import build_profiles
from tests.scheduler.plugins.standin_plugins import LabelGate, LabelGateArgs, StandinPreFilter

MOD = "tests.scheduler.plugins.standin_plugins"
HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _config(**extra: Any) -> dict[str, Any]:
    return {**HEADER, **extra}


def _errors(data: dict[str, Any], registry: Registry | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        build_profiles(parse_config(data), Handle(), registry)
    return info.value.errors


def _dist_info(root: Path, name: str, entry_points: dict[str, str]) -> None:
    """A minimal installed distribution under ``root`` declaring ``entry_points`` in the plugins group."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")


# --- entry points --------------------------------------------------------------------------------------------


def test_installed_example_plugins_are_found_through_entry_points() -> None:
    registry = registry_for(parse_config(HEADER))
    assert {"CheckPodCountLimit", "CheckPodLimitResources"} <= set(registry)
    entry = registry.entry("CheckPodCountLimit")
    assert entry is not None
    assert entry.points == frozenset({"filter"})
    assert entry.origin.startswith("entry point CheckPodCountLimit = ")
    assert "distribution kubeplane-example-plugins 0.1.0" in entry.origin


def test_entry_point_on_sys_path_registers_its_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist_info(tmp_path, "standins", {"StandinPreFilter": f"{MOD}:StandinPreFilter"})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = registry_for(parse_config(HEADER))
    entry = registry.entry("StandinPreFilter")
    assert entry is not None
    assert entry.cls is StandinPreFilter
    assert entry.points == frozenset({"preFilter", "filter"})
    assert "distribution standins 1.0" in entry.origin


def test_entry_point_discovery_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """What ``kubeplane scheduler`` sees: a new process with a distribution on its path, nothing patched."""
    _dist_info(tmp_path, "standins", {"StandinFilter": f"{MOD}:StandinFilter"})
    code = textwrap.dedent(
        """
        from kubeplane.scheduler.config import default_config
        from kubeplane.scheduler.plugins.registry import registry_for
        print(sorted(n for n in registry_for(default_config()) if n.startswith(("Standin", "CheckPod"))))
        """
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "['CheckPodCountLimit', 'CheckPodLimitResources', 'StandinFilter']"


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("NodeName", f"{MOD}:StandinFilter", 'plugin name "NodeName" is already taken by an in-tree plugin'),
        ("VolumeBinding", f"{MOD}:StandinFilter", 'plugin name "VolumeBinding" is already taken by an in-tree'),
        ("Broken", "no_such_module_xyz:Plugin", 'cannot import module "no_such_module_xyz": ModuleNotFoundError'),
        ("Broken", f"{MOD}:Missing", f'module "{MOD}" has no attribute "Missing"'),
        ("NotAPlugin", f"{MOD}:NotAPlugin", "has no name() method: it is not a scheduler plugin"),
        ("Factory", f"{MOD}:untyped_factory", "must annotate its return type with the plugin class"),
        ("Misnamed", f"{MOD}:Misnamed", 'declares NAME "SomethingElse", not "Misnamed"'),
        ("Number", f"{MOD}:NOT_A_CLASS", "the target is a value of type int, not a plugin class or factory"),
    ],
)
def test_bad_entry_points_are_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, problem: str
) -> None:
    _dist_info(tmp_path, "bad", {name: value})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        registry_for(parse_config(HEADER))
    assert len(info.value.errors) == 1
    line = info.value.errors[0]
    assert line.startswith(f'entry point {name} = "{value}" of distribution bad 1.0: ')
    assert problem in line
    assert "\n" not in line


def test_two_distributions_cannot_register_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist_info(tmp_path, "first", {"StandinFilter": f"{MOD}:StandinFilter"})
    _dist_info(tmp_path, "second", {"StandinFilter": f"{MOD}:StandinFilter"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        registry_for(parse_config(HEADER))
    assert info.value.errors == [
        f'entry point StandinFilter = "{MOD}:StandinFilter" of distribution second 1.0: plugin name '
        f'"StandinFilter" is already taken by the plugin registered by entry point StandinFilter = '
        f'"{MOD}:StandinFilter" of distribution first 1.0'
    ]


# --- outOfTreeRegistry ---------------------------------------------------------------------------------------


def test_import_path_registration_through_the_configuration() -> None:
    data = _config(
        outOfTreeRegistry={"LabelGate": f"{MOD}:new_label_gate"},
        profiles=[
            {
                "plugins": {"filter": {"enabled": [{"name": "LabelGate"}]}},
                "pluginConfig": [{"name": "LabelGate", "args": {"label": "zone", "mode": "Forbid"}}],
            }
        ],
    )
    config = parse_config(data)
    assert dict(config.out_of_tree_registry) == {"LabelGate": f"{MOD}:new_label_gate"}
    fwk = build_profiles(config, Handle())["default-scheduler"]
    plugin = fwk.plugins["LabelGate"]
    assert isinstance(plugin, LabelGate)
    assert plugin.args == LabelGateArgs(label="zone", mode="Forbid")
    assert "LabelGate" in [p.name() for p in fwk.filter_plugins]


def test_import_path_is_added_to_an_explicit_registry_without_changing_it() -> None:
    base = new_in_tree_registry()
    config = parse_config(_config(outOfTreeRegistry={"StandinFilter": f"{MOD}:StandinFilter"}))
    merged = registry_for(config, base)
    assert "StandinFilter" in merged
    assert "StandinFilter" not in base
    assert "CheckPodCountLimit" not in merged  # entry points are the caller's choice with an explicit registry
    assert registry_for(parse_config(HEADER), base) is base


@pytest.mark.parametrize(
    ("registry", "expected"),
    [
        (
            {"Foo": "nocolon"},
            ['outOfTreeRegistry.Foo: Invalid value: "nocolon": must be an import path "package.module:Attribute"'],
        ),
        (
            {"Foo": "a.b:"},
            ['outOfTreeRegistry.Foo: Invalid value: "a.b:": must be an import path "package.module:Attribute"'],
        ),
        (
            {"Foo": "a-b:C"},
            ['outOfTreeRegistry.Foo: Invalid value: "a-b:C": must be an import path "package.module:Attribute"'],
        ),
        ({"": "a:B"}, ['outOfTreeRegistry: Invalid value: "": plugin name must not be empty']),
        ({"Foo": 3}, ["outOfTreeRegistry.Foo: Invalid value: 3: must be of type string"]),
    ],
)
def test_out_of_tree_registry_form_is_validated_with_field_paths(registry: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_config(outOfTreeRegistry=registry))
    assert info.value.errors == expected


def test_out_of_tree_registry_must_be_an_object() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_config(outOfTreeRegistry=["a:B"]))
    assert info.value.errors == ['outOfTreeRegistry: Invalid value: ["a:B"]: must be of type object']


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        (
            "Gone",
            "no_such_module_xyz:Plugin",
            'outOfTreeRegistry.Gone: Invalid value: "no_such_module_xyz:Plugin": cannot import module '
            "\"no_such_module_xyz\": ModuleNotFoundError: No module named 'no_such_module_xyz'",
        ),
        (
            "NodeName",
            f"{MOD}:StandinFilter",
            f'outOfTreeRegistry.NodeName: Invalid value: "{MOD}:StandinFilter": plugin name "NodeName" is '
            "already taken by an in-tree plugin",
        ),
        (
            "CheckPodCountLimit",
            f"{MOD}:StandinFilter",
            f'outOfTreeRegistry.CheckPodCountLimit: Invalid value: "{MOD}:StandinFilter": plugin name '
            '"CheckPodCountLimit" is already taken by the plugin registered by entry point CheckPodCountLimit = '
            '"kubeplane_example_plugins.pod_count_limit:CheckPodCountLimit" of distribution '
            "kubeplane-example-plugins 0.1.0",
        ),
        (
            "NotAPlugin",
            f"{MOD}:NotAPlugin",
            f'outOfTreeRegistry.NotAPlugin: Invalid value: "{MOD}:NotAPlugin": class {MOD}.NotAPlugin has no '
            "name() method: it is not a scheduler plugin",
        ),
    ],
)
def test_bad_import_paths_are_one_clear_line(name: str, spec: str, expected: str) -> None:
    assert _errors(_config(outOfTreeRegistry={name: spec})) == [expected]


def test_unknown_plugins_list_in_tree_and_out_of_tree_plugins() -> None:
    data = _config(
        outOfTreeRegistry={"StandinFilter": f"{MOD}:StandinFilter"},
        profiles=[{"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}],
    )
    [line] = _errors(data)
    assert line.startswith('profiles[0].plugins.filter.enabled[0]: plugin "NoSuchPlugin" does not exist; available')
    available = line.split("available plugins: ")[1].split(", ")
    assert available == sorted(available)
    assert {"CheckPodCountLimit", "CheckPodLimitResources", "StandinFilter", "NodeName"} <= set(available)


# --- typed args through the profile builder --------------------------------------------------------------------


def test_typed_args_errors_name_the_file_index() -> None:
    data = _config(
        profiles=[
            {
                "plugins": {"filter": {"enabled": [{"name": "CheckPodCountLimit"}]}},
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {}},
                    {"name": "CheckPodCountLimit", "args": {"podCountLimit": "x"}},
                ],
            }
        ]
    )
    assert _errors(data) == [
        'profiles[0].pluginConfig[1].args.podCountLimit: Invalid value: "x": must be of type integer'
    ]


def test_typed_args_of_a_disabled_plugin_are_still_checked() -> None:
    data = _config(profiles=[{"pluginConfig": [{"name": "CheckPodCountLimit", "args": {"podCountLimit": -1}}]}])
    assert _errors(data) == [
        "profiles[0].pluginConfig[0].args.podCountLimit: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_enabled_typed_plugin_without_its_required_args() -> None:
    data = _config(profiles=[{"plugins": {"filter": {"enabled": [{"name": "CheckPodCountLimit"}]}}}])
    assert _errors(data) == [
        'profiles[0].pluginConfig: Required value: plugin "CheckPodCountLimit" is enabled and its args are not '
        "valid without an entry (args.podCountLimit: Required value)"
    ]


def test_plain_mapping_args_keep_working() -> None:
    data = _config(
        outOfTreeRegistry={"StandinFilter": f"{MOD}:StandinFilter"},
        profiles=[
            {
                "plugins": {"filter": {"enabled": [{"name": "StandinFilter"}]}},
                "pluginConfig": [{"name": "StandinFilter", "args": {"anything": [1, "two"]}}],
            }
        ],
    )
    fwk = build_profiles(parse_config(data), Handle())["default-scheduler"]
    assert getattr(fwk.plugins["StandinFilter"], "args", None) == {"anything": [1, "two"]}


def test_registry_new_decodes_typed_args_for_direct_callers() -> None:
    registry = registry_for(parse_config(_config(outOfTreeRegistry={"LabelGate": f"{MOD}:new_label_gate"})))
    plugin = registry.new("LabelGate", {"label": "a"}, Handle())
    assert isinstance(plugin, LabelGate)
    assert plugin.args.label == "a"
    with pytest.raises(ValueError, match=r"^LabelGate\.args\.label: Required value$"):
        registry.new("LabelGate", {}, Handle())
