"""The simulated kubelet declares what a v1.37 kubelet with default feature gates declares in
``node.status.declaredFeatures`` (k8s.io/component-helpers nodedeclaredfeatures DiscoverNodeFeatures: sorted)."""

from __future__ import annotations

from kubeplane.api.nodedeclaredfeatures import kubelet_declared_features
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import running_fleet


async def test_registered_node_declares_the_default_features() -> None:
    async with running_fleet([{"name": "n1"}], FleetOptions()) as env:
        node = await env.client.get(env.nodes, "n1")
        assert node["status"]["declaredFeatures"] == kubelet_declared_features()
        assert node["status"]["declaredFeatures"] == sorted(node["status"]["declaredFeatures"])
        assert "RestartAllContainersOnContainerExits" in node["status"]["declaredFeatures"]
