"""Trace workloads in scenarios: the openb cluster and pod lists, arrivals at scaled creation times with deletions
at scaled deletion times through the whole control plane, and the paper's seeded order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeplane.gpu.model import GPU_MODEL_LABEL, GPU_RESOURCE
from kubeplane.gpu.openb import load_pods, paper_sequence
from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Deletion, Scenario, ScenarioError

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
)


def _nodes(tmp_path: Path) -> Path:
    """10 GPU nodes: 5 with 8 G2 GPUs, 5 with 2 T4 GPUs (50 GPUs)."""
    lines = ["sn,cpu_milli,memory_mib,gpu,model"]
    lines += [f"gpu-node-{i:02d},96000,393216,8,G2" for i in range(5)]
    lines += [f"gpu-node-{i:02d},104000,524288,2,T4" for i in range(5, 10)]
    path = tmp_path / "nodes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _deletion(i: int) -> int | None:
    """Pod i is created at trace second 100 + 10 i; most live 25-55 s, every seventh stays, pod 4 lives 0 s."""
    if i % 7 == 6:
        return None
    if i == 4:
        return 140
    return 100 + 10 * i + 25 + (i % 4) * 10


def _pods(tmp_path: Path, count: int = 30) -> Path:
    """Whole GPUs restricted to G2 and shares to T4: the default scheduler counts whole GPUs only, so a share next
    to whole GPUs on a small node could find no free device at admission; these always fit."""
    lines = [POD_HEADER]
    for i in range(count):
        num_gpu, milli = [(1, 1000), (1, 460), (0, 0), (2, 1000), (1, 250)][i % 5]
        spec = "" if num_gpu == 0 else "G2" if milli == 1000 else "T4"  # shares alone on the T4 nodes (below)
        deleted = _deletion(i)
        lines.append(
            f"trace-pod-{i:03d},4000,8192,{num_gpu},{milli},{spec},LS,Running,{100 + 10 * i},"
            f"{'' if deleted is None else deleted},{100 + 10 * i}"
        )
    path = tmp_path / "pods.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _scenario(tmp_path: Path, trace: dict[str, Any], **extra: Any) -> Scenario:
    _nodes(tmp_path)
    _pods(tmp_path)
    data = {
        "name": "trace",
        "seed": 5,
        "duration": "200s",
        "sampleInterval": "10s",
        "cluster": {"trace": {"format": "openb", "nodes": "nodes.csv"}},
        "workload": [{"trace": {"format": "openb", "pods": "pods.csv", **trace}}],
        **extra,
    }
    return Scenario.parse(data, base=tmp_path)


def test_the_trace_cluster_is_the_node_list(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {})
    assert [n.name for n in scenario.nodes] == [f"gpu-node-{i:02d}" for i in range(10)]
    assert scenario.nodes[0].capacity[GPU_RESOURCE] == "8"
    assert scenario.nodes[9].labels[GPU_MODEL_LABEL] == "T4"
    limited = _scenario(tmp_path, {}, cluster={"trace": {"nodes": "nodes.csv", "limit": 3}})
    assert len(limited.nodes) == 3
    mixed = _scenario(
        tmp_path, {}, cluster={"nodes": [{"name": "cpu-node"}, {"trace": {"nodes": "nodes.csv", "limit": 2}}],
                               "defaults": {"zone": "z1"}}
    )  # fmt: skip
    assert [n.name for n in mixed.nodes] == ["cpu-node", "gpu-node-00", "gpu-node-01"]
    assert {n.labels["topology.kubernetes.io/zone"] for n in mixed.nodes} == {"z1"}
    assert len({n.pod_cidr for n in mixed.nodes}) == 3


def test_times_order_scales_creation_and_deletion_times(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {"start": "5s", "timeScale": 0.5})
    # origin = the smallest creation time (100): pod i arrives at 5 + 0.5 * 10 i, one Arrival per distinct time
    assert [a.at for a in scenario.arrivals] == [5 + 5 * i for i in range(30)]
    assert scenario.arrivals[3].objects[0]["metadata"]["name"] == "trace-pod-003"
    expected = sorted(
        (round(5 + 0.5 * (d - 100), 6), f"trace-pod-{i:03d}") for i in range(30) if (d := _deletion(i)) is not None
    )
    assert [(d.at, d.name) for d in scenario.deletions] == expected
    assert Deletion(25.0, "Pod", "default", "trace-pod-004") in scenario.deletions  # created and deleted at 25


def test_times_order_options(tmp_path: Path) -> None:
    late = _scenario(tmp_path, {"origin": 200, "limit": 20, "namespace": "t", "schedulerName": "gpu-sched"})
    # pods created before the origin arrive at start; pods deleted before it are left out (pods 0-7 but 6)
    ats = [(a.at, len(a.objects)) for a in late.arrivals]
    assert ats[0] == (0.0, 5)  # pods 6 (never deleted), 7-9 (deleted after the origin), 10 (created at it)
    assert [a.at for a in late.arrivals][1:] == [float(10 * i) for i in range(1, 10)]
    pod = late.arrivals[0].objects[0]
    assert (pod["metadata"]["namespace"], pod["spec"]["schedulerName"]) == ("t", "gpu-sched")
    assert all(d.at > 0 for d in late.deletions)
    kept = _scenario(tmp_path, {"deletions": False, "limit": 5})
    assert kept.deletions == []
    assert sum(len(a.objects) for a in kept.arrivals) == 5


def test_a_trace_runs_with_arrivals_and_deletions_at_their_times(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {"start": "5s", "timeScale": 0.5})
    result = run(scenario)
    pods = {p["name"]: p for p in result.pods}
    assert len(pods) == 30
    for i in range(30):
        pod = pods[f"trace-pod-{i:03d}"]
        assert pod["created"] == 5 + 5 * i, pod
        deleted = _deletion(i)
        if deleted is None:
            assert (pod["finished"], pod["phase"]) == (None, "Running"), pod
        else:
            assert (pod["finished"], pod["phase"]) == (round(5 + 0.5 * (deleted - 100), 6), "Deleted"), pod
        if i != 4:  # pod 4 is deleted the instant it is created, before the scheduler sees it
            assert pod["scheduled"] == pod["created"], pod  # 50 GPUs and room to spare
    t4 = {f"gpu-node-{i:02d}" for i in range(5, 10)}
    assert {p["node"] for p in pods.values() if p["node"] and p["name"][-1] in "1469"} <= t4  # gpu_spec T4
    assert {p["node"] for p in pods.values() if p["node"] and p["name"][-1] in "0358"}.isdisjoint(t4)  # G2
    assert result.summary["pods_pending_at_end"] == 0
    again = run(scenario)
    assert again.summary["event_log_hash"] == result.summary["event_log_hash"]
    assert again.pods == result.pods


def test_the_paper_order_is_the_seeded_sequence_one_pod_per_interval(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {"order": "paper", "interval": "2s", "ratio": 0.5}, duration="120s")
    (trace,) = scenario.paper_traces
    assert trace.capacity_milli == 50_000
    assert scenario.arrivals == []
    assert scenario.deletions == []
    sequence = trace.sequence(5)
    assert trace.sequence(5) == sequence
    import random

    assert sequence == paper_sequence(load_pods(tmp_path / "pods.csv"), random.Random(5), ratio=0.5,
                                      capacity_milli=50_000)  # fmt: skip
    assert len(sequence) > 30  # 30 pods ask for 18,050 milli: tuned up to 25,000
    result = run(scenario)
    created = sorted(result.pods, key=lambda p: p["created"])
    assert [p["name"] for p in created] == [p.name for p in sequence]
    assert [p["created"] for p in created] == [2.0 * i for i in range(len(sequence))]
    assert not any(p["phase"] == "Deleted" for p in created)  # never deleted (a Failed one: see below)
    # the default scheduler counts whole GPUs only: a share may be bound where the kubelet finds no device
    assert all(p["phase"] == "Running" or p["reason"] == "UnexpectedAdmissionError" for p in created)
    other = run(scenario, seed=6)
    assert [p["name"] for p in sorted(other.pods, key=lambda p: p["created"])] != [p.name for p in sequence]
    fixed = _scenario(tmp_path, {"order": "paper", "seed": 5, "ratio": 0.5})
    assert fixed.paper_traces[0].sequence(6) == sequence  # the trace's own seed wins over the run's


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ({"format": "borg"}, "workload[0].trace.format: unknown trace format 'borg' (openb)"),
        ({"pods": "absent.csv"}, "workload[0].trace.pods: cannot read"),
        ({"order": "random"}, "workload[0].trace.order: expected times or paper, not 'random'"),
        ({"timeScale": -1}, "workload[0].trace.timeScale: must be positive"),
        ({"timeScale": 0}, "workload[0].trace.timeScale: must be positive"),
        ({"start": "-5s"}, "workload[0].trace.start: must not be negative"),
        ({"limit": -1}, "workload[0].trace.limit: expected a non-negative integer"),
        ({"interval": "1s"}, "workload[0].trace.interval: only with order: paper"),
        ({"order": "paper", "deletions": False}, "workload[0].trace.deletions: only with order: times"),
        ({"order": "paper", "ratio": 0}, "workload[0].trace.ratio: must be positive"),
        ({"order": "paper", "seed": "x"}, "workload[0].trace.seed: expected an integer"),
        ({"deletions": "yes"}, "workload[0].trace.deletions: expected true or false"),
        ({"speed": 2}, "workload[0].trace: unknown field(s) speed"),
    ],
)
def test_trace_entry_errors_are_one_line(tmp_path: Path, trace: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        _scenario(tmp_path, trace)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_trace_file_and_cluster_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(POD_HEADER + "\np1,1,1,x,0,,,,1,2,\n")
    untimed = tmp_path / "untimed.csv"
    untimed.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1,1,1,1000\n")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"workload": [{"trace": {"pods": "bad.csv"}}]},
         "workload[0].trace.pods: bad.csv line 2: num_gpu: 'x' is not an integer"),
        ({"workload": [{"trace": {"pods": "untimed.csv"}}]},
         "workload[0].trace.pods: pod p1 has no creation_time (order: times needs one)"),
        ({"cluster": {"preset": "demo"}, "workload": [{"trace": {"pods": "pods.csv", "order": "paper"}}]},
         "workload[0].trace.order: paper inflates to a share of the cluster's GPUs, and it has none"),
        ({"cluster": {"trace": {"nodes": "absent.csv"}}}, "cluster.trace.nodes: cannot read"),
        ({"cluster": {"trace": {"format": "x", "nodes": "nodes.csv"}}}, "cluster.trace.format: unknown trace format"),
        ({"cluster": {"trace": {"nodes": "nodes.csv", "limit": "all"}}},
         "cluster.trace.limit: expected a non-negative integer"),
        ({"cluster": {"trace": {}}}, "cluster.trace.nodes: needs the node list"),
        ({"cluster": {"trace": {"nodes": "nodes.csv"}, "x": 1}}, "cluster: give trace alone"),
        ({"cluster": [{"name": "a"}, {"trace": {"nodes": "nodes.csv", "zone": "z"}}]},
         "cluster[1].trace: unknown field(s) zone"),
    ]  # fmt: skip
    for extra, message in cases:
        with pytest.raises(ScenarioError) as caught:
            _scenario(tmp_path, {}, **extra)
        assert str(caught.value).startswith(message), (extra, str(caught.value))
        assert "\n" not in str(caught.value)
