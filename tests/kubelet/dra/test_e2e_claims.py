"""The resourceclaim controller and the fleet's DRA manager together, as the seeds' cluster runs them (the
scheduler's PreBind, h-dralloc's part, is played by the test writing the allocation and reservedFor): a pod using a
template gets its claim, starts once the claim is allocated to its node and reserved for it, and when it finishes
the claim is unprepared, deallocated and deleted (upstream controller.go syncClaim "delete-claim-when-done")."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

from kubeplane.client.errors import NotFoundError
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.controllers.base import ControllerContext
from kubeplane.controllers.resourceclaim import ResourceClaimController
from kubeplane.kubelet.dra.manager import RESYNC_INTERVAL
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import running_fleet

CONFIG: dict[str, Any] = {
    "csiDrivers": [],
    "nodes": [{"name": "node01", "devices": [{"driver": "gpu.example.com", "count": 2}]}],
}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
}


async def test_template_claim_lifecycle_with_controller_and_kubelet() -> None:
    async with running_fleet(CONFIG, FleetOptions()) as env:
        ctx = ControllerContext(
            client=env.client,
            informers=SharedInformerFactory(env.client, clock=env.clock, rng=random.Random(0)),
            clock=env.clock,
        )
        controller = ResourceClaimController(ctx)
        ctx.informers.start()
        await ctx.informers.wait_for_cache_sync()
        task = asyncio.create_task(controller.run())
        claims = env.client.resource("resourceclaims")
        try:
            await env.client.create(env.client.resource("resourceclaimtemplates"), TEMPLATE, namespace="default")
            containers = [{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}]
            await env.create_pod(
                "job",
                node="node01",
                containers=containers,
                restartPolicy="Never",
                annotations={"sim.kubeplane.io/duration": "30s"},
                resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
            )

            async def recorded() -> bool:
                return bool((await env.pod("job")).get("status", {}).get("resourceClaimStatuses"))

            await env.until(recorded, "the claim recorded in the pod status", step=0.1)
            pod = await env.pod("job")
            name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
            claim = await env.client.get(claims, name, namespace="default")
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node01"]}]}
            status = {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "gpu", "driver": "gpu.example.com", "pool": "node01", "device": "gpu-1"}
                        ]
                    },
                    "nodeSelector": {"nodeSelectorTerms": [term]},
                },
                "reservedFor": [{"resource": "pods", "name": "job", "uid": pod["metadata"]["uid"]}],
            }
            claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
            claim = await env.client.update(claims, claim, namespace="default")
            await env.client.update(claims, {**claim, "status": status}, namespace="default", subresource="status")
            await env.clock.advance(RESYNC_INTERVAL)
            await env.until(lambda: env.is_phase("job", "Running"), "the pod running", step=1.0)
            assert env.fleet.dra.prepared_devices("node01") == {
                f"default/{name}": [("gpu.example.com", "node01", "gpu-1")]
            }
            await env.until(lambda: env.is_phase("job", "Succeeded"), "the pod done", step=1.0)
            assert env.fleet.dra.prepared_devices("node01") == {}

            async def deleted() -> bool:
                try:
                    await env.client.get(claims, name, namespace="default")
                except NotFoundError:
                    return True
                return False

            await env.until(deleted, "the generated claim deleted", step=0.5)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await ctx.informers.stop()
            await ctx.close()
