"""``kubeplane explain --what-if`` (:mod:`kubeplane.scheduler.whatif`): each kind of change on small clusters built
from plain objects, the sort order, the verification (a change is reported only when re-running the filters on
the modified copy confirms it), a pod that already fits, the JSON shape, and the CLI on files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.scheduler.explain import explain
from kubeplane.scheduler.whatif import KINDS, changes_json, what_if

runner = CliRunner()


def _node(
    name: str,
    cpu: str = "2",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    pods: str = "110",
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    allocatable = {"cpu": cpu, "memory": "4Gi", "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _pod(
    name: str,
    cpu: str = "100m",
    *,
    node: str | None = None,
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}
    s.update(spec)
    if node:
        s["nodeName"] = node
    if priority is not None:
        s["priority"] = priority
    meta = {"name": name, "namespace": "default", "labels": labels or {"app": name}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s, "status": {"phase": "Running"}}


def _fit(pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[str]:
    """Independent check through explain itself: the nodes whose Filter verdicts are all Success/Skip."""
    result = explain(pod, nodes=nodes, pods=pods)
    return sorted(
        name
        for name, entry in result["nodes"].items()
        if entry["filters"] and all(s["code"] in ("Success", "Skip") for s in entry["filters"].values())
    )


def _kinds(result: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in result["changes"]]


# --- free-resources ------------------------------------------------------------------------------------------


def test_free_resources_names_the_fewest_lowest_priority_victims_and_verifies() -> None:
    nodes = [_node("a", "2")]
    pods = [
        _pod("low-small", "300m", node="a", priority=0),
        _pod("low-big", "900m", node="a", priority=0),
        _pod("mid", "600m", node="a", priority=5),
        _pod("high", "100m", node="a", priority=100),
    ]  # 1900m of 2 in use
    pod = _pod("new", "1", priority=10)
    result = what_if(pod, nodes=nodes, pods=pods)
    assert result["fits"] == []
    free = [c for c in result["changes"] if c["kind"] == "free-resources"]
    assert len(free) == 1
    change = free[0]
    # 900m missing; low-big alone (priority 0) covers it: fewest and lowest priority, high is never touched.
    assert change["details"] == {
        "node": "a",
        "free": {"cpu": "900m"},
        "victims": ["default/low-big"],
        "preemptible": True,
    }
    assert change["verified"] is True
    assert change["nodes_that_fit"] == ["a"]
    assert change["change"] == "free 900m cpu on a by evicting default/low-big"
    # Independently: without that pod the pod fits on a; without it nothing changes.
    assert _fit(pod, nodes, [p for p in pods if p["metadata"]["name"] != "low-big"]) == ["a"]
    assert _fit(pod, nodes, pods) == []


def test_free_resources_reprieves_victims_that_are_not_needed() -> None:
    nodes = [_node("a", "2")]
    pods = [_pod("p1", "400m", node="a", priority=0), _pod("p2", "1500m", node="a", priority=1)]
    # 1900m used; need 700m more: greedy takes p1 (lowest) then p2, reprieve drops p1 (p2 alone suffices).
    result = what_if(_pod("new", "800m", priority=10), nodes=nodes, pods=pods)
    (change,) = [c for c in result["changes"] if c["kind"] == "free-resources"]
    assert change["details"]["victims"] == ["default/p2"]
    assert change["details"]["free"] == {"cpu": "700m"}


def test_free_resources_falls_back_to_non_preemptible_pods_and_says_so() -> None:
    nodes = [_node("a", "2")]
    pods = [_pod("important", "1500m", node="a", priority=1000)]
    result = what_if(_pod("new", "1", priority=0), nodes=nodes, pods=pods)
    (change,) = [c for c in result["changes"] if c["kind"] == "free-resources"]
    assert change["details"]["victims"] == ["default/important"]
    assert change["details"]["preemptible"] is False


def test_free_resources_memory_and_pod_slots() -> None:
    nodes = [_node("a", "4", pods="2")]
    big = _pod("mem", node="a", priority=0)
    big["spec"]["containers"][0]["resources"]["requests"]["memory"] = "3Gi"
    pods = [big, _pod("other", node="a", priority=0)]
    pod = _pod("new", priority=5)
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2Gi"
    (change,) = [c for c in what_if(pod, nodes=nodes, pods=pods)["changes"] if c["kind"] == "free-resources"]
    assert change["details"]["free"] == {"pods": "1", "memory": "1Gi"}
    assert change["details"]["victims"] == ["default/mem"]  # frees a slot and the memory: one pod


def test_a_node_smaller_than_the_request_is_never_a_candidate() -> None:
    result = what_if(_pod("new", "3"), nodes=[_node("a", "2")], pods=[])
    assert result["changes"] == []


# --- tolerate-taint ------------------------------------------------------------------------------------------


def test_tolerate_taint_adds_the_exact_toleration() -> None:
    nodes = [
        _node("gpu1", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
        _node("gpu2", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
        _node("ded", taints=[{"key": "dedicated", "effect": "NoExecute"}]),
        _node("two", taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]),
    ]
    result = what_if(_pod("new"), nodes=nodes, pods=[])
    tolerate = [c for c in result["changes"] if c["kind"] == "tolerate-taint"]
    assert [c["details"]["toleration"] for c in tolerate] == [
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},  # two nodes: first
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert tolerate[0]["nodes_that_fit"] == ["gpu1", "gpu2"]
    assert tolerate[0]["nodes"] == ["gpu1", "gpu2"]
    assert tolerate[1]["nodes_that_fit"] == ["ded"]
    # "two" needs two tolerations: not a single change.
    assert all("two" not in c["nodes_that_fit"] for c in result["changes"] if c["kind"] != "add-node")
    tolerated = _pod("new", tolerations=[tolerate[1]["details"]["toleration"]])
    assert _fit(tolerated, nodes, []) == ["ded"]


def test_tolerate_the_cordon_of_an_unschedulable_node() -> None:
    result = what_if(_pod("new"), nodes=[_node("a", unschedulable=True)], pods=[])
    kinds = _kinds(result)
    assert kinds[0] == "tolerate-taint"
    assert result["changes"][0]["details"]["toleration"] == {
        "key": "node.kubernetes.io/unschedulable",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    # A copy of a cordoned node is not cordoned.
    (add,) = [c for c in result["changes"] if c["kind"] == "add-node"]
    assert "unschedulable" not in add["details"]["node"]["spec"]
    assert add["nodes_that_fit"] == ["a-copy"]


# --- relax-constraint ----------------------------------------------------------------------------------------


def test_relax_pod_anti_affinity_term() -> None:
    nodes = [_node("a", labels={"zone": "z1"}), _node("b", labels={"zone": "z1"})]
    pods = [_pod("db", node="a", labels={"app": "db"}), _pod("cache", node="b", labels={"app": "cache"})]
    anti = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"},
            {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"},
        ]
    }
    pod = _pod("new", affinity={"podAntiAffinity": anti})
    result = what_if(pod, nodes=nodes, pods=pods)
    relax = [c for c in result["changes"] if c["kind"] == "relax-constraint"]
    assert [(c["details"]["field"], c["nodes_that_fit"]) for c in relax] == [
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]", ["a"]),
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1]", ["b"]),
    ]
    assert relax[0]["change"].startswith("drop podAntiAffinity term 0 (topologyKey kubernetes.io/hostname, app=db)")


def test_relax_pod_affinity_term_and_topology_spread() -> None:
    nodes = [_node("a", labels={"zone": "z1"}), _node("b", labels={"zone": "z2"})]
    pods = [_pod(f"w{i}", node="a", labels={"app": "web"}) for i in range(3)]
    spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    spread["labelSelector"] = {"matchLabels": {"app": "web"}}
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
            ]
        }
    }
    # Affinity wants zone z1 (where web runs); spread forbids z1 (skew would be 4-0): fits nowhere.
    pod = _pod("new", labels={"app": "web"}, affinity=affinity, topologySpreadConstraints=[spread])
    result = what_if(pod, nodes=nodes, pods=pods)
    assert result["fits"] == []
    relax = {c["details"]["field"]: c["nodes_that_fit"] for c in result["changes"] if c["kind"] == "relax-constraint"}
    assert relax == {
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]": ["b"],
        "spec.topologySpreadConstraints[0]": ["a"],
    }


def test_relax_node_affinity_requirement_and_node_selector() -> None:
    nodes = [_node("a", labels={"disk": "ssd", "zone": "z1"}), _node("b", labels={"disk": "hdd", "zone": "z2"})]
    required = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "disk", "operator": "In", "values": ["ssd"]},
                    {"key": "zone", "operator": "In", "values": ["z2"]},
                ]
            }
        ]
    }
    pod = _pod("new", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
    result = what_if(pod, nodes=nodes, pods=[])
    relax = [(c["change"], c["nodes_that_fit"]) for c in result["changes"] if c["kind"] == "relax-constraint"]
    assert relax == [
        ("drop requirement disk In ssd from node affinity term 0", ["b"]),
        ("drop requirement zone In z2 from node affinity term 0", ["a"]),
    ]
    selector_pod = _pod("new", nodeSelector={"disk": "nvme"})
    changes = what_if(selector_pod, nodes=nodes, pods=[])["changes"]
    dropped = [(c["change"], c["nodes_that_fit"]) for c in changes if c["kind"] == "relax-constraint"]
    assert dropped == [("drop nodeSelector disk=nvme", ["a", "b"])]


def test_dropping_one_of_several_ored_terms_is_never_proposed() -> None:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["x"]}]},
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["y"]}]},
        ]
    }
    pod = _pod("new", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
    result = what_if(pod, nodes=[_node("a", labels={"disk": "ssd"})], pods=[])
    assert "relax-constraint" not in _kinds(result)
    (label,) = [c for c in result["changes"] if c["kind"] == "add-node-label"]
    assert label["details"]["label"] == {"disk": "x"}
    assert label["details"]["previous"] == "ssd"


# --- add-node-label ------------------------------------------------------------------------------------------


def test_add_node_label_for_node_selector_mismatch() -> None:
    nodes = [_node("a"), _node("b", "1"), _node("c", taints=[{"key": "k", "effect": "NoSchedule"}])]
    pod = _pod("new", "1500m", nodeSelector={"disk": "ssd"})
    result = what_if(pod, nodes=nodes, pods=[])
    labels = [c for c in result["changes"] if c["kind"] == "add-node-label"]
    # b is too small and c is tainted: only a, labelled, would fit.
    assert [(c["nodes"], c["details"]["label"], c["nodes_that_fit"]) for c in labels] == [
        (["a"], {"disk": "ssd"}, ["a"])
    ]
    assert labels[0]["change"] == "label node a disk=ssd"
    relabelled = [_node("a", labels={"disk": "ssd"}), *nodes[1:]]
    assert _fit(pod, relabelled, []) == ["a"]


def test_add_node_label_for_gt_requirement() -> None:
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]}]}
    pod = _pod("new", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
    result = what_if(pod, nodes=[_node("a", labels={"gen": "2"})], pods=[])
    (label,) = [c for c in result["changes"] if c["kind"] == "add-node-label"]
    assert label["details"]["label"] == {"gen": "4"}


# --- add-node ------------------------------------------------------------------------------------------------


def test_add_node_like_an_existing_one() -> None:
    nodes = [_node("a", labels={"zone": "z1"}), _node("b", labels={"zone": "z1"})]
    pods = [_pod("a1", "1900m", node="a", priority=100), _pod("b1", "1900m", node="b", priority=100)]
    result = what_if(_pod("new", "1", priority=0), nodes=nodes, pods=pods)
    adds = [c for c in result["changes"] if c["kind"] == "add-node"]
    assert len(adds) == 1  # a and b have the same shape
    (add,) = adds
    new = add["details"]["node"]
    assert add["details"]["like"] == "a"
    assert new["metadata"]["name"] == "a-copy"
    assert new["metadata"]["labels"] == {"kubernetes.io/hostname": "a-copy", "zone": "z1"}
    assert add["nodes_that_fit"] == ["a-copy"]
    assert _fit(_pod("new", "1"), [*nodes, new], pods) == ["a-copy"]


def test_add_node_is_not_proposed_when_the_copy_would_not_fit() -> None:
    nodes = [
        _node("a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "j", "effect": "NoSchedule"}])
    ]
    result = what_if(_pod("new"), nodes=nodes, pods=[])
    assert result["changes"] == []


# --- order, verification, shape ------------------------------------------------------------------------------


def test_changes_are_sorted_by_kind_then_size_and_all_verified() -> None:
    ssd = {"disk": "ssd"}
    nodes = [
        _node("a", "2", labels=ssd),
        _node("b", "2", labels=ssd),
        _node("t", "4", labels=ssd, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        _node("s", "4", labels={"disk": "hdd"}),
    ]
    pods = [
        _pod("a1", "500m", node="a", priority=0),
        _pod("a2", "500m", node="a", priority=0),
        _pod("a3", "600m", node="a", priority=0),
        _pod("b1", "1500m", node="b", priority=0),
    ]
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}
    pod = _pod(
        "new",
        "1500m",
        priority=10,
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    )
    result = what_if(pod, nodes=nodes, pods=pods)
    kinds = _kinds(result)
    assert kinds == sorted(kinds, key=KINDS.index)
    assert kinds == [
        "free-resources",
        "free-resources",
        "tolerate-taint",
        "relax-constraint",
        "add-node-label",
        "add-node",
    ]
    assert all(c["verified"] is True for c in result["changes"])
    assert all(c["nodes_that_fit"] for c in result["changes"])
    # Within free-resources: b needs one victim, a two; b first.
    free = [c for c in result["changes"] if c["kind"] == "free-resources"]
    assert [c["nodes"] for c in free] == [["b"], ["a"]]
    assert len(free[1]["details"]["victims"]) == 2
    by_kind = {c["kind"]: c for c in result["changes"]}
    assert by_kind["tolerate-taint"]["nodes_that_fit"] == ["t"]
    assert by_kind["relax-constraint"]["nodes_that_fit"] == ["s"]
    assert by_kind["add-node-label"]["change"] == "label node s disk=ssd (now disk=hdd)"
    assert by_kind["add-node"]["details"]["like"] == "a"


def test_pod_that_already_fits_says_so() -> None:
    result = what_if(_pod("new"), nodes=[_node("a")], pods=[])
    assert result["fits"] == ["a"]
    assert result["changes"] == []
    assert result["verifications"] == 0
    (entry,) = changes_json(result)
    assert entry["kind"] == "none"
    assert entry["nodes_that_fit"] == ["a"]
    assert entry["verified"] is True


def test_no_nodes_means_no_changes() -> None:
    result = what_if(_pod("new"), nodes=[], pods=[])
    assert result == {"pod": "default/new", "fits": [], "changes": [], "verifications": 0}


def test_json_shape() -> None:
    result = what_if(_pod("new", "3"), nodes=[_node("a", "4")], pods=[_pod("x", "2", node="a", priority=-1)])
    out = changes_json(result)
    assert out
    assert all(set(c) == {"change", "kind", "nodes", "details", "verified", "nodes_that_fit"} for c in out)
    json.dumps(out)  # plain JSON


def test_a_verification_failure_drops_the_candidate() -> None:
    # Freeing cpu on a would not help: the existing pod's anti-affinity keeps new off a, which removing "other"
    # (the only lower-priority pod, not the anti-affinity holder) does not change.
    nodes = [_node("a", "2")]
    anti = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "new"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
    pods = [
        _pod("guard", "100m", node="a", priority=100, affinity={"podAntiAffinity": anti}),
        _pod("other", "1800m", node="a", priority=0),
    ]
    result = what_if(_pod("new", "500m", priority=10), nodes=nodes, pods=pods)
    assert "free-resources" not in _kinds(result)
    assert result["verifications"] >= 1


def test_bounded_and_fast_on_a_100_node_cluster() -> None:
    gpu = [{"key": "gpu", "effect": "NoSchedule"}]
    nodes = [
        _node(f"n{i:03}", "4", labels={"topology.kubernetes.io/zone": f"z{i % 3}"}, taints=gpu if i < 10 else None)
        for i in range(100)
    ]
    pods = [_pod(f"p{i}", "350m", node=f"n{10 + i % 90:03}", priority=i % 3) for i in range(1000)]
    pod = _pod("new", "1", priority=5)
    start = time.perf_counter()
    result = what_if(pod, nodes=nodes, pods=pods)
    elapsed = time.perf_counter() - start
    assert elapsed < 5
    # At most 5 per kind: 90 nodes short of cpu, 3 node shapes (one per zone) among them.
    assert _kinds(result) == ["free-resources"] * 5 + ["tolerate-taint"] + ["add-node"] * 3
    assert result["verifications"] == 9
    (tolerate,) = [c for c in result["changes"] if c["kind"] == "tolerate-taint"]
    assert tolerate["nodes_that_fit"] == [f"n{i:03}" for i in range(10)]


# --- CLI -----------------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Path:
    nodes = [_node("a", "2"), _node("b", "2", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])]
    pods = [_pod("x", "1500m", node="a", priority=0)]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([*nodes, *pods]))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("new", "1", priority=10)))
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(_pod("small", "100m")))
    return tmp_path


def test_cli_what_if_json(files: Path) -> None:
    args = ["explain", "--pod", str(files / "pod.yaml"), "--cluster", str(files / "cluster.yaml"), "--what-if"]
    result = runner.invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert [c["kind"] for c in out] == ["free-resources", "tolerate-taint", "add-node"]
    assert out[0]["change"] == "free 500m cpu on a by evicting default/x"
    assert out[1]["details"]["toleration"] == {
        "key": "gpu",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }
    assert out[2]["nodes_that_fit"] == ["a-copy"]
    assert all(c["verified"] is True for c in out)


def test_cli_what_if_table(files: Path) -> None:
    args = ["explain", "--pod", str(files / "pod.yaml"), "--cluster", str(files / "cluster.yaml"), "--what-if"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "fits nowhere; 3 single change(s) would let it fit" in result.output
    assert "free 500m cpu on a by evicting default/x" in result.output
    assert "tolerate taint gpu=true:NoSchedule" in result.output


def test_cli_what_if_pod_that_fits(files: Path) -> None:
    args = ["explain", "--pod", str(files / "small.yaml"), "--cluster", str(files / "cluster.yaml"), "--what-if"]
    table = runner.invoke(app, args)
    assert table.exit_code == 0
    assert "already fits on 1 node(s)" in table.output
    out = json.loads(runner.invoke(app, [*args, "-o", "json"]).output)
    assert [c["kind"] for c in out] == ["none"]
    assert out[0]["nodes_that_fit"] == ["a"]


def test_cli_without_what_if_is_plain_explain(files: Path) -> None:
    args = ["explain", "--pod", str(files / "pod.yaml"), "--cluster", str(files / "cluster.yaml"), "-o", "json"]
    out = json.loads(runner.invoke(app, args).output)
    assert set(out) >= {"pod", "selected", "nodes", "message"}


def test_derived_snapshots_and_the_memo_give_the_answers_of_building_each_copy_from_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Verifications reuse the original snapshot (a modified pod), derive it (relabelled or untainted nodes:
    Snapshot.with_nodes) and share PodInfos (PodInfoMemo) instead of building every copy from objects; the
    answers must be exactly those of building each copy from scratch."""
    from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
    from kubeplane.scheduler.backend.snapshot import Snapshot
    from kubeplane.scheduler.explain import prepare

    ssd = {"disk": "ssd"}
    nodes = [
        _node("a", "2", labels=ssd),
        _node("b", "2", labels=ssd),
        _node("t", "4", labels=ssd, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        _node("s", "4", labels={"disk": "hdd"}),
        _node("u", "4", labels=ssd, unschedulable=True),
    ]
    pods = [_pod(f"a{i}", "500m", node="a", priority=0) for i in range(3)] + [_pod("b1", "1500m", node="b")]
    for i, p in enumerate(pods):
        p["metadata"].update(uid=f"uid-{i}", resourceVersion=str(i + 1))
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}
    pod = _pod(
        "new",
        "1500m",
        priority=10,
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    )
    derived = what_if(pod, nodes=nodes, pods=pods, memo=PodInfoMemo())
    monkeypatch.setattr(Snapshot, "with_nodes", lambda self, nodes: None)
    import kubeplane.scheduler.whatif as whatif_module

    rebuilt_every_time = whatif_module._WhatIf.verify

    def from_objects_only(self: Any, **kwargs: Any) -> list[str]:
        self.setup = prepare(
            self.pod, nodes=self.nodes, pods=self.placed, objects=self.objects, config=self.config
        )  # a fresh original each time: nothing shared
        return rebuilt_every_time(self, **kwargs)

    monkeypatch.setattr(whatif_module._WhatIf, "verify", from_objects_only)
    assert derived == what_if(pod, nodes=nodes, pods=pods)
    assert {c["kind"] for c in derived["changes"]} >= {"free-resources", "tolerate-taint", "add-node-label"}
