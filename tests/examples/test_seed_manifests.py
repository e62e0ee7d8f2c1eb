"""The seeds' example manifests (``examples/seeds/``): every object is one the API server accepts, the scheduler
configurations load and build, and the placements ``examples/seeds/README.md`` promises are the scheduler's.

Acceptance goes through the API server in process (``LocalClient.in_memory()``, its registry's ``create`` with
``dry_run=True``): validation, defaulting and admission run exactly as for ``kubectl apply --dry-run=server``,
and nothing is stored. Placements go through :func:`kubeplane.scheduler.explain.explain` on the cluster
``kubeplane up`` makes (master tainted control-plane:NoSchedule, node01, node02; 4 CPU, 8Gi, 110 pods each), with
the node labels and taints each README scenario sets first.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane.apiserver.errors import APIError
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import KubeSchedulerConfiguration, load_config
from kubeplane.scheduler.explain import explain
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.profile import build_profiles

SEEDS = Path(__file__).resolve().parents[2] / "examples" / "seeds"
CONFIG_KIND = "KubeSchedulerConfiguration"
RESOURCES = {"Pod": "pods", "Deployment": "deployments", "ReplicaSet": "replicasets"}
PASSING = ("Success", "Skip")


def _files() -> list[Path]:
    return sorted(SEEDS.glob("*.yaml"))


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _files():
        for doc in _documents(path):
            if doc.get("kind") != CONFIG_KIND:
                yield path.name, doc


def _load(name: str) -> dict[str, Any]:
    (doc,) = _documents(SEEDS / name)
    return doc


def _config(name: str) -> KubeSchedulerConfiguration:
    return load_config(SEEDS / name)


def test_the_seed_files_are_all_there() -> None:
    names = {p.name for p in _files()}
    expected = {
        "myapp.yaml",
        "myapp1.yaml",
        *(f"pod{i}.yaml" for i in range(1, 7)),
        "pod-node-affinity-combined.yaml",
        "pod3-toleration.yaml",
        "tolerate-all.yaml",
        "custom-scheduled-pod.yaml",
        "custom-scheduler-config.yaml",
        "scheduler-config-002.yaml",
        "myapp-deploy.yaml",
        "myapp-rs.yaml",
        "myapp-once.yaml",
    }
    assert names == expected
    assert (SEEDS / "README.md").is_file()
    readme = (SEEDS / "README.md").read_text()
    for name in expected:
        assert f"`{name}`" in readme, f"README.md does not describe {name}"


@pytest.mark.parametrize(("file", "obj"), list(_objects()), ids=lambda v: v if isinstance(v, str) else "")
async def test_the_api_server_accepts_every_object(file: str, obj: dict[str, Any]) -> None:
    kind = obj["kind"]
    assert kind in RESOURCES, f"{file}: unexpected kind {kind}"
    client = await LocalClient.in_memory()
    try:
        info = client.resource(RESOURCES[kind])
        namespace = obj["metadata"].get("namespace", "default")
        try:
            created = await client.registry.create(info, namespace, copy.deepcopy(obj), dry_run=True)
        except APIError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{file}: {exc.message}")
        assert created["metadata"]["name"] == obj["metadata"]["name"]
        assert created["metadata"]["uid"]
        listed = await client.list(info, namespace=namespace)
        assert listed["items"] == [], "dry run stored the object"
    finally:
        await client.close()


async def test_the_seeds_verbatim_values_typo_is_rejected() -> None:
    """pod1.yaml's fix matters: the seed's ``values::`` is a key "values:" and the API server refuses the pod."""
    pod = _load("pod1.yaml")
    expression = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"][0]
    expression["values:"] = expression.pop("values")
    client = await LocalClient.in_memory()
    try:
        with pytest.raises(APIError) as info:
            await client.registry.create(client.resource("pods"), "default", pod, dry_run=True)
        # kubectl's strict decoding stops at the unknown field "...values:"; in process, validation finds the
        # NotIn expression without values.
        assert info.value.code == 422
        assert "matchExpressions[0].values: Required value" in info.value.message
    finally:
        await client.close()


def test_scheduler_config_002_loads_and_builds() -> None:
    config = _config("scheduler-config-002.yaml")
    profiles = build_profiles(config, Handle())
    assert list(profiles) == ["default-scheduler"]
    fwk = profiles["default-scheduler"]
    # DefaultPreemption disabled; DynamicResources' PostFilter stays (v1.37's default profile)
    assert [p.name() for p in fwk.post_filter_plugins] == ["DynamicResources"]
    assert [p.name() for p in fwk.filter_plugins][-4:] == [
        "CheckPodCountLimit",
        "CheckPodLimitResources",
        "CheckCSIStorageCapacity",
        "LvmVolumeCapacity",
    ]
    assert getattr(fwk.plugins["CheckPodCountLimit"], "limit", None) == 2


def test_custom_scheduler_config_loads_and_builds() -> None:
    config = _config("custom-scheduler-config.yaml")
    assert list(build_profiles(config, Handle())) == ["custom-scheduler"]
    election = config.leader_election
    assert election.leader_elect
    assert (election.resource_namespace, election.resource_name) == ("kube-system", "custom-scheduler")


# --- placements the README promises -------------------------------------------------------------------------


def _node(name: str, labels: Mapping[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> Any:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


MASTER_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
CHECK_TAINT = {"key": "check", "value": "mycheck", "effect": "NoExecute"}


def _cluster(
    node01: Mapping[str, str] | None = None,
    node02: Mapping[str, str] | None = None,
    taint: list[dict[str, str]] | None = None,
) -> list[Any]:
    return [_node("master", taints=[MASTER_TAINT]), _node("node01", node01, taint), _node("node02", node02, taint)]


def _placed(name: str, node: str) -> dict[str, Any]:
    pod = _load(name)
    pod["metadata"]["namespace"] = "default"
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _template_pod(name: str) -> dict[str, Any]:
    template = _load(name)["spec"]["template"]
    return {"kind": "Pod", "metadata": {"name": f"{name[:-5]}-x", **template["metadata"]}, "spec": template["spec"]}


def _feasible(result: Mapping[str, Any]) -> set[str]:
    return {
        name
        for name, node in result["nodes"].items()
        if all(status["code"] in PASSING for status in node["filters"].values())
    }


def test_myapp1_needs_the_kgc_labels() -> None:
    pod = _template_pod("myapp1.yaml")
    assert explain(pod, nodes=_cluster())["selected"] is None
    assert _feasible(explain(pod, nodes=_cluster({"kgc": "a"}, {"kgc": "b"}))) == {"node01"}


@pytest.mark.parametrize("name", ["pod1.yaml", "pod-node-affinity-combined.yaml"])
def test_required_node_affinity_keeps_off_node02(name: str) -> None:
    result = explain(_load(name), nodes=_cluster({"kgc": "a"}, {"kgc": "a"}))
    assert _feasible(result) == {"node01"}
    assert result["selected"] == "node01"


def test_preferring_a_missing_node03_still_schedules() -> None:
    result = explain(_load("pod2.yaml"), nodes=_cluster())
    assert _feasible(result) == {"node01", "node02"}
    assert result["selected"] in {"node01", "node02"}


def test_pod_affinity_follows_myapp01_within_its_kgc_domain() -> None:
    pods = [_placed("pod3.yaml", "node01")]
    both_a = explain(_load("pod4.yaml"), nodes=_cluster({"kgc": "a"}, {"kgc": "a"}), pods=pods)
    assert _feasible(both_a) == {"node01", "node02"}
    split = explain(_load("pod4.yaml"), nodes=_cluster({"kgc": "a"}, {"kgc": "b"}), pods=pods)
    assert _feasible(split) == {"node01"}
    assert explain(_load("pod4.yaml"), nodes=_cluster({"kgc": "a"}, {"kgc": "a"}))["selected"] is None


def test_preferred_anti_affinity_avoids_myapp01s_node() -> None:
    result = explain(_load("pod5.yaml"), nodes=_cluster(), pods=[_placed("pod3.yaml", "node01")])
    assert _feasible(result) == {"node01", "node02"}
    assert result["selected"] == "node02"


def test_required_anti_affinity_pending_until_node02_relabelled() -> None:
    pods = [_placed("pod3.yaml", "node01")]
    pending = explain(_load("pod6.yaml"), nodes=_cluster({"kgc": "a"}, {"kgc": "a"}), pods=pods)
    assert pending["selected"] is None
    assert pending["nodes"]["node02"]["filters"]["InterPodAffinity"]["code"] == "Unschedulable"
    relabelled = explain(_load("pod6.yaml"), nodes=_cluster({"kgc": "a"}, {"kgc": "b"}), pods=pods)
    assert relabelled["selected"] == "node02"


def test_no_execute_taints_need_the_toleration() -> None:
    nodes = _cluster(taint=[CHECK_TAINT])
    assert explain(_load("pod3.yaml"), nodes=nodes)["selected"] is None
    assert _feasible(explain(_load("pod3-toleration.yaml"), nodes=nodes)) == {"node01", "node02"}


def test_tolerate_all_may_land_on_master() -> None:
    assert _feasible(explain(_load("tolerate-all.yaml"), nodes=_cluster())) == {"master", "node01", "node02"}


def test_scheduler_config_002_rejects_a_node_running_two_pods() -> None:
    pods = [_placed("pod3.yaml", "node01"), _placed("pod5.yaml", "node01")]
    result = explain(_load("pod2.yaml"), nodes=_cluster(), pods=pods, config=_config("scheduler-config-002.yaml"))
    assert result["nodes"]["node01"]["filters"]["CheckPodCountLimit"] == {
        "code": "Unschedulable",
        "reasons": ["node(s) already run 2 pods (podCountLimit)"],
    }
    assert result["selected"] == "node02"
