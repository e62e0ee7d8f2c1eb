"""The resourceclaim controller over the in-memory API server (upstream pkg/controller/resourceclaim/controller_test.go
TestSyncHandler: each test names the case it pins). The controller's workers are not run (``run=False``): each test
calls ``sync`` with upstream's key (``pod:ns/name`` or ``claim:ns/name``) once, as TestSyncHandler does, after the
informers have the objects; the end-to-end test at the bottom runs the workers."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.podclaims import DELETE_PROTECTION_FINALIZER
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.resourceclaim import POD_RESOURCE_CLAIM_ANNOTATION, ResourceClaimController
from kubeplane.controllers.resourceclaim_create import generate_name
from tests.controllers import harness
from tests.controllers.harness import eventually, pod_obj, settle

NS = "default"  # upstream: my-namespace (the in-memory server has default)
POD = "test-pod"
POD_CLAIM = "acme-resource"
TEMPLATE = "my-template"
Env = harness.Env[ResourceClaimController]


def template() -> Obj:
    spec = {
        "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "my-resource-class"}}]}},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE},
        "spec": spec,
    }


def pod_with_claim(*, node: str = "", name: str = POD) -> Obj:
    pod = pod_obj(name, node=node, namespace=NS)
    pod["spec"]["resourceClaims"] = [{"name": POD_CLAIM, "resourceClaimTemplateName": TEMPLATE}]
    return pod


def claim(name: str, *, owner: Obj | None = None, annotate: bool = False, finalizer: bool = True) -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if owner is not None:
        om = owner["metadata"]
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": om["name"], "uid": om["uid"], "controller": True}
        ]
    if annotate:
        meta["annotations"] = {POD_RESOURCE_CLAIM_ANNOTATION: POD_CLAIM}
    if finalizer:
        meta["finalizers"] = [DELETE_PROTECTION_FINALIZER]
    spec = {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "my-resource-class"}}]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": spec}


ALLOCATION: Obj = {
    "devices": {"results": [{"request": "req-0", "driver": "gpu.example.com", "pool": "worker", "device": "gpu-0"}]},
    "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]
    },
}


async def _create(env: Env, plural: str, obj: Obj) -> Obj:
    return await env.client.create(env.res(plural), obj, namespace=NS)


async def _status(env: Env, plural: str, obj: Obj, status: Obj) -> Obj:
    """Update ``obj``'s status, ``status`` merged over what it has (pods keep their qosClass)."""
    merged = {**obj.get("status", {}), **status}
    return await env.client.update(env.res(plural), {**obj, "status": merged}, namespace=NS, subresource="status")


async def _claims(env: Env) -> list[Obj]:
    return list((await env.client.list(env.res("resourceclaims"), namespace=NS))["items"])


async def _pod(env: Env, name: str = POD) -> Obj:
    return await env.client.get(env.res("pods"), name, namespace=NS)


async def _sync(env: Env, key: str) -> None:
    await settle()
    await env.controller.sync(key)
    await settle()


def _run(setup: Any = None) -> Any:
    return harness.running(ResourceClaimController, run=False, setup=setup)


async def test_create_claim_from_template() -> None:
    """ "create": a claim generated from the template, recorded in the pod's resourceClaimStatuses."""
    async with _run() as env:
        await _create(env, "resourceclaimtemplates", template())
        pod = await _create(env, "pods", pod_with_claim())
        await _sync(env, f"pod:{NS}/{POD}")
        [made] = await _claims(env)
        meta = made["metadata"]
        assert meta["generateName"] == f"{POD}-{POD_CLAIM}-"
        assert meta["name"].startswith(f"{POD}-{POD_CLAIM}-")
        assert len(meta["name"]) == len(meta["generateName"]) + 5
        assert meta["annotations"] == {"a": "b", POD_RESOURCE_CLAIM_ANNOTATION: POD_CLAIM}
        assert meta["labels"] == {"app": "x"}
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": POD,
                "uid": pod["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        # the template's spec, with the API's defaults (SetDefaults_ExactDeviceRequest: ExactCount, count 1)
        requests = [{"name": "req-0", "exactly": {"deviceClassName": "my-resource-class", "allocationMode":
                     "ExactCount", "count": 1}}]  # fmt: skip
        assert made["spec"] == {"devices": {"requests": requests}}
        statuses = (await _pod(env))["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": POD_CLAIM, "resourceClaimName": meta["name"]}]
        # "nop": a second sync changes nothing.
        await _sync(env, f"pod:{NS}/{POD}")
        assert [c["metadata"]["name"] for c in await _claims(env)] == [meta["name"]]


async def test_recreate_a_recorded_claim_that_was_deleted() -> None:
    """ "recreate": the status names a claim that is gone -> a new one is created and recorded."""
    async with _run() as env:
        await _create(env, "resourceclaimtemplates", template())
        pod = await _create(env, "pods", pod_with_claim())
        await _status(env, "pods", pod, {"resourceClaimStatuses": [{"name": POD_CLAIM, "resourceClaimName": "gone"}]})
        await _sync(env, f"pod:{NS}/{POD}")
        [made] = await _claims(env)
        statuses = (await _pod(env))["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": POD_CLAIM, "resourceClaimName": made["metadata"]["name"]}]


async def test_missing_template_is_an_error_and_a_warning_event() -> None:
    """ "missing-template": the sync fails (retried) and the pod gets FailedResourceClaimCreation."""
    async with _run() as env:
        await _create(env, "pods", pod_with_claim())
        await settle()
        with pytest.raises(RuntimeError, match="resource claim template"):
            await env.controller.sync(f"pod:{NS}/{POD}")
        assert await _claims(env) == []

        async def event() -> list[Obj]:
            items = (await env.client.list(env.res("events"), namespace=NS))["items"]
            return [e for e in items if e["reason"] == "FailedResourceClaimCreation"]

        [ev] = await eventually(event, "the warning event")
        assert ev["type"] == "Warning"
        assert ev["source"]["component"] == "resource_claim"
        assert ev["message"].startswith(f'PodResourceClaim {POD_CLAIM}: resource claim template "{TEMPLATE}": ')


async def test_find_existing_claim_by_annotation() -> None:
    """ "find-existing-claim-by-label": a claim owned by the pod with the pod-claim-name annotation is adopted."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim())
        await _create(env, "resourceclaims", claim("orphan", owner=pod, annotate=True))
        await _sync(env, f"pod:{NS}/{POD}")
        assert [c["metadata"]["name"] for c in await _claims(env)] == ["orphan"]
        statuses = (await _pod(env))["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": POD_CLAIM, "resourceClaimName": "orphan"}]


async def test_created_claim_is_found_in_the_mutation_cache() -> None:
    """ "find-created-claim-in-cache": a claim the controller created but the informer has not seen is reused."""
    async with _run() as env:
        await _create(env, "resourceclaimtemplates", template())
        await _create(env, "pods", pod_with_claim())
        await settle()
        ctrl = env.controller
        pod = ctrl.pod_lister.get(NS, POD)
        assert pod is not None
        made: dict[str, str] = {}
        await ctrl._handle_claim(pod, pod["spec"]["resourceClaims"][0], made)
        again: dict[str, str] = {}
        await ctrl._handle_claim(pod, pod["spec"]["resourceClaims"][0], again)  # before the informer sees it
        assert made == again
        assert len(await _claims(env)) == 1


async def test_no_such_pod_deleted_pod_and_pod_without_claims_do_nothing() -> None:
    """ "no-such-pod", "pod-deleted", "no-volumes"."""
    async with _run() as env:
        await _create(env, "resourceclaimtemplates", template())
        await _sync(env, f"pod:{NS}/{POD}")
        await _create(env, "pods", pod_obj("plain", namespace=NS))
        await _sync(env, f"pod:{NS}/plain")
        held = pod_with_claim()
        held["metadata"]["finalizers"] = ["example.com/hold"]
        await _create(env, "pods", held)
        await env.client.delete(env.res("pods"), POD, namespace=NS)
        await _sync(env, f"pod:{NS}/{POD}")
        assert await _claims(env) == []


async def test_wrong_claim_owner_is_an_error() -> None:
    """ "wrong-claim-owner": the recorded claim is not controlled by the pod and no template exists."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim())
        await _create(env, "resourceclaims", claim("conflict"))
        await _status(
            env, "pods", pod, {"resourceClaimStatuses": [{"name": POD_CLAIM, "resourceClaimName": "conflict"}]}
        )
        await settle()
        with pytest.raises(RuntimeError):
            await env.controller.sync(f"pod:{NS}/{POD}")
        assert [c["metadata"]["name"] for c in await _claims(env)] == ["conflict"]


async def _reserved_claim(env: Env, pod: Obj, *, extra: list[Obj] = (), **kw: Any) -> Obj:  # type: ignore[assignment]
    made = await _create(env, "resourceclaims", claim("test-pod-acme-resource", owner=pod, **kw))
    ref = {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    return await _status(env, "resourceclaims", made, {"allocation": ALLOCATION, "reservedFor": [ref, *extra]})


async def test_stay_reserved_while_the_pod_may_run() -> None:
    """ "stay-reserved-seen": the pod exists and is not done -> nothing changes."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim(node="worker"))
        before = await _reserved_claim(env, pod)
        await _sync(env, f"claim:{NS}/test-pod-acme-resource")
        [after] = await _claims(env)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_clear_reserved_and_deallocate_when_the_pod_is_gone() -> None:
    """ "clear-reserved-structured": the pod no longer exists -> reservedFor emptied, allocation and the
    delete-protection finalizer removed (claim not owned by a live pod, so kept)."""
    async with _run() as env:
        ghost = {"metadata": {"name": "ghost", "uid": "uid-ghost", "namespace": NS}}
        await _reserved_claim(env, ghost)
        await _sync(env, f"claim:{NS}/test-pod-acme-resource")
        [after] = await _claims(env)
        assert "reservedFor" not in after.get("status", {})
        assert "allocation" not in after.get("status", {})
        assert after["metadata"].get("finalizers", []) == []


async def test_dont_clear_when_another_consumer_remains() -> None:
    """ "dont-clear-reserved-structured": one of two consumers is gone -> only its entry goes, allocation stays."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim(node="worker"))
        other = {"resource": "pods", "name": "test-pod-II", "uid": "uidpod1-II"}
        await _reserved_claim(env, pod, extra=[other])
        await _sync(env, f"claim:{NS}/test-pod-acme-resource")
        [after] = await _claims(env)
        assert [r["name"] for r in after["status"]["reservedFor"]] == [POD]
        assert after["status"]["allocation"] == ALLOCATION
        assert after["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]


async def test_deleted_unreserved_claim_loses_allocation_and_finalizer() -> None:
    """ "structured-deleted": a claim being deleted without consumers is deallocated and unblocked."""
    async with _run() as env:
        made = await _create(env, "resourceclaims", claim("lone"))
        await _status(env, "resourceclaims", made, {"allocation": ALLOCATION})
        await env.client.delete(env.res("resourceclaims"), "lone", namespace=NS)
        await _sync(env, f"claim:{NS}/lone")

        async def gone() -> bool:
            return await _claims(env) == []

        await eventually(gone, "the claim removed once its finalizer went")


async def test_generated_claim_of_a_finished_pod_is_deleted() -> None:
    """ "delete-claim-when-done": the owning pod Succeeded -> reservation dropped, allocation removed, claim
    deleted."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim(node="worker"))
        await _reserved_claim(env, pod)
        pod = await _status(env, "pods", await _pod(env), {"phase": "Succeeded"})
        await _sync(env, f"claim:{NS}/test-pod-acme-resource")
        assert await _claims(env) == []


async def test_reserve_an_allocated_claim_for_a_scheduled_pod() -> None:
    """ "add-reserved": a pod bound to a node whose claim is allocated but not reserved for it gets reserved."""
    async with _run() as env:
        pod = await _create(env, "pods", pod_with_claim(node="worker"))
        made = await _create(env, "resourceclaims", claim("mine", owner=pod, annotate=True))
        await _status(env, "resourceclaims", made, {"allocation": ALLOCATION})
        await _status(env, "pods", pod, {"resourceClaimStatuses": [{"name": POD_CLAIM, "resourceClaimName": "mine"}]})
        await _sync(env, f"pod:{NS}/{POD}")
        [after] = await _claims(env)
        assert after["status"]["reservedFor"] == [{"resource": "pods", "name": POD, "uid": pod["metadata"]["uid"]}]


def test_generate_name_truncates_both_parts() -> None:
    """handleClaim's generateName: at most 57 characters, both parts cut in proportion."""
    assert generate_name("pod", "claim") == "pod-claim-"
    long = generate_name("p" * 60, "c" * 30)
    assert len(long) <= 57
    assert long == "p" * 37 + "-" + "c" * 18


async def test_end_to_end_claim_created_then_deleted_when_pod_finishes() -> None:
    """Workers running: a pod's claim appears, is recorded; when the pod succeeds the claim is deleted."""
    async with harness.running(ResourceClaimController) as env:
        await _create(env, "resourceclaimtemplates", template())
        await _create(env, "pods", pod_with_claim(node="worker"))

        async def recorded() -> Any:
            return (await _pod(env)).get("status", {}).get("resourceClaimStatuses")

        [status] = await eventually(recorded, "the claim recorded")
        made = await env.client.get(env.res("resourceclaims"), status["resourceClaimName"], namespace=NS)
        ref = {"resource": "pods", "name": POD, "uid": (await _pod(env))["metadata"]["uid"]}
        await _status(env, "resourceclaims", made, {"allocation": ALLOCATION, "reservedFor": [ref]})
        await _status(env, "pods", await _pod(env), {**(await _pod(env))["status"], "phase": "Succeeded"})

        async def deleted() -> bool:
            try:
                await env.client.get(env.res("resourceclaims"), status["resourceClaimName"], namespace=NS)
            except NotFoundError:
                return True
            return False

        await env.advance_until(deleted, "the generated claim deleted", step=0.1)


async def test_a_terminal_pods_deleted_claim_is_not_recreated() -> None:
    """kubernetes/kubernetes#141274 and its fix #141276 (not yet in a release): a Succeeded pod is cleanup-only. Its
    generated claim, deleted by syncClaim ("delete-claim-when-done"), must not be recreated by syncPod, else the two
    alternate for ever (a DRA simulation whose pods finish never ended)."""
    async with _run() as env:
        await _create(env, "resourceclaimtemplates", template())
        pod = await _create(env, "pods", pod_with_claim(node="worker"))
        statuses = {"resourceClaimStatuses": [{"name": POD_CLAIM, "resourceClaimName": "gone"}], "phase": "Succeeded"}
        await _status(env, "pods", pod, statuses)
        await settle()
        needs, reason = env.controller._pod_needs_work(await _pod(env))
        assert (needs, reason) == (False, "pod has terminated")
        await _sync(env, f"pod:{NS}/{POD}")
        assert await _claims(env) == []
