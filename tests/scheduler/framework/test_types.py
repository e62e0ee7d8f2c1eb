"""PodInfo/NodeInfo accounting: the fast requests path equals the general formula (upstream PodRequests and
calculateResource), and NodeInfo aggregates add and remove symmetrically (upstream types_test.go)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.pods import pod_nonzero_requests, pod_requests
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, Resource

QUANTITIES = {
    "cpu": st.sampled_from(["0", "1", "100m", "250m", "1.5", "0.1", "2", "1500m", "0.0005"]),
    "memory": st.sampled_from(["0", "1Gi", "500Mi", "64Mi", "1000", "1.5Gi", "1e3"]),
    "ephemeral-storage": st.sampled_from(["1Gi", "10M"]),
    "nvidia.com/gpu": st.sampled_from(["1", "2"]),
    "hugepages-2Mi": st.sampled_from(["2Mi", "4Mi"]),
}


@st.composite
def simple_pods(draw: Any) -> dict[str, Any]:
    containers = []
    for i in range(draw(st.integers(0, 3))):
        names = draw(st.lists(st.sampled_from(sorted(QUANTITIES)), unique=True, max_size=4))
        requests = {n: draw(QUANTITIES[n]) for n in names}
        containers.append({"name": f"c{i}", "image": "x", "resources": {"requests": requests} if names else {}})
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": containers}}


@settings(max_examples=300, deadline=None)
@given(simple_pods())
def test_fast_requests_equal_the_general_formula(pod: dict[str, Any]) -> None:
    info = PodInfo(pod)
    assert info.requests == Resource.from_natural(pod_requests(pod, use_status_resources=True))
    assert (info.non_zero_cpu, info.non_zero_memory) == pod_nonzero_requests(pod, use_status_resources=True)


def test_init_containers_take_the_general_formula() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
        },
    }
    assert PodInfo(pod).requests.milli_cpu == 2000


def test_node_info_add_remove_is_symmetric() -> None:
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    ni = NodeInfo(node)
    pods = [
        PodInfo(
            {
                "metadata": {"name": f"p{i}", "namespace": "d", "uid": f"u{i}"},
                "spec": {
                    "nodeName": "n",
                    "containers": [
                        {
                            "name": "c",
                            "resources": {"requests": {"cpu": "100m"}},
                            "ports": [{"containerPort": 80, "hostPort": 8000 + i}],
                        }
                    ],
                },
            }
        )
        for i in range(3)
    ]
    for p in pods:
        ni.add_pod(p)
    assert ni.requested.milli_cpu == 300
    assert len(ni.used_ports) == 3
    assert ni.non_zero_requested.memory == 3 * 200 * 1024 * 1024
    generation = ni.generation
    assert ni.remove_pod(pods[1])
    assert not ni.remove_pod(pods[1])
    assert ni.generation > generation
    assert ni.requested.milli_cpu == 200
    assert len(ni.used_ports) == 2
    assert len(ni.pods) == 2
    assumed = pods[0].with_node_name("other")
    assert assumed.requests is pods[0].requests
    assert assumed.pod["spec"]["nodeName"] == "other"
    assert pods[0].pod["spec"]["nodeName"] == "n"
