"""The seed 002 configuration (out-of-tree Filter plugins) through ``kubeplane explain`` on files.

Verbatim it names four custom plugins, all kubeplane's example plugins (entry points of the example
distribution, installed by ``make venv``): it loads, DefaultPreemption is off, and CheckPodCountLimit
(podCountLimit 2) keeps a third pod off a node that runs two; pods without claims pass the two storage plugins
(CheckCSIStorageCapacity, LvmVolumeCapacity; their own cases are in tests/examples/test_seed002_storage.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.scheduler.config import load_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.profile import build_profiles

runner = CliRunner()

SEED_002 = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
    preFilter:
      enabled:
      - name: CheckCSIStorageCapacity
    filter:
      enabled:
      - name: CheckPodCountLimit
      - name: CheckPodLimitResources
      - name: CheckCSIStorageCapacity
      - name: LvmVolumeCapacity
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
"""``/work/shared/seeds/002_*.txt`` line 29, un-flattened."""


def _node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def _pod(name: str, node: str | None = None, *, cpu_limit: str = "500m", phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": cpu_limit, "memory": "1Gi"}}}]
    }
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def _explain(tmp_path: Path, items: list[dict[str, Any]], config: str) -> tuple[int, str]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("third")))
    (tmp_path / "sched.yaml").write_text(config)
    args = ["explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    result = runner.invoke(app, [*args, "--config", str(tmp_path / "sched.yaml"), "-o", "json"])
    return result.exit_code, result.output


def test_seed_002_verbatim_loads_without_default_preemption(tmp_path: Path) -> None:
    (tmp_path / "sched.yaml").write_text(SEED_002)
    fwk = build_profiles(load_config(tmp_path / "sched.yaml"), Handle())["default-scheduler"]
    # DefaultPreemption disabled; DynamicResources' PostFilter stays (v1.37's default profile)
    assert [p.name() for p in fwk.post_filter_plugins] == ["DynamicResources"]
    filters = [p.name() for p in fwk.filter_plugins]
    assert filters[-4:] == [
        "CheckPodCountLimit",
        "CheckPodLimitResources",
        "CheckCSIStorageCapacity",
        "LvmVolumeCapacity",
    ]
    assert "CheckCSIStorageCapacity" in [p.name() for p in fwk.pre_filter_plugins]
    assert getattr(fwk.plugins["CheckPodCountLimit"], "limit", None) == 2


def test_seed_002_pod_count_limit_sends_the_third_pod_elsewhere(tmp_path: Path) -> None:
    items = [
        _node("full"),
        _node("free"),
        _pod("one", "full"),
        _pod("two", "full"),
        _pod("done", "free", phase="Succeeded"),
    ]
    code, output = _explain(tmp_path, items, SEED_002)
    assert code == 0, output
    result = json.loads(output)
    assert result["selected"] == "free"
    assert result["nodes"]["full"]["filters"]["CheckPodCountLimit"] == {
        "code": "Unschedulable",
        "reasons": ["node(s) already run 2 pods (podCountLimit)"],
    }


def test_seed_002_third_pod_stays_unschedulable_with_the_plugin_reason(tmp_path: Path) -> None:
    items = [_node("a"), _node("b"), _pod("a1", "a"), _pod("a2", "a"), _pod("b1", "b", cpu_limit="2500m")]
    code, output = _explain(tmp_path, items, SEED_002)
    assert code == 0, output
    result = json.loads(output)
    assert result["selected"] is None
    assert result["message"] == (
        "0/2 nodes are available: 1 node(s) already run 2 pods (podCountLimit), "
        "1 node(s) would exceed 0.7 of allocatable cpu in pod limits. no new claims to deallocate."
    )  # DynamicResources' PostFilter reason, as upstream joins every PostFilter plugin's
