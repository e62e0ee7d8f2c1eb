"""``kubeplane.kubelet.admission`` against the kubelet's admit handlers.

Reasons and messages are pinned verbatim from upstream ``pkg/kubelet/lifecycle/predicate.go`` (and its
``predicate_test.go``), the scheduler plugin constants it reports (NodeAffinity, NodeName, NodePorts,
TaintToleration) and ``pkg/kubelet/eviction/eviction_manager.go`` ``Admit`` (``TestAdmitUnderNodeConditions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubeplane.kubelet.admission import AdmitResult, admit_pod, is_critical_pod, is_mirror_pod, is_static_pod

JSON = dict[str, Any]
Mi = 1024**2


def ctr(
    name: str = "c",
    *,
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    ports: Sequence[Mapping[str, Any]] | None = None,
    restart_policy: str | None = None,
) -> JSON:
    c: JSON = {"name": name, "image": "busybox"}
    resources: JSON = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        c["resources"] = resources
    if ports is not None:
        c["ports"] = [dict(p) for p in ports]
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    return c


def pod(
    name: str = "p",
    *containers: JSON,
    init: Sequence[JSON] = (),
    phase: str | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> JSON:
    meta: JSON = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    if labels is not None:
        meta["labels"] = dict(labels)
    p: JSON = {"metadata": meta, "spec": {"containers": list(containers) or [ctr()], **spec}}
    if init:
        p["spec"]["initContainers"] = list(init)
    if phase is not None:
        p["status"] = {"phase": phase}
    return p


def node(
    *,
    allocatable: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    name: str = "n1",
) -> JSON:
    alloc = {"cpu": "2", "memory": "4Gi", "pods": "110", "ephemeral-storage": "10Gi"}
    if allocatable is not None:
        alloc = dict(allocatable)
    n: JSON = {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": {}, "status": {"allocatable": alloc}}
    if taints:
        n["spec"]["taints"] = [dict(t) for t in taints]
    return n


def requesting(name: str, **requests: str) -> JSON:
    return pod(name, ctr(requests={k.replace("_", "-"): v for k, v in requests.items()}))


ADMITTED = AdmitResult(True)


# --- resources -------------------------------------------------------------------------------------------------


def test_fits_exactly() -> None:
    others = [requesting("a", cpu="1500m", memory="3Gi")]
    assert admit_pod(requesting("p", cpu="500m", memory="1Gi"), node(), others) == ADMITTED


def test_out_of_cpu_message_in_millicores() -> None:
    others = [requesting("a", cpu="500m")]
    result = admit_pod(requesting("p", cpu="1600m"), node(), others)
    assert result == AdmitResult(
        False, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1600, used: 500, capacity: 2000"
    )


def test_out_of_memory_message_in_bytes() -> None:
    others = [requesting("a", memory="3Gi")]
    result = admit_pod(requesting("p", memory="1025Mi"), node(), others)
    assert result == AdmitResult(
        False,
        "OutOfmemory",
        f"Node didn't have enough resource: memory, requested: {1025 * Mi}, used: {3 * 1024 * Mi}, "
        f"capacity: {4 * 1024 * Mi}",
    )


def test_out_of_ephemeral_storage() -> None:
    result = admit_pod(requesting("p", ephemeral_storage="11Gi"), node(), [])
    assert result.reason == "OutOfephemeral-storage"
    assert result.message == (
        f"Node didn't have enough resource: ephemeral-storage, requested: {11 * 1024 * Mi}, used: 0, "
        f"capacity: {10 * 1024 * Mi}"
    )


def test_out_of_pods_counts_admitted_pods_and_comes_first() -> None:
    n = node(allocatable={"cpu": "1", "memory": "1Gi", "pods": "2"})
    others = [requesting("a"), requesting("b")]
    result = admit_pod(requesting("p", cpu="2"), n, others)  # cpu does not fit either: pods is reported
    assert result == AdmitResult(
        False, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    )


def test_terminal_and_self_do_not_count() -> None:
    n = node(allocatable={"cpu": "1", "memory": "1Gi", "pods": "1"})
    done = [
        pod("s", ctr(requests={"cpu": "1"}), phase="Succeeded"),
        pod("f", ctr(requests={"cpu": "1"}), phase="Failed"),
    ]
    p = requesting("p", cpu="1")
    assert admit_pod(p, n, [*done, p]) == ADMITTED


def test_running_pods_count() -> None:
    n = node(allocatable={"cpu": "1", "memory": "1Gi", "pods": "110"})
    running = [pod("r", ctr(requests={"cpu": "600m"}), phase="Running")]
    assert admit_pod(requesting("p", cpu="500m"), n, running).reason == "OutOfcpu"


def test_hugepages() -> None:
    n = node(allocatable={"cpu": "2", "memory": "4Gi", "pods": "110", "hugepages-2Mi": "4Mi"})
    others = [requesting("a", **{"hugepages-2Mi": "2Mi"})]
    assert admit_pod(requesting("p", **{"hugepages-2Mi": "2Mi"}), n, others) == ADMITTED
    result = admit_pod(requesting("p", **{"hugepages-2Mi": "4Mi"}), n, others)
    assert result == AdmitResult(
        False,
        "OutOfhugepages-2Mi",
        f"Node didn't have enough resource: hugepages-2Mi, requested: {4 * Mi}, used: {2 * Mi}, capacity: {4 * Mi}",
    )


def test_hugepages_not_advertised_is_insufficient() -> None:
    result = admit_pod(requesting("p", **{"hugepages-1Gi": "1Gi"}), node(), [])
    assert result.reason == "OutOfhugepages-1Gi"


def test_extended_resource() -> None:
    n = node(allocatable={"cpu": "2", "memory": "4Gi", "pods": "110", "nvidia.com/gpu": "2"})
    others = [requesting("a", **{"nvidia.com/gpu": "1"})]
    assert admit_pod(requesting("p", **{"nvidia.com/gpu": "1"}), n, others) == ADMITTED
    result = admit_pod(requesting("p", **{"nvidia.com/gpu": "2"}), n, others)
    assert result == AdmitResult(
        False,
        "OutOfnvidia.com/gpu",
        "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 1, capacity: 2",
    )


def test_extended_resource_the_node_does_not_list_is_ignored() -> None:
    # removeMissingExtendedResources: cluster-level resources unknown to the node do not block admission.
    assert admit_pod(requesting("p", **{"example.com/license": "5"}), node(), []) == ADMITTED


def test_extended_resource_listed_as_zero_is_left_to_dra() -> None:
    # v1.37 (DRAExtendedResource GA): AdmissionCheck -> Fits(pod, nodeInfo, nil draManager) delegates a resource
    # with allocatable 0 to DRA (fit_test.go "extended resource backed by DRA, nil draManager"; before the gate,
    # a name listed as "0" was checked).
    n = node(allocatable={"cpu": "2", "memory": "4Gi", "pods": "110", "example.com/foo": "0"})
    assert admit_pod(requesting("p", **{"example.com/foo": "1"}), n, []) == ADMITTED


def test_implicit_device_class_resource_is_left_to_dra() -> None:
    # deviceclass.resource.kubernetes.io/<class> is a kubernetes.io name, so removeMissingExtendedResources keeps
    # it; the DRA delegation admits the pod all the same.
    name = "deviceclass.resource.kubernetes.io/gpu-class"
    assert admit_pod(requesting("p", **{name: "1"}), node(), []) == ADMITTED


def test_extended_resource_the_node_advertises_is_still_checked() -> None:
    n = node(allocatable={"cpu": "2", "memory": "4Gi", "pods": "110", "example.com/foo": "1"})
    assert admit_pod(requesting("p", **{"example.com/foo": "2"}), n, []).reason == "OutOfexample.com/foo"


def test_prefixed_native_resource_not_listed_is_checked() -> None:
    # kubernetes.io/ names are native, not extended: never dropped.
    result = admit_pod(requesting("p", **{"kubernetes.io/foo": "1"}), node(), [])
    assert result.reason == "OutOfkubernetes.io/foo"


def test_init_container_max_rule() -> None:
    # requests = max(sum(containers) = 500m, init = 1800m) = 1800m; 1800m + 300m used > 2000m.
    p = pod("p", ctr(requests={"cpu": "500m"}), init=[ctr("i", requests={"cpu": "1800m"})])
    result = admit_pod(p, node(), [requesting("a", cpu="300m")])
    assert result == AdmitResult(
        False, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1800, used: 300, capacity: 2000"
    )
    assert admit_pod(p, node(), [requesting("a", cpu="200m")]) == ADMITTED


def test_zero_request_pod_fits_a_full_node() -> None:
    others = [requesting("a", cpu="2", memory="4Gi")]
    assert admit_pod(pod("p"), node(), others) == ADMITTED


# --- predicates ------------------------------------------------------------------------------------------------


def test_node_selector() -> None:
    p = pod("p", nodeSelector={"disk": "ssd"})
    assert admit_pod(p, node(labels={"disk": "ssd"}), []) == ADMITTED
    assert admit_pod(p, node(labels={"disk": "hdd"}), []) == AdmitResult(
        False, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    )


def test_required_node_affinity() -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    p = pod("p", affinity=affinity)
    assert admit_pod(p, node(labels={"zone": "a"}), []) == ADMITTED
    assert admit_pod(p, node(labels={"zone": "b"}), []).reason == "NodeAffinity"


def test_node_name_mismatch() -> None:
    assert admit_pod(pod("p", nodeName="n1"), node(), []) == ADMITTED
    assert admit_pod(pod("p", nodeName="other"), node(), []) == AdmitResult(
        False, "NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"
    )


def test_host_port_in_use() -> None:
    other = pod("a", ctr(ports=[{"containerPort": 80, "hostPort": 8080}]))
    p = pod("p", ctr(ports=[{"containerPort": 80, "hostPort": 8080}]))
    assert admit_pod(p, node(), [other]) == AdmitResult(
        False, "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    )


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080, "hostIP": "10.0.0.2"}, False),
        ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080}, True),  # wildcard wanted
        ({"hostPort": 8080}, {"hostPort": 8080, "hostIP": "10.0.0.2"}, True),  # wildcard used
        ({"hostPort": 8080, "protocol": "UDP"}, {"hostPort": 8080}, False),
        ({"hostPort": 8080}, {"hostPort": 8081}, False),
    ],
)
def test_host_port_conflict_rules(used: JSON, wanted: JSON, conflict: bool) -> None:
    other = pod("a", ctr(ports=[{"containerPort": 1, **used}]))
    p = pod("p", ctr(ports=[{"containerPort": 1, **wanted}]))
    assert (admit_pod(p, node(), [other]).reason == "NodePorts") is conflict


def test_sidecar_host_port_counts() -> None:
    sidecar = ctr("s", ports=[{"containerPort": 1, "hostPort": 9000}], restart_policy="Always")
    other = pod("a", init=[sidecar])
    p = pod("p", ctr(ports=[{"containerPort": 1, "hostPort": 9000}]))
    assert admit_pod(p, node(), [other]).reason == "NodePorts"


NO_EXECUTE = {"key": "dedicated", "value": "db", "effect": "NoExecute"}


def test_untolerated_no_execute_taint() -> None:
    assert admit_pod(pod("p"), node(taints=[NO_EXECUTE]), []) == AdmitResult(
        False, "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
    )


def test_tolerated_no_execute_taint_admitted() -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}
    assert admit_pod(pod("p", tolerations=[toleration]), node(taints=[NO_EXECUTE]), []) == ADMITTED


@pytest.mark.parametrize("effect", ["NoSchedule", "PreferNoSchedule"])
def test_other_taint_effects_ignored(effect: str) -> None:
    assert admit_pod(pod("p"), node(taints=[{"key": "k", "effect": effect}]), []) == ADMITTED


def test_static_pod_skips_taint_check() -> None:
    static = pod("p", annotations={"kubernetes.io/config.source": "file"})
    assert admit_pod(static, node(taints=[NO_EXECUTE]), []) == ADMITTED
    from_api = pod("p", annotations={"kubernetes.io/config.source": "api"})
    assert admit_pod(from_api, node(taints=[NO_EXECUTE]), []).reason == "TaintToleration"


def test_first_failure_wins_in_upstream_order() -> None:
    # resources, then affinity, then node name, then ports, then taints.
    p = pod("p", ctr(requests={"cpu": "3"}), nodeSelector={"x": "y"}, nodeName="other")
    assert admit_pod(p, node(taints=[NO_EXECUTE]), []).reason == "OutOfcpu"
    p = pod("p", nodeSelector={"x": "y"}, nodeName="other")
    assert admit_pod(p, node(taints=[NO_EXECUTE]), []).reason == "NodeAffinity"
    p = pod("p", nodeName="other")
    assert admit_pod(p, node(taints=[NO_EXECUTE]), []).reason == "NodeName"


def test_os_label_mismatch() -> None:
    p = pod("p", labels={"kubernetes.io/os": "windows"})
    assert admit_pod(p, node(labels={"kubernetes.io/os": "linux"}), []) == AdmitResult(
        False,
        "PodOSSelectorNodeLabelDoesNotMatch",
        "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    )
    assert admit_pod(p, node(labels={"kubernetes.io/os": "windows"}), []) == ADMITTED


def test_os_field_mismatch() -> None:
    p = pod("p", os={"name": "windows"})
    assert admit_pod(p, node(), []) == AdmitResult(
        False, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"
    )
    assert admit_pod(pod("p", os={"name": "linux"}), node(), []) == ADMITTED


def test_os_checks_come_before_resources() -> None:
    p = pod("p", ctr(requests={"cpu": "3"}), os={"name": "windows"})
    assert admit_pod(p, node(), []).reason == "PodOSNotSupported"


def test_supplemental_groups_policy_strict() -> None:
    p = pod("p", securityContext={"supplementalGroupsPolicy": "Strict"})
    assert admit_pod(p, node(), []) == AdmitResult(
        False,
        "SupplementalGroupsPolicyNotSupported",
        "SupplementalGroupsPolicy=Strict is not supported in this node",
    )
    supporting = node()
    supporting["status"]["features"] = {"supplementalGroupsPolicy": True}
    assert admit_pod(p, supporting, []) == ADMITTED
    assert admit_pod(pod("p", securityContext={"supplementalGroupsPolicy": "Merge"}), node(), []) == ADMITTED


# --- eviction manager admission ---------------------------------------------------------------------------------

BEST_EFFORT = pod("be")
BURSTABLE = pod("bu", ctr(requests={"memory": "100Mi"}))
CRITICAL = pod("crit", priority=2_000_000_000)


def test_memory_pressure_rejects_best_effort_only() -> None:
    assert admit_pod(BEST_EFFORT, node(), [], under_memory_pressure=True) == AdmitResult(
        False, "Evicted", "The node had condition: [MemoryPressure]. "
    )
    assert admit_pod(BURSTABLE, node(), [], under_memory_pressure=True) == ADMITTED
    assert admit_pod(CRITICAL, node(), [], under_memory_pressure=True) == ADMITTED


def test_memory_pressure_admits_best_effort_tolerating_the_taint() -> None:
    toleration = {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}
    assert admit_pod(pod("be", tolerations=[toleration]), node(), [], under_memory_pressure=True) == ADMITTED


def test_disk_pressure_rejects_every_non_critical_pod() -> None:
    expected = AdmitResult(False, "Evicted", "The node had condition: [DiskPressure]. ")
    assert admit_pod(BURSTABLE, node(), [], under_disk_pressure=True) == expected
    assert admit_pod(CRITICAL, node(), [], under_disk_pressure=True) == ADMITTED
    static = pod("s", annotations={"kubernetes.io/config.source": "file"})
    assert admit_pod(static, node(), [], under_disk_pressure=True) == ADMITTED


def test_memory_and_disk_pressure_reject_burstable() -> None:
    result = admit_pod(BURSTABLE, node(), [], under_memory_pressure=True, under_disk_pressure=True)
    assert result == AdmitResult(False, "Evicted", "The node had condition: [MemoryPressure DiskPressure]. ")


def test_pid_pressure() -> None:
    result = admit_pod(BURSTABLE, node(), [], under_pid_pressure=True)
    assert result == AdmitResult(False, "Evicted", "The node had condition: [PIDPressure]. ")


def test_pressure_checked_before_predicates() -> None:
    p = pod("be", nodeName="other")
    assert admit_pod(p, node(), [], under_memory_pressure=True).reason == "Evicted"


# --- kubelet types -----------------------------------------------------------------------------------------------


def test_critical_pod_rules() -> None:
    assert is_critical_pod(pod("p", priority=2_000_000_000))
    assert is_critical_pod(pod("p", priority=2_000_001_000))
    assert not is_critical_pod(pod("p", priority=1_999_999_999))
    assert not is_critical_pod(pod("p"))
    mirror = pod("m", annotations={"kubernetes.io/config.mirror": "hash"})
    assert is_mirror_pod(mirror)
    assert is_critical_pod(mirror)
    assert not is_static_pod(mirror)
    assert is_static_pod(pod("s", annotations={"kubernetes.io/config.source": "http"}))
    assert not is_static_pod(pod("s", annotations={"kubernetes.io/config.source": "api"}))
