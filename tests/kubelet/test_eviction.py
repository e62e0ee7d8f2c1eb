"""``kubeplane.kubelet.eviction``: the usage model and the eviction manager's decisions.

Ranking, thresholds and message formats are upstream ``pkg/kubelet/eviction/helpers.go`` (``rankMemoryPressure``,
``parseThresholdStatement``, ``GetThresholdQuantity``, ``evictionMessage``) and ``helpers_test.go``; condition
texts are ``pkg/kubelet/nodestatus/setters.go``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from kubeplane.kubelet.eviction import (
    DEFAULT_EVICTION_HARD,
    MEMORY_AVAILABLE,
    PRESSURE_TRANSITION_PERIOD,
    USAGE_CPU_ANNOTATION,
    USAGE_MEMORY_ANNOTATION,
    Threshold,
    conditions_observed_since,
    container_memory_usage,
    eviction_annotations,
    eviction_message,
    memory_available,
    node_conditions,
    parse_thresholds,
    pick_pod_to_evict,
    pod_cpu_usage,
    pod_is_evicted,
    pod_memory_usage,
    pressure_condition,
    rank_for_memory_eviction,
    threshold_met,
)

JSON = dict[str, Any]
Mi = 1024**2
Gi = 1024**3


def ctr(name: str = "c", *, requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None) -> JSON:
    c: JSON = {"name": name, "image": "busybox", "resources": {}}
    if requests is not None:
        c["resources"]["requests"] = dict(requests)
    if limits is not None:
        c["resources"]["limits"] = dict(limits)
    return c


def pod(name: str, *containers: JSON, memory: str | None = None, cpu: str | None = None, **spec: Any) -> JSON:
    annotations: JSON = {}
    if memory is not None:
        annotations[USAGE_MEMORY_ANNOTATION] = memory
    if cpu is not None:
        annotations[USAGE_CPU_ANNOTATION] = cpu
    return {
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"containers": list(containers) or [ctr()], **spec},
    }


def names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# --- usage model ----------------------------------------------------------------------------------------------


def test_usage_defaults_to_requests() -> None:
    p = pod("p", ctr(requests={"memory": "100Mi", "cpu": "250m"}))
    assert pod_memory_usage(p) == 100 * Mi
    assert pod_cpu_usage(p) == 250


def test_usage_annotation_overrides_requests() -> None:
    p = pod("p", ctr(requests={"memory": "100Mi", "cpu": "250m"}), memory="300Mi", cpu="1500m")
    assert pod_memory_usage(p) == 300 * Mi
    assert pod_cpu_usage(p) == 1500


def test_usage_capped_at_limits() -> None:
    p = pod("p", ctr(requests={"memory": "100Mi", "cpu": "100m"}, limits={"memory": "200Mi", "cpu": "500m"}))
    over = pod("p", *p["spec"]["containers"], memory="1Gi", cpu="4")
    assert pod_memory_usage(over) == 200 * Mi
    assert pod_cpu_usage(over) == 500


def test_usage_not_capped_when_a_container_is_unlimited() -> None:
    # the pod cgroup has no limit unless every container declares one.
    p = pod("p", ctr("a", limits={"memory": "100Mi"}), ctr("b"), memory="1Gi")
    assert pod_memory_usage(p) == Gi


def test_usage_capped_by_pod_level_limits() -> None:
    p = pod("p", ctr("a"), memory="1Gi", resources={"limits": {"memory": "256Mi"}})
    assert pod_memory_usage(p) == 256 * Mi


def test_bad_usage_annotation_falls_back_to_requests() -> None:
    assert pod_memory_usage(pod("p", ctr(requests={"memory": "64Mi"}), memory="lots")) == 64 * Mi


def test_container_usage_proportional_to_requests() -> None:
    p = pod("p", ctr("a", requests={"memory": "100Mi"}), ctr("b", requests={"memory": "300Mi"}), memory="800Mi")
    assert container_memory_usage(p) == [("a", 200 * Mi), ("b", 600 * Mi)]


def test_container_usage_sums_exactly() -> None:
    p = pod("p", *(ctr(f"c{i}", requests={"memory": "1"}) for i in range(3)), memory="10")
    shares = container_memory_usage(p)
    assert sum(s for _, s in shares) == 10
    assert sorted(s for _, s in shares) == [3, 3, 4]


def test_container_usage_best_effort_goes_to_first() -> None:
    p = pod("p", ctr("a"), ctr("b"), memory="50Mi")
    assert container_memory_usage(p) == [("a", 50 * Mi), ("b", 0)]


def test_memory_available() -> None:
    n = {"status": {"capacity": {"memory": "1Gi"}, "allocatable": {"memory": "900Mi"}}}
    pods = [pod("a", memory="300Mi"), pod("b", ctr(requests={"memory": "200Mi"}))]
    assert memory_available(n, pods) == Gi - 500 * Mi
    done = pod("c", memory="1Gi")
    done["status"] = {"phase": "Succeeded"}
    assert memory_available(n, [*pods, done]) == Gi - 500 * Mi
    assert memory_available(n, [pod("d", memory="2Gi")]) == 0


# --- ranking --------------------------------------------------------------------------------------------------

GUARANTEED = pod("guaranteed", ctr(requests={"memory": "500Mi", "cpu": "1"}, limits={"memory": "500Mi", "cpu": "1"}))
BURSTABLE = pod("burstable", ctr(requests={"memory": "100Mi"}), memory="200Mi")
BEST_EFFORT = pod("besteffort", memory="200Mi")


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_rank_best_effort_burstable_guaranteed(order: tuple[int, int, int]) -> None:
    pods = [GUARANTEED, BURSTABLE, BEST_EFFORT]
    ranked = rank_for_memory_eviction([pods[i] for i in order])
    assert names(ranked) == ["besteffort", "burstable", "guaranteed"]


def test_guaranteed_usage_over_limit_never_exceeds_request() -> None:
    hog = pod("hog", *GUARANTEED["spec"]["containers"], memory="4Gi")
    assert names(rank_for_memory_eviction([hog, BURSTABLE])) == ["burstable", "hog"]


def test_priority_breaks_ties_among_pods_exceeding_requests() -> None:
    low = pod("low", ctr(requests={"memory": "100Mi"}), memory="110Mi", priority=-10)
    high = pod("high", ctr(requests={"memory": "100Mi"}), memory="900Mi", priority=1000)
    default = pod("default", memory="500Mi")
    within = pod("within", ctr(requests={"memory": "1Gi"}), memory="1Gi", priority=-100)
    ranked = rank_for_memory_eviction([within, high, default, low])
    # exceeding first (by priority, lowest first, despite usage), then the pod within its request.
    assert names(ranked) == ["low", "default", "high", "within"]


def test_usage_above_request_orders_equal_priority() -> None:
    a = pod("a", ctr(requests={"memory": "100Mi"}), memory="150Mi")
    b = pod("b", ctr(requests={"memory": "100Mi"}), memory="400Mi")
    c = pod("c", ctr(requests={"memory": "1Gi"}), memory="900Mi")
    d = pod("d", ctr(requests={"memory": "1Gi"}), memory="100Mi")
    assert names(rank_for_memory_eviction([d, a, c, b])) == ["b", "a", "c", "d"]


def test_rank_is_stable_on_ties() -> None:
    twins = [pod(f"t{i}", memory="10Mi") for i in range(5)]
    assert names(rank_for_memory_eviction(twins)) == [f"t{i}" for i in range(5)]


def test_pick_skips_critical_pods() -> None:
    critical = pod("critical", memory="1Gi", priority=2_000_001_000)
    static = pod("static", memory="1Gi")
    static["metadata"]["annotations"]["kubernetes.io/config.source"] = "file"
    ranked = rank_for_memory_eviction([critical, static, BURSTABLE])
    assert names(ranked) == ["static", "burstable", "critical"]  # critical pods are ranked like any other...
    picked = pick_pod_to_evict(ranked)
    assert picked is not None
    assert picked["metadata"]["name"] == "burstable"  # ...but never evicted
    assert pick_pod_to_evict([critical]) is None


# --- thresholds -----------------------------------------------------------------------------------------------


def test_default_eviction_hard() -> None:
    assert dict(DEFAULT_EVICTION_HARD) == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
        "imagefs.inodesFree": "5%",
    }
    thresholds = parse_thresholds(DEFAULT_EVICTION_HARD)
    assert [t.signal for t in thresholds] == list(DEFAULT_EVICTION_HARD)


def test_quantity_threshold() -> None:
    (t,) = parse_thresholds({MEMORY_AVAILABLE: "100Mi"})
    assert t == Threshold(MEMORY_AVAILABLE, 100 * Mi, None, "100Mi")
    assert t.value(8 * Gi) == 100 * Mi
    assert threshold_met(t, 100 * Mi - 1, 8 * Gi)
    assert not threshold_met(t, 100 * Mi, 8 * Gi)


def test_percentage_threshold_is_float32_of_capacity() -> None:
    (t,) = parse_thresholds({MEMORY_AVAILABLE: "10%"})
    assert t.quantity is None
    assert t.percentage == pytest.approx(0.1, abs=1e-8)
    assert t.percentage != 0.1  # float32(10)/100 as upstream stores it
    assert t.value(1000) == 100
    # float64(8Gi) * float64(float32(0.1)) = 858993472.0..., truncated
    assert t.value(8 * Gi) == 858993472
    assert threshold_met(t, 858993471, 8 * Gi)
    assert not threshold_met(t, 858993472, 8 * Gi)


def test_zero_and_hundred_percent_disable_the_signal() -> None:
    assert parse_thresholds({MEMORY_AVAILABLE: "0%", "nodefs.available": "100%"}) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"memory.free": "1Gi"}, "unsupported eviction signal memory.free"),
        ({MEMORY_AVAILABLE: "150%"}, "eviction percentage threshold memory.available must be <= 100%: 150%"),
        ({MEMORY_AVAILABLE: "-5%"}, "eviction percentage threshold memory.available must be >= 0%: -5%"),
        ({MEMORY_AVAILABLE: "0"}, "eviction threshold memory.available must be positive: 0"),
        ({MEMORY_AVAILABLE: "-1Mi"}, "eviction threshold memory.available must be positive: -1Mi"),
    ],
)
def test_bad_thresholds(spec: Mapping[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        parse_thresholds(spec)


@pytest.mark.parametrize("spec", [{MEMORY_AVAILABLE: "lots"}, {MEMORY_AVAILABLE: "x%"}])
def test_unparsable_thresholds_are_one_line_value_errors(spec: Mapping[str, str]) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]+$"):
        parse_thresholds(spec)


def test_node_conditions_from_met_thresholds() -> None:
    thresholds = parse_thresholds({"nodefs.available": "10%", MEMORY_AVAILABLE: "1Mi", "imagefs.available": "5%"})
    assert node_conditions(thresholds) == ["DiskPressure", "MemoryPressure"]


def test_conditions_observed_since_transition_period() -> None:
    seen = {"MemoryPressure": 1000.0, "DiskPressure": 1000.0 - PRESSURE_TRANSITION_PERIOD}
    assert PRESSURE_TRANSITION_PERIOD == 300.0
    assert conditions_observed_since(seen, 1000.0) == ["MemoryPressure"]
    assert conditions_observed_since(seen, 1000.0 + 299.0) == ["MemoryPressure"]
    assert conditions_observed_since(seen, 1000.0 + 300.0) == []


# --- messages -------------------------------------------------------------------------------------------------

HUNDRED_MI = Threshold(MEMORY_AVAILABLE, 100 * Mi, None, "100Mi")


def test_message_pinned() -> None:
    p = pod("p", ctr("app", requests={"memory": "100Mi"}), ctr("side", requests={"memory": "100Mi"}), memory="300Mi")
    assert eviction_message("memory", HUNDRED_MI, 51201 * 1024, p) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51201Ki. "
        "Container app was using 150Mi, request is 100Mi, has larger consumption of memory. "
        "Container side was using 150Mi, request is 100Mi, has larger consumption of memory. "
    )


def test_available_prints_canonical_binary_si() -> None:
    p = pod("p", ctr("app"))
    assert eviction_message("memory", HUNDRED_MI, 51200 * 1024, p).endswith("available: 50Mi. ")


def test_message_best_effort_request_is_zero() -> None:
    p = pod("p", ctr("app"), memory="1Gi")
    assert eviction_message("memory", HUNDRED_MI, 1024, p) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 1Ki. "
        "Container app was using 1Gi, request is 0, has larger consumption of memory. "
    )


def test_message_request_keeps_its_written_form_and_odd_sizes_print_exactly() -> None:
    p = pod("p", ctr("app", requests={"memory": "1G"}), memory="1000000001")
    assert eviction_message("memory", HUNDRED_MI, 1000, p) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 1k. "
        "Container app was using 1000000001, request is 1G, has larger consumption of memory. "
    )


def test_message_without_offenders() -> None:
    p = pod("p", ctr("app", requests={"memory": "100Mi"}), memory="50Mi")
    assert eviction_message("memory", HUNDRED_MI, 0, p) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 0. "
    )
    assert eviction_message("memory", None, 0, p) == "The node was low on resource: memory. "


def test_message_percentage_threshold_prints_computed_quantity() -> None:
    (t,) = parse_thresholds({MEMORY_AVAILABLE: "5%"})
    p = pod("p", ctr("app"))
    # float64(4Gi) * float64(float32(0.05)) = 214748368.0 (float32 rounding adds 3.2 bytes to 5% of 4Gi),
    # printed with exact digits since it is not a multiple of 1Ki
    assert eviction_message("memory", t, 100 * Mi, p, capacity=4 * Gi) == (
        "The node was low on resource: memory. Threshold quantity: 214748368, available: 100Mi. "
    )


def test_message_pod_level_resources() -> None:
    p = pod("web", ctr("app"), memory="300Mi", resources={"requests": {"memory": "256Mi"}})
    assert eviction_message("memory", HUNDRED_MI, 0, p) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 0. "
        "Pod web was using 300Mi, request is 256Mi, has larger consumption of memory. "
        "Container app was using 300Mi, request is 0, has larger consumption of memory. "
    )
    assert eviction_annotations("memory", p) == {
        "offending_pod": "web",
        "offending_pod_usage": "300Mi",
        "offending_containers": "app",
        "offending_containers_usage": "300Mi",
        "starved_resource": "memory",
    }


def test_annotations() -> None:
    p = pod("p", ctr("a", requests={"memory": "100Mi"}), ctr("b", requests={"memory": "100Mi"}), memory="300Mi")
    assert eviction_annotations("memory", p) == {
        "offending_containers": "a,b",
        "offending_containers_usage": "150Mi,150Mi",
        "starved_resource": "memory",
    }
    calm = pod("p", ctr("a", requests={"memory": "100Mi"}))
    assert eviction_annotations("memory", calm) == {
        "offending_containers": "",
        "offending_containers_usage": "",
        "starved_resource": "memory",
    }


def test_pod_is_evicted() -> None:
    assert pod_is_evicted({"status": {"phase": "Failed", "reason": "Evicted"}})
    assert not pod_is_evicted({"status": {"phase": "Failed", "reason": "OOMKilled"}})
    assert not pod_is_evicted({"status": {"phase": "Running", "reason": "Evicted"}})


# --- node conditions ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "pressure", "reason", "message", "event"),
    [
        (
            "MemoryPressure",
            True,
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
            "NodeHasInsufficientMemory",
        ),
        (
            "MemoryPressure",
            False,
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            "NodeHasSufficientMemory",
        ),
        ("DiskPressure", True, "KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"),
        ("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"),
        (
            "PIDPressure",
            True,
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
            "NodeHasInsufficientPID",
        ),
        (
            "PIDPressure",
            False,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
            "NodeHasSufficientPID",
        ),
    ],
)
def test_pressure_condition_texts(kind: str, pressure: bool, reason: str, message: str, event: str) -> None:
    condition = pressure_condition(kind, pressure)
    assert (condition.type, condition.status) == (kind, "True" if pressure else "False")
    assert (condition.reason, condition.message, condition.event_reason) == (reason, message, event)
