"""to_v1: the configuration as the v1 document it means; parse_config of it is the same configuration (upstream's
defaulted config round-trips through its v1 encoder, as /configz shows it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeplane.scheduler.config import default_config, load_config, parse_config
from kubeplane.scheduler.config.encoding import to_v1

ROOT = Path(__file__).parents[3]
FILES = [
    ROOT / "examples/seeds/custom-scheduler-config.yaml",
    ROOT / "examples/seeds/scheduler-config-002.yaml",
]
MULTI = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 40
leaderElection: {leaderElect: false, leaseDuration: 1m30s}
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  percentageOfNodesToScore: 100
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def test_the_default_configuration_round_trips() -> None:
    config = default_config()
    assert parse_config(to_v1(config)) == config


def test_a_multi_profile_configuration_round_trips_with_its_args_and_durations() -> None:
    config = parse_config(yaml.safe_load(MULTI))
    doc = to_v1(config)
    assert parse_config(doc) == config
    assert doc["leaderElection"]["leaseDuration"] == "1m30s"
    packer = doc["profiles"][1]
    assert packer["percentageOfNodesToScore"] == 100
    assert packer["plugins"]["score"] == {
        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
        "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
    }
    fit = next(c for c in packer["pluginConfig"] if c["name"] == "NodeResourcesFit")
    assert fit["args"]["kind"] == "NodeResourcesFitArgs"
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_repositorys_configurations_round_trip(path: Path) -> None:
    config = load_config(path)
    assert parse_config(yaml.safe_load(yaml.safe_dump(to_v1(config)))) == config
