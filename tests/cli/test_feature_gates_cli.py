"""``--feature-gates`` on ``kubeplane explain`` (and ``--what-if``), ``kubeplane scheduler`` and ``kubeplane up``.

Pins kube-scheduler's flag (component-base ``featuregate.featureGate.Set``, reported by pflag as ``invalid argument
"V" for "--feature-gates" flag: ...``): bad gates are one-line errors before anything starts; good ones change the
default plugins as upstream's ``applyFeatureGates`` (GangScheduling with GenericWorkload and GangScheduling on).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli import up
from kubeplane.cli.main import app

runner = CliRunner()
GATES = "GenericWorkload=true,GangScheduling=true"


def _gang_files(tmp_path: Path) -> tuple[Path, Path]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"capacity": alloc, "allocatable": alloc},
    }
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p0", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            "schedulingGroup": {"podGroupName": "g"},
        },
    }
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, group]}))
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(pod))
    return cluster, pod_file


def _explain(tmp_path: Path, *extra: str) -> Any:
    cluster, pod = _gang_files(tmp_path)
    return runner.invoke(app, ["explain", "--cluster", str(cluster), "--pod", str(pod), "-o", "json", *extra])


def test_explain_gang_runs_gang_scheduling_only_with_the_gates(tmp_path: Path) -> None:
    on = _explain(tmp_path, "--feature-gates", GATES)
    assert on.exit_code == 0, on.output
    assert json.loads(on.output)["gang"]["enforced"] is True
    off = _explain(tmp_path)
    assert off.exit_code == 0, off.output
    assert json.loads(off.output)["gang"]["enforced"] is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Foo=true", "unrecognized feature gate: Foo"),
        (
            "GangScheduling=maybe",
            'invalid value of GangScheduling=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
        (
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
        ),
    ],
)
def test_explain_bad_gates_are_one_line(tmp_path: Path, value: str, message: str) -> None:
    for extra in ((), ("--what-if",)):
        result = _explain(tmp_path, "--feature-gates", value, *extra)
        assert result.exit_code == 1
        assert result.output.strip() == f'error: invalid argument "{value}" for "--feature-gates" flag: {message}'


def test_scheduler_bad_gate_fails_before_connecting(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scheduler", "--kubeconfig", str(tmp_path / "none"), "--feature-gates=Foo=true"])
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == 'error: invalid argument "Foo=true" for "--feature-gates" flag: unrecognized feature gate: Foo'
    )


def test_up_bad_gate_fails_before_claiming_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "d"
    result = runner.invoke(app, ["up", "--data-dir", str(data), "--feature-gates", "Foo=true"])
    assert result.exit_code == 1
    assert "unrecognized feature gate: Foo" in result.output
    assert not data.exists()


def test_up_passes_the_gates_to_the_in_process_scheduler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_one_process(opts: up.UpOptions, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(up, "_run_one_process", fake_one_process)
    data = tmp_path / "d"
    result = runner.invoke(app, ["up", "--data-dir", str(data), "--store", "memory", "--feature-gates", GATES])
    assert result.exit_code == 0, result.output
    assert "GangScheduling" in seen["sched_config"].profiles[0].plugins.multi_point.enabled_names()
