"""Loading files and the v1 defaults (upstream ``defaults_test.go`` ``TestSchedulerDefaults``), Go duration
text (``time.ParseDuration`` / ``Duration.String``), and one-line errors for files that cannot be read."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api.durations import format_duration, parse_duration
from kubeplane.scheduler.config import (
    UPSTREAM_DEFAULT_PLUGINS,
    ClientConnection,
    ConfigError,
    LeaderElection,
    Plugins,
    PluginSet,
    default_config,
    load_config,
    parse_config,
)

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

SEED_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: my-scheduler
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
    filter:
      enabled:
      - name: CheckPodCountLimit
      - name: CheckPodLimitResources
  pluginConfig:
  - name: CheckPodCountLimit
    args:
      podCountLimit: 2
  - name: CheckPodLimitResources
    args:
      limitRatio:
        cpu: 0.7
        memory: 0.7
"""


def test_defaults_round_trip(tmp_path: Path) -> None:
    """A file with only apiVersion/kind is upstream's defaulted configuration (TestSchedulerDefaults "empty config")."""
    path = tmp_path / "config.yaml"
    path.write_text(HEADER)
    cfg = load_config(path)
    assert cfg == default_config()
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score is None
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.client_connection == ClientConnection("", "", "application/vnd.kubernetes.protobuf", 50.0, 100)
    assert cfg.leader_election == LeaderElection(True, 15.0, 10.0, 2.0, "leases", "kube-scheduler", "kube-system")
    assert cfg.delay_cache_until_active is False
    assert cfg.extenders == ()
    (profile,) = cfg.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.percentage_of_nodes_to_score is None
    assert profile.plugins == Plugins(multi_point=PluginSet(UPSTREAM_DEFAULT_PLUGINS))
    assert list(profile.plugin_config) == [
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
        "VolumeBinding",
    ]
    assert profile.plugin_config["NodeResourcesFit"] == {
        "scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEM},
        "ignoredResources": [],
        "ignoredResourceGroups": [],
    }


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "# no configuration yet\n", "---\n"],
    ids=["empty file", "blank lines", "only a comment", "an empty document"],
)
def test_file_without_a_document_is_the_default_configuration(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert load_config(path) == default_config()


def test_seed_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(SEED_YAML)
    cfg = load_config(str(path))
    assert cfg.leader_election.leader_elect is False
    (profile,) = cfg.profiles
    assert profile.scheduler_name == "my-scheduler"
    assert profile.plugins.filter.enabled_names() == ("CheckPodCountLimit", "CheckPodLimitResources")
    assert profile.plugins.post_filter.disabled_names() == frozenset({"DefaultPreemption"})
    assert profile.plugins.multi_point.enabled == UPSTREAM_DEFAULT_PLUGINS
    assert profile.plugin_config["CheckPodCountLimit"] == {"podCountLimit": 2}
    assert profile.plugin_config["CheckPodLimitResources"] == {"limitRatio": {"cpu": 0.7, "memory": 0.7}}
    assert profile.plugin_config["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100,
    }


def test_json_file_loads(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 4,
        "percentageOfNodesToScore": 30,
        "podInitialBackoffSeconds": 2,
        "podMaxBackoffSeconds": 20,
        "delayCacheUntilActive": True,
        "clientConnection": {
            "kubeconfig": "/etc/kubeconfig",
            "qps": 12.5,
            "burst": 25,
            "contentType": "application/json",
        },
        "leaderElection": {
            "leaseDuration": "1m30s",
            "renewDeadline": "45s",
            "retryPeriod": "500ms",
            "resourceNamespace": "ops",
        },
        "profiles": [
            {"schedulerName": "a", "percentageOfNodesToScore": 0},
            {
                "schedulerName": "b",
                "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}}],
            },
        ],
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    cfg = load_config(path)
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    assert cfg.delay_cache_until_active is True
    assert cfg.client_connection == ClientConnection("/etc/kubeconfig", "", "application/json", 12.5, 25)
    assert cfg.leader_election == LeaderElection(True, 90.0, 45.0, 0.5, "leases", "kube-scheduler", "ops")
    assert [p.scheduler_name for p in cfg.profiles] == ["a", "b"]
    assert cfg.profiles[0].percentage_of_nodes_to_score == 0
    assert cfg.profile("b") is cfg.profiles[1]
    assert cfg.profile("c") is None
    assert cfg.profiles[1].plugin_config["InterPodAffinity"]["hardPodAffinityWeight"] == 5


def test_yaml_parses_json_too(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text(
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "parallelism": 2}'
    )
    assert load_config(path).parallelism == 2


UNREADABLE: list[tuple[str, str | None, str, str]] = [
    ("a file that does not exist", None, "missing.yaml", "{path}: no such file"),
    (
        "malformed YAML",
        "profiles: [a\nkind: x\n",
        "bad.yaml",
        "{path}: invalid YAML: while parsing a flow sequence, expected ',' or ']', but got ':' (line 2, column 5)",
    ),
    (
        "a tab where YAML wants spaces",
        "profiles:\n\t- a\n",
        "tab.yaml",
        "{path}: invalid YAML: while scanning for the next token, "
        "found character '\\t' that cannot start any token (line 2, column 1)",
    ),
    (
        "two YAML documents",
        HEADER + "---\n" + HEADER,
        "two.yaml",
        "{path}: invalid YAML: expected a single document in the stream, but found another document (line 3, column 1)",
    ),
    ("malformed JSON", '{"apiVersion": ', "bad.json", "{path}: invalid JSON: Expecting value (line 1, column 16)"),
    ("a list instead of an object", "- a\n- b\n", "list.yaml", "{path}: the configuration must be an object, not list"),
    (
        "a scalar instead of an object",
        "just text\n",
        "text.yaml",
        "{path}: the configuration must be an object, not str",
    ),
]


@pytest.mark.parametrize(("text", "name", "message"), [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_unreadable_files_give_one_line(tmp_path: Path, text: str | None, name: str, message: str) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [message.format(path=path)]
    assert "\n" not in str(info.value)


def test_a_directory_is_not_a_configuration(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert info.value.errors == [f"{tmp_path}: cannot read: Is a directory"]


def test_invalid_file_reports_field_errors(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + "parallelism: 0\nprofiles:\n- schedulerName: a\n  foo: 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == ['strict decoding error: unknown field "profiles[0].foo"']


def test_parse_config_refuses_a_non_object() -> None:
    with pytest.raises(ConfigError, match=r"^the configuration must be an object, not list$"):
        parse_config([])  # type: ignore[arg-type]


def test_configuration_is_immutable() -> None:
    cfg = default_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.parallelism = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.profiles[0].plugins.multi_point = PluginSet()  # type: ignore[misc]
    assert hash(cfg.profiles[0]) == hash(default_config().profiles[0])


DURATIONS: list[tuple[str, int, str]] = [
    ("15s", 15_000_000_000, "15s"),
    ("1m30s", 90_000_000_000, "1m30s"),
    ("90s", 90_000_000_000, "1m30s"),
    ("1h", 3_600_000_000_000, "1h0m0s"),
    ("2h45m", 9_900_000_000_000, "2h45m0s"),
    ("1.5s", 1_500_000_000, "1.5s"),
    (".5m", 30_000_000_000, "30s"),
    ("300ms", 300_000_000, "300ms"),
    ("1500us", 1_500_000, "1.5ms"),
    ("1500\u00b5s", 1_500_000, "1.5ms"),
    ("1500ns", 1_500, "1.5\u00b5s"),
    ("7ns", 7, "7ns"),
    ("0", 0, "0s"),
    ("-1s", -1_000_000_000, "-1s"),
    ("+10m", 600_000_000_000, "10m0s"),
    ("1h1m1.001s", 3_661_001_000_000, "1h1m1.001s"),
]


@pytest.mark.parametrize(("text", "ns", "printed"), DURATIONS, ids=[d[0] for d in DURATIONS])
def test_go_durations(text: str, ns: int, printed: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == printed


BAD_DURATIONS: list[tuple[str, str]] = [
    ("", 'time: invalid duration ""'),
    ("15", 'time: missing unit in duration "15"'),
    ("10x", 'time: unknown unit "x" in duration "10x"'),
    ("s", 'time: invalid duration "s"'),
    ("1..5s", 'time: missing unit in duration "1..5s"'),
    ("9999999999h", 'time: invalid duration "9999999999h"'),
]


@pytest.mark.parametrize(("text", "message"), BAD_DURATIONS, ids=[repr(t) for t, _ in BAD_DURATIONS])
def test_bad_go_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace(".", r"\.") + "$"):
        parse_duration(text)
