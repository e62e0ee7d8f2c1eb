"""How pods end (kubeplane.sim.outcomes): the classification from what a pod carries, and one small scenario per
end showing that a real run recognises it — the same count in pods.csv's ``end`` column, the summary and the CLI.
Also nodes in use (nodes with at least one non-terminal pod bound) as a series and in the summary."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeplane.cli.sim import _summary_lines
from kubeplane.sim import outcomes
from kubeplane.sim.outcomes import EndEvidence, classify
from kubeplane.sim.runner import SimResult, run
from kubeplane.sim.scenario import Scenario
from kubeplane.sim.summary import END_FIELDS


def _evidence(*, by_deletion: bool = False, phase: str = "Succeeded", disruption: str = "", reason: str = "",
              ran: bool = True) -> EndEvidence:  # fmt: skip
    return EndEvidence(by_deletion=by_deletion, phase=phase, disruption=disruption, status_reason=reason, ran=ran)


@pytest.mark.parametrize(
    ("evidence", "phase", "api_evicted", "end"),
    [
        (None, "Pending", False, "pending"),
        (None, "Running", False, "running"),
        (_evidence(), "Succeeded", False, "completed"),
        (_evidence(phase="Failed"), "Failed", False, "completed"),
        (_evidence(phase="Failed", ran=False, reason="OutOfcpu"), "Failed", False, "rejected"),
        # kubelet admission refusing for node pressure uses reason Evicted too, but the pod never ran
        (_evidence(phase="Failed", ran=False, reason="Evicted"), "Failed", False, "rejected"),
        (_evidence(phase="Failed", reason="Evicted", disruption="TerminationByKubelet"), "Failed", False, "evicted"),
        (
            _evidence(by_deletion=True, phase="Running", disruption="DeletionByTaintManager"),
            "Running",
            False,
            "evicted",
        ),
        (_evidence(by_deletion=True, phase="Running", disruption="EvictionByEvictionAPI"), "Running", False, "evicted"),
        (_evidence(by_deletion=True, phase="Running"), "Succeeded", True, "evicted"),
        (
            _evidence(by_deletion=True, phase="Running", disruption="PreemptionByScheduler"),
            "Succeeded",
            False,
            "preempted",
        ),
        (_evidence(by_deletion=True, phase="Running"), "Succeeded", False, "deleted"),
        (_evidence(by_deletion=True, phase="Pending", ran=False), "Deleted", False, "deleted"),
        (_evidence(phase="Failed", disruption="DeletionByPodGC"), "Failed", False, "deleted"),
    ],
    ids=[
        "not bound at the end: pending",
        "running at the end",
        "Succeeded after running: completed",
        "Failed after running (exit code): completed",
        "kubelet admission OutOfcpu (never ran): rejected",
        "kubelet admission for node pressure, reason Evicted (never ran): rejected",
        "kubelet eviction manager (TerminationByKubelet): evicted",
        "taint eviction controller (DeletionByTaintManager): evicted",
        "upstream Eviction API condition (EvictionByEvictionAPI): evicted",
        "Eviction API called by the simulation (kubeplane adds no condition): evicted",
        "scheduler preemption (PreemptionByScheduler): preempted",
        "deleted while running, no disruption condition (ReplicaSet scale-down): deleted",
        "deleted while pending: deleted",
        "pod GC of a removed node (DeletionByPodGC): deleted",
    ],
)
def test_classify(evidence: EndEvidence | None, phase: str, api_evicted: bool, end: str) -> None:
    assert classify(evidence, phase=phase, api_evicted=api_evicted) == end


def test_disruption_reason_reads_only_a_true_condition() -> None:
    """The disruption controller resets a stale DisruptionTarget to False: that pod was not disrupted."""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    assert outcomes.disruption_reason({"status": {"conditions": [condition]}}) == "PreemptionByScheduler"
    assert outcomes.disruption_reason({"status": {"conditions": [{**condition, "status": "False"}]}}) == ""
    assert outcomes.disruption_reason({}) == ""


# --- one small scenario per end ----------------------------------------------------------------------------------


def _pod(name: str, *, cpu: str = "100m", at: float = 0, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox:1.36",
                                            "resources": {"requests": {"cpu": cpu}}}]}  # fmt: skip
    meta: dict[str, Any] = {"name": name}
    for key, value in extra.items():
        (meta if key in ("annotations", "labels") else spec)[key] = value
    return {"at": at, "manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}}


def _deployment(name: str, replicas: int, *, cpu: str = "100m", priority: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu}}}]
    }
    if priority:
        spec["priorityClassName"] = priority
    return {"at": 0, "manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}}  # fmt: skip


def _priority_class(name: str, value: int) -> dict[str, Any]:
    manifest = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}  # fmt: skip
    return {"at": 0, "manifest": manifest}


def _run(workload: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None, *, workers: int = 1,
         duration: str = "3m") -> SimResult:  # fmt: skip
    scenario = Scenario.parse({"name": "ends", "seed": 1, "duration": duration, "sampleInterval": "10s",
                               "cluster": {"preset": "uniform", "workers": workers},
                               "kubelet": {"pullDelay": "1s", "shutdownDelay": "1s"},
                               "workload": workload, "actions": actions or []})  # fmt: skip
    return run(scenario)


def _ends(result: SimResult, prefix: str) -> Counter[str]:
    return Counter(p["end"] for p in result.pods if p["name"].startswith(prefix))


def _consistent(result: SimResult) -> None:
    """pods.csv's end column, the summary and the CLI's lines say the same."""
    ends = Counter(p["end"] for p in result.pods)
    assert set(ends) <= set(outcomes.ENDS)
    for end, field in END_FIELDS.items():
        assert result.summary[field] == ends[end], field
    assert sum(result.summary[f] for f in END_FIELDS.values()) == result.summary["pods_created"]
    printed = "\n".join(_summary_lines(result))
    for end in outcomes.ENDED:
        assert f"{end} {ends[end]}" in printed
    assert f"running {ends['running']}, pending {ends['pending']}" in printed


def test_a_job_that_runs_its_duration_completes_and_pods_stay_running_or_pending() -> None:
    result = _run([_pod("job", restartPolicy="Never", annotations={"sim.kubeplane.io/duration": "30s"}),
                   _pod("server"), _pod("huge", cpu="64")])  # fmt: skip
    assert _ends(result, "job") == {"completed": 1}
    assert _ends(result, "server") == {"running": 1}
    assert _ends(result, "huge") == {"pending": 1}  # fits no node
    _consistent(result)


def test_a_deployment_scaled_down_has_its_pods_deleted() -> None:
    """ReplicaSet controller scale-down: a plain delete, no DisruptionTarget condition (upstream)."""
    result = _run([_deployment("web", 3)], [{"at": "1m", "scale": {"name": "web", "replicas": 1}}])
    assert _ends(result, "web-") == {"deleted": 2, "running": 1}
    _consistent(result)


def test_a_noexecute_taint_evicts() -> None:
    """Taint eviction controller: DisruptionTarget reason DeletionByTaintManager, then a graceful delete."""
    result = _run(
        [_deployment("web", 2)], [{"at": "1m", "taint": {"node": "node01", "key": "k", "effect": "NoExecute"}}]
    )
    ends = _ends(result, "web-")
    assert ends["evicted"] == 2
    assert ends["pending"] == 2  # the replacements: node01 is the only worker, tainted; master is control-plane
    _consistent(result)


def test_a_drain_evicts_through_the_eviction_api() -> None:
    """``drain``: the Eviction API (upstream adds DisruptionTarget EvictionByEvictionAPI; the runner knows)."""
    result = _run([_deployment("web", 2)], [{"at": "1m", "drain": {"node": "node01"}}], workers=2)
    ends = _ends(result, "web-")
    drained = [p for p in result.pods if p["node"] == "node01" and p["created"] < 60]
    assert drained
    assert ends["evicted"] == len(drained)
    _consistent(result)


def test_the_kubelet_evicts_under_memory_pressure() -> None:
    """Kubelet eviction manager: a BestEffort pod using more memory than the node has: phase Failed, reason
    Evicted, DisruptionTarget TerminationByKubelet."""
    hog = {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    workload = [{"at": 0, "manifest": {"apiVersion": "v1", "kind": "Pod", "spec": hog, "metadata": {
        "name": "hog", "annotations": {"sim.kubeplane.io/usage-memory": "8Gi"}}}}]  # fmt: skip
    result = _run(workload)
    (pod,) = result.pods
    assert (pod["end"], pod["phase"], pod["reason"]) == ("evicted", "Failed", "Evicted")
    assert result.summary["kubelet_evictions"] == 1
    _consistent(result)


def test_the_scheduler_preempts_a_lower_priority_pod() -> None:
    """DefaultPreemption: the victim gets DisruptionTarget PreemptionByScheduler and is deleted (upstream
    ``Executor.PreemptPod``); the preemptor then runs on the node."""
    workload = [_priority_class("low", 10), _priority_class("high", 1000),
                _pod("low-0", cpu="3", priorityClassName="low"),
                _pod("high-0", cpu="3", at=60, priorityClassName="high")]  # fmt: skip
    result = _run(workload)
    assert _ends(result, "low-") == {"preempted": 1}
    assert _ends(result, "high-") == {"running": 1}
    assert result.summary["preemptions"] >= 1
    _consistent(result)


def test_the_kubelet_rejects_a_pod_bound_past_its_capacity() -> None:
    """Kubelet admission (upstream ``predicateAdmitHandler``): a pod bound by spec.nodeName past the node's
    allocatable goes to Failed, reason OutOfcpu, without running."""
    result = _run([_pod("big", cpu="64", nodeName="node01")])
    (pod,) = result.pods
    assert (pod["end"], pod["phase"], pod["reason"], pod["running"]) == ("rejected", "Failed", "OutOfcpu", None)
    _consistent(result)


def test_nodes_in_use_counts_nodes_with_a_non_terminal_bound_pod() -> None:
    """Three workers; one pod each for a minute (a job), then one server pod stays: in use 3, then 1."""
    jobs = [_pod(f"job-{i}", cpu="3", restartPolicy="Never", annotations={"sim.kubeplane.io/duration": "60s"})
            for i in range(3)]  # fmt: skip
    result = _run([*jobs, _pod("server", at=10)], workers=3)
    series = {row["t"]: row["nodes_in_use"] for row in result.timeseries}
    assert series[0.0] == 0  # sampled before the first binding
    assert series[10.0] == 3  # one job per worker (the server shares a worker)
    assert series[50.0] == 3
    assert series[180.0] == 1
    assert result.summary["nodes_in_use_peak"] == 3
    assert result.summary["nodes_in_use"] == 1
    assert 1 < result.summary["nodes_in_use_mean"] < 3
    assert "in use 1 at the end, peak 3" in "\n".join(_summary_lines(result))
