"""Pod generation and observedGeneration on the API server (PodObservedGenerationTracking, GA since v1.35 and
locked on in v1.37; upstream ``pkg/registry/core/pod/strategy.go`` and the generic registry's deletion).

Pinned: a created pod has generation 1 (``PrepareForCreate``) and a spec change bumps it (``updatePodGeneration``);
a status write that leaves ``observedGeneration`` unset keeps the stored value, in ``status`` and per condition,
old values taken per condition type in order (``preserveOldObservedGeneration``); the first deletion mark bumps a
set generation, graceful (``BeforeDelete``) or held by finalizers (``markAsDeleting``), and a second delete
request does not bump it again."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.client.interface import PatchType
from kubeplane.client.local import LocalClient


def _pod(name: str = "p", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def _client() -> tuple[LocalClient, Any]:
    client = await LocalClient.in_memory()
    return client, client.resource("pods")


async def test_generation_is_one_at_create_and_moves_with_the_spec_only() -> None:
    client, pods = await _client()
    created = await client.create(pods, _pod(), namespace="default")
    assert created["metadata"]["generation"] == 1
    labelled = await client.patch(pods, "p", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    assert labelled["metadata"]["generation"] == 1  # metadata only
    status = {"status": {"observedGeneration": 1, "phase": "Pending"}}
    written = await client.patch(pods, "p", status, namespace="default", subresource="status")
    assert written["metadata"]["generation"] == 1  # status only
    image = {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    bumped = await client.patch(pods, "p", image, namespace="default", patch_type=PatchType.STRATEGIC)
    assert bumped["metadata"]["generation"] == 2
    await client.close()


async def test_a_status_update_without_observed_generation_keeps_the_stored_values() -> None:
    client, pods = await _client()
    await client.create(pods, _pod(), namespace="default")
    conditions = [
        {"type": "Ready", "observedGeneration": 1, "status": "False"},
        {"type": "custom", "observedGeneration": 1, "status": "True"},
        {"type": "custom", "observedGeneration": 1, "status": "False"},
    ]
    status = {"status": {"observedGeneration": 1, "phase": "Pending", "conditions": conditions}}
    await client.patch(pods, "p", status, namespace="default", subresource="status", patch_type=PatchType.MERGE)
    current = await client.get(pods, "p", namespace="default")
    # a whole-status update (PUT) that carries no observedGeneration anywhere, and one condition of a new type;
    # no qosClass either: upstream backfills the stored one (it is immutable)
    current["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "custom", "status": "True"},
            {"type": "custom", "observedGeneration": 5, "status": "False"},
            {"type": "Other", "status": "True"},
        ],
    }
    updated = await client.update(pods, current, namespace="default", subresource="status")
    assert updated["status"]["observedGeneration"] == 1
    assert updated["status"]["qosClass"] == "BestEffort"
    kept = [(c["type"], c.get("observedGeneration")) for c in updated["status"]["conditions"]]
    assert kept == [("Ready", 1), ("custom", 1), ("custom", 5), ("Other", None)]
    await client.close()


@pytest.mark.parametrize(
    ("body", "grace", "bound"),
    [
        pytest.param(_pod(), 30, True, id="graceful deletion of a bound pod (BeforeDelete)"),
        pytest.param(_pod(finalizers=["example.com/hold"]), 0, False, id="finalizers hold it (markAsDeleting)"),
    ],
)
async def test_the_first_deletion_mark_bumps_the_generation(body: dict[str, Any], grace: int, bound: bool) -> None:
    client, pods = await _client()
    await client.create(pods, body, namespace="default")
    if bound:
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "n1"}}
        await client.create(pods, binding, namespace="default", name="p", subresource="binding")
        assert (await client.get(pods, "p", namespace="default"))["metadata"]["generation"] == 1  # binding: none
    await client.delete(pods, "p", namespace="default", grace_period_seconds=grace)
    marked = await client.get(pods, "p", namespace="default")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["generation"] == 2
    await client.delete(pods, "p", namespace="default", grace_period_seconds=grace)
    assert (await client.get(pods, "p", namespace="default"))["metadata"]["generation"] == 2
    await client.close()
