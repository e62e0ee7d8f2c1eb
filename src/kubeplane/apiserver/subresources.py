"""Subresources with their own semantics: pods/binding, pods/eviction, {deployments,replicasets}/scale, and
patch (merge and JSON patch) on any resource or its status.

* binding (upstream ``pkg/registry/core/pod/storage``): sets ``spec.nodeName`` and the PodScheduled=True
  condition in one compare-and-put; 409 if the pod is already bound, being deleted, or has scheduling gates.
* eviction (upstream ``eviction.go``): a pod that is terminal, pending or already deleting is deleted without
  consulting budgets; otherwise the one PodDisruptionBudget selecting it must allow a disruption (429 if not),
  and its ``disruptionsAllowed`` is decremented (with the pod recorded in ``disruptedPods``) before the pod
  is deleted, so concurrent evictions cannot overspend the budget.
* scale: autoscaling/v1 Scale views of ``spec.replicas``, ``status.replicas`` and the label selector.
* finalize (namespaces): sets ``spec.finalizers``; a terminating namespace with none left goes away.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api import patch as apipatch
from kubeplane.api import strategicpatch
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.field import Error as FieldError
from kubeplane.api.validation.field import invalid, new_path, required
from kubeplane.api.views import is_pod_terminal, section, spec_of, status_of
from kubeplane.store.interface import Conflict

from . import errors
from .deletion import DeleteOptions, delete_object
from .registry import MAX_RETRIES, Registry, deep_copy
from .watchcache import Obj, decode, encode

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH)


def _success(code: int = 201) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


async def patch_object(
    registry: Registry,
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    *,
    content_type: str,
    patch: Any,
    subresource: str | None = None,
    dry_run: bool = False,
    check: Callable[[Obj], Obj] | None = None,
) -> Obj:
    """Apply a merge, JSON or strategic merge patch; ``check`` (field validation) sees and may prune the result."""
    if content_type not in PATCH_TYPES:
        raise errors.unsupported_media_type(content_type)
    if content_type == MERGE_PATCH:
        try:
            apipatch.check_merge_patch(patch)
        except apipatch.PatchError as exc:
            raise errors.bad_request(str(exc)) from None
    precondition: str | None = None
    if content_type == MERGE_PATCH and isinstance(patch, dict):
        rv = section(patch, "metadata").get("resourceVersion")
        precondition = str(rv) if rv else None

    def apply(old: Obj) -> Obj:
        try:
            if content_type == MERGE_PATCH:
                result = apipatch.json_merge_patch(old, patch)
            elif content_type == STRATEGIC_PATCH:
                if not isinstance(patch, dict):
                    raise apipatch.PatchError("a strategic merge patch must be a JSON object", code=400)
                result = strategicpatch.strategic_merge_patch(old, patch, kind=(info.group, info.kind))
            else:
                result = apipatch.json_patch(old, patch)
        except apipatch.PatchError as exc:
            reason = {422: "Invalid", 413: "RequestEntityTooLarge"}.get(exc.code, "BadRequest")
            raise errors.APIError(code=exc.code, reason=reason, message=str(exc)) from None
        if not isinstance(result, dict) or not isinstance(result.get("metadata", {}), dict):
            raise errors.bad_request("the patch did not produce an object")
        patched: Obj = result
        patched.setdefault("metadata", {})
        if check is not None:
            patched = check(patched)
        meta = patched["metadata"]
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        return patched

    return await registry.guaranteed_update(
        info, namespace, name, apply, precondition=precondition, subresource=subresource, dry_run=dry_run
    )


async def bind(registry: Registry, namespace: str, name: str, binding: Any) -> Obj:
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request was not a Binding object")
    target = binding.get("target")
    node = target.get("name") if isinstance(target, dict) else None
    if not node or not isinstance(node, str):
        raise errors.invalid("", "Binding", name, [_required("target.name")])
    pods = registry.resource("", "pods")
    metadata = binding.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Binding.metadata", go_type="v1.ObjectMeta")
    annotations = section(binding, "metadata").get("annotations") or {}
    if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
        raise errors.cannot_unmarshal(annotations, field="ObjectMeta.metadata.annotations", go_type="map[string]string")

    def assign(pod: Obj) -> Obj:
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise errors.conflict("", "pods", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("", "pods", name, f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("schedulingGates"):
            raise errors.conflict("", "pods", name, f"pod {name} has non-empty .spec.schedulingGates")
        spec["nodeName"] = node
        if annotations:
            pod["metadata"]["annotations"] = {**(pod["metadata"].get("annotations") or {}), **annotations}
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": apimeta.format_time(registry.now()),
            }
        )
        status["conditions"] = conditions
        return pod

    # Binding writes spec and status together, bypassing the main/status split on purpose (as upstream).
    await raw_update(registry, pods, namespace, name, assign)
    return _success()


async def raw_update(
    registry: Registry, info: ResourceInfo, namespace: str | None, name: str, change: Callable[[Obj], Obj]
) -> Obj:
    """Compare-and-put ``change(current)`` with no strategy: for server-internal writes that set fields the
    user-facing paths must not (binding's spec and status together, a budget's status, finalize)."""
    key = info.key(name, namespace)
    for _ in range(MAX_RETRIES):
        current = await registry.store.get(key)
        if current is None:
            raise errors.not_found(info.group, info.plural, name)
        new = change(deep_copy(decode(current)))
        try:
            kv = await registry.store.update(key, encode(new), expected_mod_revision=current.mod_revision)
        except Conflict:
            continue
        new["metadata"]["resourceVersion"] = str(kv.mod_revision)
        return new
    raise errors.conflict(info.group, info.plural, name, "too many concurrent updates; try again")


def _required(path: str) -> FieldError:
    parts = path.split(".")
    return required(new_path(parts[0], *parts[1:]))


async def evict(registry: Registry, namespace: str, name: str, eviction: Any) -> Obj:
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request was not an Eviction object")
    pods = registry.resource("", "pods")
    pod = await registry.get(pods, namespace, name)
    options = DeleteOptions.parse(eviction.get("deleteOptions") or {}, {})
    if is_pod_terminal(pod) or status_of(pod).get("phase") == "Pending" or pod["metadata"].get("deletionTimestamp"):
        await delete_object(registry, pods, namespace, name, options)
        return _success()
    pdbs_info = registry.resource("policy", "poddisruptionbudgets")
    cache = registry.cache(pdbs_info)
    cache.sync()
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for _key, pdb in cache.items(pdbs_info.collection_key(namespace)):
        try:
            selector = apilabels.label_selector_as_selector(spec_of(pdb).get("selector"))
        except ValueError:
            continue
        if not selector.empty() and selector.matches(labels):
            matching.append(pdb)
    if len(matching) > 1:
        raise errors.internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
    if matching:
        await _spend_budget(registry, pdbs_info, namespace, matching[0], name)
    await delete_object(registry, pods, namespace, name, options)
    return _success()


async def _spend_budget(registry: Registry, info: ResourceInfo, namespace: str, pdb: Obj, pod_name: str) -> None:
    pdb_name = pdb["metadata"]["name"]

    def spend(current: Obj) -> Obj:
        status = current.setdefault("status", {})
        allowed = int(status.get("disruptionsAllowed") or 0)
        observed = status.get("observedGeneration")
        if observed is not None and observed < current["metadata"].get("generation", 0):
            raise errors.too_many_requests(
                "Cannot evict pod as it would violate the pod's disruption budget.",
            )
        if allowed <= 0:
            healthy = status.get("currentHealthy", 0)
            desired = status.get("desiredHealthy", 0)
            raise errors.APIError(
                code=429,
                reason="TooManyRequests",
                message="Cannot evict pod as it would violate the pod's disruption budget.",
                details={
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {pdb_name} needs {desired} healthy pods and has "
                            f"{healthy} currently",
                        }
                    ]
                },
            )
        status["disruptionsAllowed"] = allowed - 1
        disrupted = dict(status.get("disruptedPods") or {})
        disrupted[pod_name] = apimeta.format_time(registry.now())
        status["disruptedPods"] = disrupted
        return current

    await raw_update(registry, info, namespace, pdb_name, spend)


def scale_of(info: ResourceInfo, obj: Obj) -> Obj:
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = ""
    with contextlib.suppress(ValueError):
        selector = str(apilabels.label_selector_as_selector(spec.get("selector")))
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 0))},
        "status": {"replicas": int(status.get("replicas", 0)), "selector": selector},
    }


async def get_scale(registry: Registry, info: ResourceInfo, namespace: str, name: str) -> Obj:
    return scale_of(info, await registry.get(info, namespace, name))


async def update_scale(registry: Registry, info: ResourceInfo, namespace: str, name: str, scale: Any) -> Obj:
    if not isinstance(scale, dict) or not isinstance(scale.get("spec"), dict):
        raise errors.bad_request("the body of the request was not a Scale object")
    replicas = scale["spec"].get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        err = invalid(new_path("spec", "replicas"), replicas, detail="must be greater than or equal to 0")
        raise errors.invalid("autoscaling", "Scale", name, [err])
    metadata = scale.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Scale.metadata", go_type="v1.ObjectMeta")
    rv = section(scale, "metadata").get("resourceVersion")

    def set_replicas(obj: Obj) -> Obj:
        obj.setdefault("spec", {})["replicas"] = replicas
        return obj

    updated = await registry.guaranteed_update(
        info, namespace, name, set_replicas, precondition=str(rv) if rv else None
    )
    return scale_of(info, updated)


async def finalize_namespace(registry: Registry, info: ResourceInfo, name: str, body: Any) -> Obj:
    """namespaces/NAME/finalize: set spec.finalizers; a terminating namespace with none left goes away."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was not a Namespace object")
    spec = body.get("spec")
    if spec is not None and not isinstance(spec, dict):  # a malformed body must change nothing
        raise errors.cannot_unmarshal(spec, field="Namespace.spec", go_type="v1.NamespaceSpec")
    finalizers = section(body, "spec").get("finalizers") or []
    if not isinstance(finalizers, list):
        raise errors.cannot_unmarshal(finalizers, field="NamespaceSpec.spec.finalizers", go_type="[]v1.FinalizerName")
    for item in finalizers:
        if not isinstance(item, str):
            raise errors.cannot_unmarshal(item, field="NamespaceSpec.spec.finalizers", go_type="v1.FinalizerName")

    def change(obj: Obj) -> Obj:
        obj.setdefault("spec", {})["finalizers"] = list(finalizers)
        return obj

    updated = await raw_update(registry, info, None, name, change)
    meta = updated["metadata"]
    if meta.get("deletionTimestamp") and not finalizers and not meta.get("finalizers"):
        with contextlib.suppress(Exception):
            await registry.store.delete(info.key(name))
    return updated
