"""Server-side Table printers against upstream ``pkg/printers/internalversion`` (printers.go, printers_test.go).

Each case names the upstream printer behaviour it pins. Times are relative to a fixed ``NOW`` so AGE and
RESTARTS cells are exact, as upstream's tests do with ``time.Now().Add(-10 * time.Second)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.apiserver.printers import PRINTERS, column_definitions, human_duration, row_for, to_table

NOW = 1_700_000_000.0


def ago(seconds: float) -> str:
    return format_time(NOW - seconds)


# --- duration.HumanDuration -----------------------------------------------------------------------------

DAY = 86400


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        (1, "1s"),
        (70, "70s"),  # under two minutes stays in seconds
        (119.9, "119s"),
        (120, "2m"),
        (190, "3m10s"),
        (600, "10m"),
        (610, "10m"),  # from 10 minutes on, seconds are dropped
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (70 * 60, "70m"),  # minutes up to 3h
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600 + 60, "8h"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        (8 * DAY + 2 * 3600, "8d"),
        (367 * DAY, "367d"),
        (365 * 2 * DAY + 25 * 3600, "2y1d"),
        (365 * 8 * DAY + 2 * 3600, "8y"),
        (-1.5, "0s"),  # up to 2s of clock skew reads as now
        (-2, "<invalid>"),
    ],
    ids=str,
)
def test_human_duration(seconds: float, want: str) -> None:
    assert human_duration(seconds) == want


# --- pods -----------------------------------------------------------------------------------------------


def pod(
    *statuses: dict[str, Any],
    n: int = 1,
    phase: str = "",
    reason: str = "",
    init: Sequence[dict[str, Any]] = (),
    inits: Sequence[dict[str, Any]] | None = None,
    conditions: Sequence[dict[str, str]] = (),
    deleted: bool = False,
) -> dict[str, Any]:
    """A pod with ``n`` containers, the given container statuses and (``inits``) init container statuses."""
    status: dict[str, Any] = {"phase": phase, "reason": reason, "containerStatuses": list(statuses)}
    status.update({"conditions": list(conditions)} | ({"initContainerStatuses": list(inits)} if inits else {}))
    metadata: dict[str, Any] = {"name": "p", "creationTimestamp": ago(3600)}
    if deleted:
        metadata["deletionTimestamp"] = ago(10)
    spec = {"containers": [{"name": f"c{i}"} for i in range(n)], "initContainers": list(init)}
    return {"metadata": metadata, "spec": spec, "status": status}


def cs(
    state: dict[str, Any] | None = None,
    *,
    ready: bool = False,
    restarts: int = 0,
    finished: float | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """A container status; ``finished`` is how long ago its last termination finished."""
    out: dict[str, Any] = {"ready": ready, "restartCount": restarts, "state": state or {}, **kw}
    if finished is not None:
        out["lastTerminationState"] = {"terminated": {"exitCode": 1, "finishedAt": ago(finished)}}
    return out


def wait(reason: str = "") -> dict[str, Any]:
    return {"waiting": {"reason": reason} if reason else {}}


def term(reason: str = "", code: int = 0, signal: int = 0) -> dict[str, Any]:
    return {"terminated": {"reason": reason, "exitCode": code, "signal": signal}}


RUN: dict[str, Any] = {"running": {}}
READY = [{"type": "Ready", "status": "True"}]
INIT_FALSE, INIT_TRUE = [{"type": "Initialized", "status": "False"}], [{"type": "Initialized", "status": "True"}]
GATED = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
SIDECARS = [{"name": "s1", "restartPolicy": "Always"}, {"name": "s2", "restartPolicy": "Always"}]
UP3 = cs(RUN, ready=True, restarts=3)

POD_CASES = [
    # TestPrintPod (upstream printers_test.go), test1..test20
    ("test1-ready-count-and-restarts", pod(UP3, cs(restarts=3), n=2, phase="podPhase"), "1/2", "podPhase", "6"),
    ("test2-waiting-reason-overrides-phase", pod(UP3, cs(wait("Why"), restarts=3), n=2, phase="P"), "1/2", "Why", "6"),
    ("test3-first-container-wins", pod(cs(wait("W"), restarts=3), cs(term("T"), restarts=3), n=2), "0/2", "W", "6"),
    ("test4-ready-but-not-running", pod(UP3, cs(ready=True, restarts=3), n=2, phase="P"), "1/2", "P", "6"),
    ("test5-status-reason-wins", pod(UP3, cs(ready=True, restarts=3), n=2, phase="P", reason="R"), "1/2", "R", "6"),
    (
        "test6-Completed-and-running-NotReady",
        pod(cs(term("Completed"), ready=True, restarts=3), UP3, n=2),
        "1/2",
        "NotReady",
        "6",
    ),
    (
        "test6-Completed-and-running-Ready",
        pod(cs(term("Completed"), restarts=3), UP3, n=2, conditions=READY),
        "1/2",
        "Running",
        "6",
    ),
    (
        "test7-init-Init:0/1",
        pod(cs(wait()), init=[{}], inits=[cs(RUN, restarts=3, finished=10)]),
        "0/1",
        "Init:0/1",
        "3 (10s ago)",
    ),
    (
        "test8-init-Init:0/2",
        pod(cs(wait()), init=[{}, {}], inits=[cs(RUN, restarts=3, finished=10), cs(wait())]),
        "0/1",
        "Init:0/2",
        "3 (10s ago)",
    ),
    (
        "test9-init-Init:1/2",
        pod(cs(wait()), init=[{}, {}], inits=[cs(term()), cs(RUN, restarts=3, finished=10)]),
        "0/1",
        "Init:1/2",
        "3 (10s ago)",
    ),
    (
        "test10-init-restarts-sum",
        pod(cs(wait()), init=[{}, {}], inits=[cs(term(), restarts=2, finished=120), cs(RUN, restarts=3, finished=10)]),
        "0/1",
        "Init:1/2",
        "5 (10s ago)",
    ),
    (
        "test11-after-init-containers-only",
        pod(cs(RUN, restarts=4, finished=20), phase="Running", init=[{}], inits=[cs(term(), restarts=2, finished=120)]),
        "0/1",
        "Running",
        "4 (20s ago)",
    ),
    (
        "test12-restarted-5d-ago",
        pod(cs(RUN, ready=True, restarts=3, finished=5 * DAY), phase="Running"),
        "1/1",
        "Running",
        "3 (5d ago)",
    ),
    (
        "test13-one-never-restarted",
        pod(cs(RUN, ready=True), cs(RUN, ready=True, restarts=3, finished=10 * DAY), n=2, phase="Running"),
        "2/2",
        "Running",
        "3 (10d ago)",
    ),
    (
        "test14-latest-restart-wins",
        pod(
            cs(RUN, ready=True, restarts=6, finished=5 * DAY),
            cs(RUN, ready=True, restarts=3, finished=20 * DAY),
            n=2,
            phase="Running",
        ),
        "2/2",
        "Running",
        "9 (5d ago)",
    ),
    ("test15-SchedulingGated", pod(n=2, phase="P", conditions=GATED), "0/2", "SchedulingGated", "0"),
    ("test16-Succeeded-Completed", pod(cs(term("Completed")), phase="Succeeded"), "0/1", "Completed", "0"),
    ("test17-Failed-Error", pod(cs(term("Error", 1)), phase="Failed"), "0/1", "Error", "0"),
    (
        "test18-deleted-Succeeded-stays-Completed",
        pod(cs(term("Completed")), phase="Succeeded", deleted=True),
        "0/1",
        "Completed",
        "0",
    ),
    ("test19-deleted-Running-Terminating", pod(cs(RUN), phase="Running", deleted=True), "0/1", "Terminating", "0"),
    ("test20-deleted-Pending-Terminating", pod(phase="Pending", deleted=True), "0/1", "Terminating", "0"),
    # TestPrintPodWithRestartableInitContainer
    (
        "sidecar-not-started-Init:0/2",
        pod(
            cs(wait()),
            init=SIDECARS,
            conditions=INIT_FALSE,
            inits=[cs(RUN, name="s1", restarts=3, started=False, finished=10), cs(wait(), name="s2", started=False)],
        ),
        "0/3",
        "Init:0/2",
        "3 (10s ago)",
    ),
    (
        "sidecar-started-Init:1/2",
        pod(
            cs(wait()),
            init=SIDECARS,
            conditions=INIT_FALSE,
            inits=[cs(RUN, name="s1", restarts=3, started=True, finished=10), cs(RUN, name="s2", started=False)],
        ),
        "0/3",
        "Init:1/2",
        "3 (10s ago)",
    ),
    (
        "sidecars-started-count",
        pod(
            cs(RUN, ready=True, restarts=4, finished=20),
            phase="Running",
            init=SIDECARS,
            conditions=INIT_TRUE,
            inits=[cs(RUN, name="s1", restarts=3, started=True, finished=10), cs(RUN, name="s2", started=True)],
        ),
        "1/3",
        "Running",
        "7 (10s ago)",
    ),
    (
        "sidecars-failed-pod-Completed",
        pod(
            cs(term("Completed"), restarts=4, finished=20),
            phase="Succeeded",
            init=SIDECARS,
            conditions=INIT_TRUE,
            inits=[
                cs(term("Error", 137), name="s1", restarts=3, started=False, finished=10),
                cs(term("Error", 137), name="s2", started=False),
            ],
        ),
        "0/3",
        "Completed",
        "7 (10s ago)",
    ),
    (
        "statuses-of-unknown-containers",
        pod(
            cs(name="cx"),
            cs(name="c0"),
            init=[{"name": "i1"}, {**SIDECARS[0], "name": "sc"}],
            inits=[cs(name="ix"), cs(name="i1"), cs(name="sc")],
        ),
        "0/2",
        "Init:0/2",
        "0",
    ),
    # Everyday statuses
    ("Pending", pod(phase="Pending"), "0/1", "Pending", "0"),
    ("ContainerCreating", pod(cs(wait("ContainerCreating")), phase="Pending"), "0/1", "ContainerCreating", "0"),
    (
        "CrashLoopBackOff",
        pod(cs(wait("CrashLoopBackOff"), restarts=5, finished=30)),
        "0/1",
        "CrashLoopBackOff",
        "5 (30s ago)",
    ),
    ("Evicted-status-reason", pod(phase="Failed", reason="Evicted"), "0/1", "Evicted", "0"),
    (
        "NodeLost-deleted-Unknown",
        pod(cs(RUN, ready=True), phase="Running", reason="NodeLost", deleted=True),
        "1/1",
        "Unknown",
        "0",
    ),
    ("Init:Error", pod(init=[{}], inits=[cs(term("Error", 1))], phase="Pending"), "0/1", "Init:Error", "0"),
    ("Init:ExitCode", pod(init=[{}], inits=[cs(term(code=2))], phase="Pending"), "0/1", "Init:ExitCode:2", "0"),
    ("Init:Signal", pod(init=[{}], inits=[cs(term(code=137, signal=9))], phase="Pending"), "0/1", "Init:Signal:9", "0"),
    ("Init-waiting-reason", pod(init=[{}], inits=[cs(wait("ErrImagePull"))]), "0/1", "Init:ErrImagePull", "0"),
    ("Init-PodInitializing-ignored", pod(init=[{}], inits=[cs(wait("PodInitializing"))]), "0/1", "Init:0/1", "0"),
    ("ExitCode", pod(cs(term(code=3)), phase="Failed"), "0/1", "ExitCode:3", "0"),
    ("Signal", pod(cs(term(signal=15)), phase="Failed"), "0/1", "Signal:15", "0"),
]


@pytest.mark.parametrize(
    ("obj", "ready", "status", "restarts"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_print_pod(obj: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    assert row_for(("", "Pod"), obj, now=NOW)[:5] == ["p", ready, status, restarts, "60m"]


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        pytest.param(
            {
                "containers": [{}, {}],
                "nodeName": "test1",
                "readinessGates": [{"conditionType": c} for c in ("c1", "c2", "c3")],
            },
            {
                "conditions": [{"type": "c1", "status": "False"}, {"type": "c2", "status": "True"}],
                "podIPs": [{"ip": "1.1.1.1"}],
                "nominatedNodeName": "node1",
            },
            ["1.1.1.1", "test1", "node1", "1/3"],
            id="TestPrintPodwide-ip-node-nominated-gates",
        ),
        pytest.param({"containers": [{}]}, {}, ["<none>", "<none>", "<none>", "<none>"], id="TestPrintPodwide-none"),
        pytest.param(
            {"containers": [{}]},
            {"podIP": "10.0.0.1"},
            ["10.0.0.1", "<none>", "<none>", "<none>"],
            id="podIP-without-podIPs",
        ),
    ],
)
def test_print_pod_wide(spec: dict[str, Any], status: dict[str, Any], want: list[str]) -> None:
    assert row_for(("", "Pod"), {"metadata": {"name": "p"}, "spec": spec, "status": status}, now=NOW)[5:] == want


# --- nodes ----------------------------------------------------------------------------------------------


def node(
    *, conditions: list[dict[str, str]] | None = None, labels: dict[str, str] | None = None, unschedulable: bool = False
) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "labels": labels or {}, "creationTimestamp": ago(2 * DAY)},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions or [], "nodeInfo": {"kubeletVersion": "v1.37.0"}},
    }


@pytest.mark.parametrize(
    ("obj", "status", "roles"),
    [
        pytest.param(node(conditions=[{"type": "Ready", "status": "True"}]), "Ready", "<none>", id="Ready-no-roles"),
        pytest.param(
            node(conditions=[{"type": "Ready", "status": "False"}]), "NotReady", "<none>", id="NotReady-False"
        ),
        pytest.param(
            node(conditions=[{"type": "Ready", "status": "Unknown"}]),
            "NotReady",
            "<none>",
            id="NotReady-Unknown-status",
        ),
        pytest.param(node(), "Unknown", "<none>", id="Unknown-without-Ready-condition"),
        pytest.param(
            node(conditions=[{"type": "MemoryPressure", "status": "True"}]), "Unknown", "<none>", id="only-Ready-counts"
        ),
        pytest.param(
            node(conditions=[{"type": "Ready", "status": "True"}], unschedulable=True),
            "Ready,SchedulingDisabled",
            "<none>",
            id="cordoned",
        ),
        pytest.param(node(unschedulable=True), "Unknown,SchedulingDisabled", "<none>", id="cordoned-unknown"),
        pytest.param(
            node(labels={"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}),
            "Unknown",
            "control-plane,worker",
            id="roles-sorted",
        ),
        pytest.param(
            node(labels={"kubernetes.io/role": "master", "node-role.kubernetes.io/": ""}),
            "Unknown",
            "master",
            id="kubernetes.io-role-value-and-empty-suffix-ignored",
        ),
        pytest.param(
            node(labels={"kubernetes.io/role": "", "node-role.kubernetes.io/master": ""}),
            "Unknown",
            "master",
            id="empty-role-value-ignored-and-deduplicated",
        ),
    ],
)
def test_print_node_status_and_roles(obj: dict[str, Any], status: str, roles: str) -> None:
    assert row_for(("", "Node"), obj, now=NOW)[:5] == ["n1", status, roles, "2d", "v1.37.0"]


def test_print_node_wide() -> None:
    obj = node()
    obj["status"]["addresses"] = [{"type": "Hostname", "address": "h"}, {"type": "InternalIP", "address": "10.0.0.1"}]
    obj["status"]["nodeInfo"]["osImage"] = "Ubuntu"
    assert row_for(("", "Node"), obj, now=NOW)[5:] == ["10.0.0.1", "<none>", "Ubuntu", "<unknown>", "<unknown>"]


# --- workloads ------------------------------------------------------------------------------------------

TEMPLATE = {"spec": {"containers": [{"name": "a", "image": "img:a"}, {"name": "b", "image": "img:b"}]}}
SELECTOR = {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}


@pytest.mark.parametrize(
    ("kind", "obj", "want"),
    [
        pytest.param(
            ("apps", "Deployment"),
            {
                "spec": {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE},
                "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1},
            },
            ["d", "2/3", 3, 1, "5m", "a,b", "img:a,img:b", "app=x,tier in (a,b)"],
            id="printDeployment",
        ),
        pytest.param(
            ("apps", "Deployment"),
            {"spec": {"replicas": 1, "selector": {}}},
            ["d", "0/1", 0, 0, "5m", "", "", ""],
            id="printDeployment-empty-selector-is-blank",
        ),
        pytest.param(
            ("apps", "Deployment"),
            {"spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Bad"}]}}},
            ["d", "0/1", 0, 0, "5m", "", "", "<invalid>"],
            id="printDeployment-invalid-selector",
        ),
        pytest.param(
            ("apps", "ReplicaSet"),
            {
                "spec": {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE},
                "status": {"replicas": 3, "readyReplicas": 2},
            },
            ["d", 3, 3, 2, "5m", "a,b", "img:a,img:b", "app=x,tier in (a,b)"],
            id="printReplicaSet",
        ),
        pytest.param(
            ("apps", "ReplicaSet"),
            {"spec": {"replicas": 0, "selector": {}}},
            ["d", 0, 0, 0, "5m", "", "", "<none>"],
            id="printReplicaSet-empty-selector-is-none",
        ),
        pytest.param(
            ("apps", "DaemonSet"),
            {
                "spec": {
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": {"spec": {**TEMPLATE["spec"], "nodeSelector": {"os": "linux", "arch": "amd64"}}},
                },
                "status": {
                    "desiredNumberScheduled": 3,
                    "currentNumberScheduled": 2,
                    "numberReady": 1,
                    "updatedNumberScheduled": 2,
                    "numberAvailable": 1,
                },
            },
            ["d", 3, 2, 1, 2, 1, "arch=amd64,os=linux", "5m", "a,b", "img:a,img:b", "app=x"],
            id="printDaemonSet",
        ),
        pytest.param(
            ("apps", "DaemonSet"),
            {"spec": {}},
            ["d", 0, 0, 0, 0, 0, "<none>", "5m", "", "", "<none>"],
            id="printDaemonSet-no-node-selector",
        ),
        pytest.param(
            ("apps", "StatefulSet"),
            {"spec": {"replicas": 2, "template": TEMPLATE}, "status": {"readyReplicas": 1}},
            ["d", "1/2", "5m", "a,b", "img:a,img:b"],
            id="printStatefulSet",
        ),
        pytest.param(
            ("batch", "Job"),
            {
                "spec": {"completions": 3, "template": TEMPLATE, "selector": {"matchLabels": {"a": "b"}}},
                "status": {
                    "succeeded": 3,
                    "startTime": ago(200),
                    "completionTime": ago(80),
                    "conditions": [{"type": "Complete", "status": "True"}],
                },
            },
            ["d", "Complete", "3/3", "2m", "5m", "a,b", "img:a,img:b", "a=b"],
            id="printJob-complete",
        ),
        pytest.param(
            ("batch", "Job"),
            {"spec": {"parallelism": 4}, "status": {"succeeded": 1, "startTime": ago(30)}},
            ["d", "Running", "1/1 of 4", "30s", "5m", "", "", "<none>"],
            id="printJob-running-no-completions",
        ),
        pytest.param(
            ("batch", "Job"),
            {"spec": {"completions": 2}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}},
            ["d", "Suspended", "0/2", "", "5m", "", "", "<none>"],
            id="printJob-suspended",
        ),
        pytest.param(
            ("batch", "CronJob"),
            {
                "spec": {
                    "schedule": "*/5 * * * *",
                    "timeZone": "Etc/UTC",
                    "suspend": True,
                    "jobTemplate": {"spec": {"template": TEMPLATE}},
                },
                "status": {"active": [{"name": "x"}], "lastScheduleTime": ago(60)},
            },
            ["d", "*/5 * * * *", "Etc/UTC", "True", 1, "60s", "5m", "a,b", "img:a,img:b", "<none>"],
            id="printCronJob",
        ),
        pytest.param(
            ("batch", "CronJob"),
            {"spec": {"schedule": "@hourly"}},
            ["d", "@hourly", "<none>", "<unset>", 0, "<none>", "5m", "", "", "<none>"],
            id="printCronJob-unset",
        ),
    ],
)
def test_print_workloads(kind: tuple[str, str], obj: dict[str, Any], want: list[Any]) -> None:
    obj = {"metadata": {"name": "d", "creationTimestamp": ago(300)}, **obj}
    assert row_for(kind, obj, now=NOW) == want


# --- events ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "event", "want"),
    [
        pytest.param(
            ("", "Event"),
            {
                "metadata": {"name": "ev1"},
                "firstTimestamp": ago(600),
                "lastTimestamp": ago(30),
                "count": 4,
                "type": "Warning",
                "reason": "BackOff",
                "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}"},
                "source": {"component": "kubelet", "host": "node-1"},
                "message": "  Back-off restarting failed container \n",
            },
            [
                "30s",
                "Warning",
                "BackOff",
                "pod/web-0",
                "spec.containers{web}",
                "kubelet, node-1",
                "Back-off restarting failed container",
                "10m",
                4,
                "ev1",
            ],
            id="printEvent-core",
        ),
        pytest.param(
            ("", "Event"),
            {
                "metadata": {"name": "ev2"},
                "eventTime": "2023-11-14T22:13:00.000000Z",
                "reportingComponent": "default-scheduler",  # core/v1's JSON name for the reporting controller
                "type": "Normal",
                "reason": "Scheduled",
                "involvedObject": {"kind": "Node"},
                "message": "m",
            },
            ["20s", "Normal", "Scheduled", "node", "", "default-scheduler", "m", "20s", 1, "ev2"],
            id="printEvent-eventTime-singleton-count-1-kind-only-target",
        ),
        pytest.param(
            ("", "Event"),
            {
                "metadata": {"name": "ev3"},
                "eventTime": ago(600).replace("Z", ".000000Z"),
                "series": {"count": 7, "lastObservedTime": ago(5).replace("Z", ".000000Z")},
                "reportingComponent": "c",  # core/v1's JSON name for the reporting controller
                "reportingInstance": "i",
            },
            ["5s", "", "", "", "", "c, i", "", "10m", 7, "ev3"],
            id="printEvent-series-overrides-last-seen-and-count",
        ),
        pytest.param(
            ("", "Event"),
            {"metadata": {"name": "ev4"}},
            ["<unknown>", "", "", "", "", "", "", "<unknown>", 1, "ev4"],
            id="printEvent-no-times-unknown",
        ),
        pytest.param(
            ("events.k8s.io", "Event"),
            {
                "metadata": {"name": "ev5"},
                "eventTime": ago(60).replace("Z", ".000000Z"),
                "regarding": {"kind": "Pod", "name": "p"},
                "note": "hello",
                "reason": "Pulled",
                "type": "Normal",
                "reportingController": "kubelet",
                "reportingInstance": "node-1",
            },
            ["60s", "Normal", "Pulled", "pod/p", "", "kubelet, node-1", "hello", "60s", 1, "ev5"],
            id="events.k8s.io-converted-to-core",
        ),
    ],
)
def test_print_event(kind: tuple[str, str], event: dict[str, Any], want: list[Any]) -> None:
    assert row_for(kind, event, now=NOW) == want


# --- services -------------------------------------------------------------------------------------------

LB_PORTS = [{"port": 80, "protocol": "TCP"}, {"port": 8090, "protocol": "UDP"}, {"port": 8000, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        pytest.param(
            {"type": "LoadBalancer", "clusterIPs": ["1.2.3.4"], "ports": [{"port": 80, "protocol": "TCP"}]},
            {"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"ip": "3.4.5.6"}]}},
            ["LoadBalancer", "1.2.3.4", "2.3.4.5,3.4.5.6", "80/TCP"],
            id="lb-multiple-ips",
        ),
        pytest.param(
            {"type": "LoadBalancer", "clusterIPs": ["1.3.4.5"], "ports": LB_PORTS},
            {},
            ["LoadBalancer", "1.3.4.5", "<pending>", "80/TCP,8090/UDP,8000/TCP"],
            id="lb-pending",
        ),
        pytest.param(
            {"type": "LoadBalancer", "clusterIPs": ["1.5.6.7"], "ports": LB_PORTS},
            {
                "loadBalancer": {
                    "ingress": [
                        {"ip": "3.4.5.6"},
                        {"ip": "2.3.4.5"},
                        {"ip": "5.6.7.8", "hostname": "host5678"},
                        {"hostname": "h"},
                    ]
                }
            },
            ["LoadBalancer", "1.5.6.7", "2.3.4.5,3.4.5.6,5.6.7.8,h", "80/TCP,8090/UDP,8000/TCP"],
            id="lb-sorted-ip-over-hostname-never-clipped-server-side-wide",
        ),
        pytest.param(
            {"type": "LoadBalancer", "clusterIPs": ["1.5.6.7"], "externalIPs": ["9.9.9.9"]},
            {"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}]}},
            ["LoadBalancer", "1.5.6.7", "2.3.4.5,9.9.9.9", "<none>"],
            id="lb-plus-external-ips",
        ),
        pytest.param(
            {"type": "ClusterIP", "clusterIPs": ["None"], "ports": [{"port": 53, "protocol": "UDP"}]},
            {},
            ["ClusterIP", "None", "<none>", "53/UDP"],
            id="headless",
        ),
        pytest.param(
            {
                "type": "NodePort",
                "clusterIP": "10.0.0.9",
                "externalIPs": ["1.1.1.1", "2.2.2.2"],
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
            },
            {},
            ["NodePort", "10.0.0.9", "1.1.1.1,2.2.2.2", "80:30080/TCP"],
            id="nodeport-clusterIP-fallback",
        ),
        pytest.param(
            {"type": "ExternalName", "externalName": "example.com"},
            {},
            ["ExternalName", "<none>", "example.com", "<none>"],
            id="external-name",
        ),
    ],
)
def test_print_service(spec: dict[str, Any], status: dict[str, Any], want: list[str]) -> None:
    obj = {"metadata": {"name": "svc", "creationTimestamp": ago(5)}, "spec": spec, "status": status}
    assert row_for(("", "Service"), obj, now=NOW) == ["svc", *want, "5s", "<none>"]


def test_print_service_selector() -> None:
    obj = {"metadata": {"name": "svc"}, "spec": {"type": "ClusterIP", "selector": {"b": "2", "a": "1"}}}
    assert row_for(("", "Service"), obj, now=NOW)[-1] == "a=1,b=2"


# --- small kinds and the default ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "obj", "want"),
    [
        pytest.param(
            ("", "Namespace"), {"status": {"phase": "Terminating"}}, ["x", "Terminating", "3m2s"], id="printNamespace"
        ),
        pytest.param(
            ("", "ConfigMap"),
            {"data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}},
            ["x", 3, "3m2s"],
            id="printConfigMap-data-plus-binaryData",
        ),
        pytest.param(
            ("", "Secret"),
            {"type": "Opaque", "data": {"a": "", "b": ""}, "stringData": {"b": "", "c": ""}},
            ["x", "Opaque", 3, "3m2s"],
            id="printSecret",
        ),
        pytest.param(("", "ServiceAccount"), {"secrets": [{"name": "t"}]}, ["x", 1, "3m2s"], id="printServiceAccount"),
        pytest.param(
            ("coordination.k8s.io", "Lease"),
            {"spec": {"holderIdentity": "kube-scheduler_1"}},
            ["x", "kube-scheduler_1", "3m2s"],
            id="printLease",
        ),
        pytest.param(("coordination.k8s.io", "Lease"), {"spec": {}}, ["x", "", "3m2s"], id="printLease-no-holder"),
        pytest.param(
            ("scheduling.k8s.io", "PriorityClass"),
            {"value": 2000001000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"},
            ["x", 2000001000, False, "3m2s", "PreemptLowerPriority"],
            id="printPriorityClass",
        ),
        pytest.param(
            ("policy", "PodDisruptionBudget"),
            {"spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}},
            ["x", "2", "N/A", 1, "3m2s"],
            id="printPodDisruptionBudget-int",
        ),
        pytest.param(
            ("policy", "PodDisruptionBudget"),
            {"spec": {"maxUnavailable": "50%"}},
            ["x", "N/A", "50%", 0, "3m2s"],
            id="printPodDisruptionBudget-percent",
        ),
        pytest.param(("rbac.authorization.k8s.io", "Role"), {}, ["x", ago(182)], id="defaultTableConvertor-created-at"),
    ],
)
def test_print_small_kinds(kind: tuple[str, str], obj: dict[str, Any], want: list[Any]) -> None:
    obj = {"metadata": {"name": "x", "creationTimestamp": ago(182)}, **obj}
    assert row_for(kind, obj, now=NOW) == want


def test_default_convertor_without_creation_timestamp_is_go_zero_time() -> None:
    assert row_for(("example.com", "Widget"), {"metadata": {"name": "w"}}, now=NOW) == ["w", "0001-01-01T00:00:00Z"]


def test_apiservice_rows() -> None:
    """kube-aggregator pkg/registry/apiservice/etcd/etcd.go ConvertToTable: Local or namespace/name; the Available
    condition's status, its reason in parentheses unless True."""
    kind = ("apiregistration.k8s.io", "APIService")
    local = {"metadata": {"name": "v1.a.io", "creationTimestamp": ago(182)}, "spec": {}}
    assert row_for(kind, local, now=NOW) == ["v1.a.io", "Local", "Unknown", "3m2s"]
    down = {"type": "Available", "status": "False", "reason": "MissingEndpoints"}
    remote = {**local, "spec": {"service": {"namespace": "ns", "name": "svc"}}, "status": {"conditions": [down]}}
    assert row_for(kind, remote, now=NOW) == ["v1.a.io", "ns/svc", "False (MissingEndpoints)", "3m2s"]


def test_age_is_unknown_without_creation_timestamp() -> None:
    assert row_for(("", "Namespace"), {"metadata": {"name": "n"}}, now=NOW) == ["n", "", "<unknown>"]


# --- column definitions ---------------------------------------------------------------------------------

# Columns per kind from upstream AddHandlers: "*" marks priority 1 (wide), ":type" a type other than string.
UPSTREAM_COLUMNS: dict[tuple[str, str], str] = {
    ("", "Pod"): "Name,Ready,Status,Restarts,Age,IP*,Node*,Nominated Node*,Readiness Gates*",
    (
        "",
        "Node",
    ): "Name,Status,Roles,Age,Version,Internal-IP*,External-IP*,OS-Image*,Kernel-Version*,Container-Runtime*",
    ("apps", "Deployment"): "Name,Ready,Up-to-date,Available,Age,Containers*,Images*,Selector*",
    ("apps", "ReplicaSet"): "Name,Desired:integer,Current:integer,Ready:integer,Age,Containers*,Images*,Selector*",
    ("apps", "DaemonSet"): "Name,Desired:integer,Current:integer,Ready:integer,Up-to-date:integer,Available:integer,"
    "Node Selector,Age,Containers*,Images*,Selector*",
    ("apps", "StatefulSet"): "Name,Ready,Age,Containers*,Images*",
    ("batch", "Job"): "Name,Status,Completions,Duration,Age,Containers*,Images*,Selector*",
    (
        "batch",
        "CronJob",
    ): "Name,Schedule,Timezone,Suspend:boolean,Active:integer,Last Schedule,Age,Containers*,Images*,Selector*",
    ("apps", "ControllerRevision"): "Name,Controller,Revision,Age",
    ("", "Event"): "Last Seen,Type,Reason,Object,Subobject*,Source*,Message,First Seen*,Count*,Name*",
    ("", "Namespace"): "Name,Status,Age",
    ("", "Service"): "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector*",
    ("", "ConfigMap"): "Name,Data,Age",
    ("", "Secret"): "Name,Type,Data,Age",
    ("", "ServiceAccount"): "Name,Secrets,Age",
    ("coordination.k8s.io", "Lease"): "Name,Holder,Age",
    ("", "Endpoints"): "Name,Endpoints,Age",
    ("discovery.k8s.io", "EndpointSlice"): "Name,AddressType,Ports,Endpoints,Age",
    ("scheduling.k8s.io", "PriorityClass"): "Name,Value:integer,Global-Default:boolean,Age,PreemptionPolicy",
    ("policy", "PodDisruptionBudget"): "Name,Min Available,Max Unavailable,Allowed Disruptions:integer,Age",
    ("example.com", "Widget"): "Name,Created At:date",
    ("apiregistration.k8s.io", "APIService"): "Name,Service,Available,Age",  # kube-aggregator apiservice/etcd
    ("storage.k8s.io", "StorageClass"): "Name,Provisioner,ReclaimPolicy,VolumeBindingMode,AllowVolumeExpansion,Age",
    ("storage.k8s.io", "CSINode"): "Name,Drivers:integer,Age",
    ("storage.k8s.io", "CSIDriver"): "Name,AttachRequired:boolean,PodInfoOnMount:boolean,StorageCapacity:boolean,"
    "TokenRequests,RequiresRepublish:boolean,Modes,Age",
    ("storage.k8s.io", "CSIStorageCapacity"): "Name,StorageClassName,Capacity",  # printCSIStorageCapacity: no Age
    ("storage.k8s.io", "VolumeAttachment"): "Name,Attacher,PV,Node,Attached:boolean,Age",
    ("resource.k8s.io", "DeviceClass"): "Name,Age",
    ("resource.k8s.io", "ResourceClaim"): "Name,State,Age",
    ("resource.k8s.io", "ResourceClaimTemplate"): "Name,Age",
    ("resource.k8s.io", "ResourceSlice"): "Name,Node,Driver,Pool,Age",
    ("rbac.authorization.k8s.io", "RoleBinding"): "Name,Role,Age,Users*,Groups*,ServiceAccounts*",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "Name,Role,Age,Users*,Groups*,ServiceAccounts*",
    ("", "PersistentVolume"): "Name,Capacity,Access Modes,Reclaim Policy,Status,Claim,StorageClass,"
    "VolumeAttributesClass,Reason,Age,VolumeMode*",
    ("", "PersistentVolumeClaim"): "Name,Status,Volume,Capacity,Access Modes,StorageClass,VolumeAttributesClass,Age,"
    "VolumeMode*",
    ("", "ReplicationController"): "Name,Desired:integer,Current:integer,Ready:integer,Age,Containers*,Images*,"
    "Selector*",
    ("networking.k8s.io", "IPAddress"): "Name,ParentRef",
    ("networking.k8s.io", "ServiceCIDR"): "Name,CIDRs,Age",
}
EXTRA_CELLS: dict[tuple[str, str], int] = {("networking.k8s.io", "IPAddress"): 1}
"""printIPAddress appends an age cell without a column (printers.go): upstream's rows are one cell longer."""
UPSTREAM_COLUMNS[("events.k8s.io", "Event")] = UPSTREAM_COLUMNS[("", "Event")]
NAME_FORMATTED: dict[tuple[str, str], list[str]] = {("storage.k8s.io", "VolumeAttachment"): ["Name", "Attacher"]}
"""Columns with ``format: name`` besides Name: volumeAttachmentColumnDefinitions gives Attacher one too."""


@pytest.mark.parametrize("kind", list(UPSTREAM_COLUMNS), ids=lambda k: "/".join(filter(None, k)))
def test_columns_match_upstream(kind: tuple[str, str]) -> None:
    columns = column_definitions(kind)
    got = [c["name"] + ("" if c["type"] == "string" else ":" + c["type"]) + "*" * c["priority"] for c in columns]
    assert ",".join(got) == UPSTREAM_COLUMNS[kind]
    assert all(set(c) == {"name", "type", "format", "description", "priority"} and c["description"] for c in columns)
    assert [c["name"] for c in columns if c["format"] == "name"] == NAME_FORMATTED.get(kind, ["Name"])


def test_every_printer_is_pinned_and_fills_every_column_even_for_an_empty_object() -> None:
    assert set(PRINTERS) <= set(UPSTREAM_COLUMNS)
    for kind in UPSTREAM_COLUMNS:
        assert len(row_for(kind, {}, now=NOW)) == len(column_definitions(kind)) + EXTRA_CELLS.get(kind, 0), kind


# --- the Table ------------------------------------------------------------------------------------------

OBJ = {
    "metadata": {"name": "p", "namespace": "d", "resourceVersion": "7"},
    "spec": {},
    "status": {"phase": "Succeeded"},
}


def test_table_shape_with_partial_object_metadata() -> None:
    table = to_table(("", "Pod"), [OBJ], list_meta={"resourceVersion": "9", "continue": "c"}, now=NOW)
    assert list(table) == ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"]
    assert (table["kind"], table["apiVersion"], table["metadata"]) == (
        "Table",
        "meta.k8s.io/v1",
        {"resourceVersion": "9", "continue": "c"},
    )
    assert table["columnDefinitions"] == column_definitions(("", "Pod"))
    assert table["rows"] == [
        {
            "cells": ["p", "0/0", "Succeeded", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"],
            "conditions": [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                }
            ],
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": OBJ["metadata"]},
        }
    ]


@pytest.mark.parametrize(
    ("include", "want"),
    [
        pytest.param("Object", OBJ, id="Object-embeds-the-object"),
        pytest.param(
            "",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": OBJ["metadata"]},
            id="empty-means-Metadata",
        ),
    ],
)
def test_include_object(include: str, want: dict[str, Any]) -> None:
    assert to_table(("", "Pod"), [OBJ], list_meta={}, include_object=include, now=NOW)["rows"][0]["object"] == want


def test_include_object_none_leaves_object_out() -> None:
    assert "object" not in to_table(("", "Namespace"), [OBJ], list_meta={}, include_object="None", now=NOW)["rows"][0]


def test_unknown_include_object_is_rejected_with_upstream_message() -> None:
    with pytest.raises(ValueError, match=r'^unrecognized includeObject value: "Everything"$'):
        to_table(("", "Pod"), [OBJ], list_meta={}, include_object="Everything", now=NOW)


def test_v1beta1_table_and_partial_metadata_version() -> None:
    table = to_table(("", "Node"), [OBJ], list_meta={}, now=NOW, api_version="meta.k8s.io/v1beta1")
    assert table["apiVersion"] == table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    with pytest.raises(ValueError, match=r"meta\.k8s\.io/v2"):
        to_table(("", "Node"), [OBJ], list_meta={}, now=NOW, api_version="meta.k8s.io/v2")


def test_watch_events_after_the_first_have_no_headers_and_running_pods_no_conditions() -> None:
    running = {**OBJ, "status": {"phase": "Running"}}
    table = to_table(("", "Pod"), [running], list_meta={"resourceVersion": "7"}, now=NOW, no_headers=True)
    assert table["columnDefinitions"] == []
    assert "conditions" not in table["rows"][0]
    assert table["rows"][0]["cells"] == row_for(("", "Pod"), running, now=NOW)


def test_failed_pod_row_condition_and_empty_list() -> None:
    failed = to_table(("", "Pod"), [{**OBJ, "status": {"phase": "Failed"}}], list_meta={}, now=NOW)
    assert failed["rows"][0]["conditions"] == [
        {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
    ]
    assert to_table(("", "Pod"), [], list_meta={}, now=NOW)["rows"] == []
