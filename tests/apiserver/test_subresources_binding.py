"""pods/binding clears ``status.nominatedNodeName`` (ClearingNominatedNodeNameAfterBinding, beta and on since
v1.35; upstream ``pkg/registry/core/pod/storage`` ``setPodNodeAndMetadata`` and the integration test
``TestClearingNominatedNodeNameAfterBinding``): whoever nominated the pod (preemption, the scheduler's
expectation, an external component), the bound pod carries no nomination; the rest of its status stays."""

from __future__ import annotations

import pytest

from kubeplane.client.local import LocalClient

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}


@pytest.mark.parametrize(
    "nominated",
    [
        pytest.param("node-b", id="nominated elsewhere (preemption, then bound to another node): cleared"),
        pytest.param("node-a", id="nominated to the bound node (expectation): cleared"),
        pytest.param(None, id="never nominated: nothing to clear"),
    ],
)
async def test_binding_clears_the_nominated_node_name(nominated: str | None) -> None:
    client = await LocalClient.in_memory()
    pods = client.resource("pods")
    await client.create(pods, POD, namespace="default")
    if nominated is not None:
        await client.patch(pods, "p", {"status": {"nominatedNodeName": nominated}}, namespace="default",
                           subresource="status")  # fmt: skip
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "node-a"}}
    await client.create(pods, binding, namespace="default", name="p", subresource="binding")
    bound = await client.get(pods, "p", namespace="default")
    assert bound["spec"]["nodeName"] == "node-a"
    assert "nominatedNodeName" not in bound["status"]
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]
    await client.close()
