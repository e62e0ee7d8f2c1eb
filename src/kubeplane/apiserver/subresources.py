"""Subresources with their own semantics: pods/binding, pods/eviction, {deployments,replicasets}/scale, and
patch (merge and JSON patch) on any resource or its status.

* binding (upstream ``pkg/registry/core/pod/storage``): sets ``spec.nodeName`` and the PodScheduled=True
  condition and clears ``status.nominatedNodeName`` (ClearingNominatedNodeNameAfterBinding, on in v1.37) in one
  compare-and-put; 409 if the pod is already bound, being deleted, or has scheduling gates.
* eviction (upstream ``eviction.go``): a pod that is terminal, pending or already deleting is deleted without
  consulting budgets; otherwise the one PodDisruptionBudget selecting it must allow a disruption (429 if not),
  and its ``disruptionsAllowed`` is decremented (with the pod recorded in ``disruptedPods``) before the pod
  is deleted, so concurrent evictions cannot overspend the budget.
* scale: autoscaling/v1 Scale views of ``spec.replicas``, ``status.replicas`` and the label selector.
* finalize (namespaces): sets ``spec.finalizers``; a terminating namespace with none left goes away.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from kubeplane.api import jsondepth, strategicpatch
from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api import patch as apipatch
from kubeplane.api.crd.resource import CustomResourceInfo
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.core import validate_namespace_finalize_update
from kubeplane.api.validation.field import invalid, new_path
from kubeplane.api.validation.pods import validate_pod_binding
from kubeplane.api.views import is_pod_terminal, section, spec_of, status_of
from kubeplane.store.interface import Conflict, StoreError

from . import errors
from .deletion import DeleteOptions, check_preconditions, delete_object
from .registry import MAX_RETRIES, Registry, deep_copy
from .watchcache import Obj, decode, encode

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH)
COPY_ON_WRITE = True
"""Whether strategic merge patches of a status take guaranteed_update's copy-on-write path (the server's way;
off, every such write copies the stored object whole first: the reference the property tests and the bench
hold the copy-on-write path to)."""


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
    manager: str | None = None,
) -> Obj:
    """Apply a merge, JSON or strategic merge patch; ``check`` (field validation) sees and may prune the result;
    ``manager`` records the change in managedFields."""
    if content_type not in PATCH_TYPES:
        raise errors.unsupported_media_type(content_type)
    if content_type == MERGE_PATCH:
        try:
            apipatch.check_merge_patch(patch)
        except apipatch.PatchError as exc:
            raise errors.bad_request(str(exc)) from None
    # copy-on-write (Registry.guaranteed_update): a strategic merge patch of a status copies only what it
    # reaches; merge and JSON patches may put the patch's own containers in their result, a check may prune it
    cow = COPY_ON_WRITE and content_type == STRATEGIC_PATCH and check is None and subresource == "status"
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
                # ``old`` is guaranteed_update's private copy of the stored object, or with ``cow`` the stored
                # object itself, which the result shares what the patch does not reach with
                result = strategicpatch.strategic_merge_patch(
                    old, patch, kind=(info.group, info.kind), consume=not cow, share=cow
                )
            else:
                result = apipatch.json_patch(old, patch)
        except apipatch.PatchError as exc:
            reason = {422: "Invalid", 413: "RequestEntityTooLarge"}.get(exc.code, "BadRequest")
            raise errors.APIError(code=exc.code, reason=reason, message=str(exc)) from None
        _check_patched_depth(result)
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
        info,
        namespace,
        name,
        apply,
        precondition=precondition,
        subresource=subresource,
        dry_run=dry_run,
        manager=manager,
        track_subresource=subresource or "",
        # the strategic merge consumes guaranteed_update's copy and copies the patch; merge and JSON patches may
        # put the patch's own containers in their result
        private_result=content_type == STRATEGIC_PATCH and check is None,
        copy_on_write=cow,
    )


def _check_patched_depth(result: Any) -> None:
    """Refuse a patched object nested deeper than can be stored (``jsondepth.MAX_DEPTH``), as upstream's
    ``jsonPatcher.applyPatchToCurrentObject`` refuses patched JSON its decoder cannot read: 422, field
    ``patch``, the JSON scanner's error from ``SimpleMetaFactory.Interpret``.

    Only a JSON patch can get here (``add`` at the end of a deep path, ``copy`` of the document into itself): a
    merge or strategic merge patch is no deeper than its document or its body, both within the limit. The
    invalid value is the patched JSON (Go's: compact, keys sorted) cut as ``summarizeData`` cuts a body;
    upstream quotes it whole, which for a document this deep can be megabytes."""
    bracket = jsondepth.too_deep(result)
    if bracket is None:
        return
    text = jsondepth.compact_prefix(result, 31).encode()
    cause = invalid(
        new_path("patch"),
        jsondepth.summarize(text),
        detail=f"couldn't get version/kind; json parse error: {jsondepth.syntax_error(bracket)}",
    )
    raise errors.invalid("", "", "", [cause])


async def bind(registry: Registry, namespace: str, name: str, binding: Any, *, dry_run: bool = False) -> Obj:
    """pods/NAME/binding (upstream ``BindingREST.Create`` and ``setPodNodeAndMetadata``), in upstream's order:
    the body's type, the name on the URL, ``ValidatePodBinding`` (422 Binding), then one compare-and-put that
    checks the ``uid``/``resourceVersion`` preconditions the binding carries (409), that the pod is not being
    deleted, not bound and not gated (409), sets ``spec.nodeName``, merges the annotations and sets
    PodScheduled=True. The bound pod must pass the Pod's validation (422 Pod) before it is written, so a
    binding can never store a pod that every later update would refuse: the stored pod passed it, the node name
    is a node name (``validate_pod_binding``) and the condition is well formed, so only the merged annotations
    (their total size) are checked again -- not the whole pod, which was a fifth of a bind's cost."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request was not a Binding object")
    metadata = binding.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Binding.metadata", go_type="v1.ObjectMeta")
    annotations = section(binding, "metadata").get("annotations") or {}
    if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
        raise errors.cannot_unmarshal(annotations, field="ObjectMeta.metadata.annotations", go_type="map[string]string")
    given = section(binding, "metadata").get("name")
    if given not in (None, "") and given != name:  # upstream refuses an empty name too; kubeplane takes the URL's
        raise errors.bad_request("name in URL does not match name in Binding object")
    errs = validate_pod_binding(binding)
    if errs:
        raise errors.invalid("", "Binding", name, errs)
    node = binding["target"]["name"]
    uid = section(binding, "metadata").get("uid") or None
    version = section(binding, "metadata").get("resourceVersion") or None
    pods = registry.resource("", "pods")

    def assign(pod: Obj) -> Obj:
        meta = pod["metadata"]
        if uid is not None and uid != meta.get("uid"):
            why = f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}"
            raise errors.conflict("", "pods", name, why)
        if version is not None and str(version) != meta.get("resourceVersion"):
            why = (
                f"Precondition failed: ResourceVersion in precondition: {version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
            )
            raise errors.conflict("", "pods", name, why)
        spec = pod.setdefault("spec", {})
        if meta.get("deletionTimestamp"):
            raise errors.conflict("", "pods", name, f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise errors.conflict("", "pods", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise errors.conflict("", "pods", name, f"pod {name} has non-empty .spec.schedulingGates")
        spec["nodeName"] = node
        if annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
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
        # ClearingNominatedNodeNameAfterBinding (beta, on since v1.35): a bound pod's nomination is stale, whoever
        # set it (the scheduler's preemption or expectation, or an external component)
        status.pop("nominatedNodeName", None)
        if annotations:  # the only part of the bound pod that can newly fail the Pod's validation
            found = apimeta.validate_annotations(meta["annotations"], new_path("metadata", "annotations"))
            if found:
                raise errors.invalid("", "Pod", name, found)
        return pod

    # Binding writes spec and status together, bypassing the main/status split on purpose (as upstream).
    await raw_update(registry, pods, namespace, name, assign, dry_run=dry_run)
    return _success()


async def raw_update(
    registry: Registry,
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    change: Callable[[Obj], Obj],
    *,
    dry_run: bool = False,
) -> Obj:
    """Compare-and-put ``change(current)`` with no strategy: for server-internal writes that set fields the
    user-facing paths must not (binding's spec and status together, a budget's status, finalize). ``change``
    validates what it writes. A dry run computes the result and writes nothing."""
    key = info.key(name, namespace)
    for _ in range(MAX_RETRIES):
        current = await registry.store.get(key)
        if current is None:
            raise errors.not_found(info.group, info.plural, name)
        new = change(decode(current))  # a fresh decode of the stored bytes: the change's own, no copy needed
        if dry_run:
            return new
        try:
            kv = await registry.store.update(key, encode(new), expected_mod_revision=current.mod_revision)
        except Conflict:
            continue
        new["metadata"]["resourceVersion"] = str(kv.mod_revision)
        return new
    raise errors.conflict(info.group, info.plural, name, "too many concurrent updates; try again")


async def evict(registry: Registry, namespace: str, name: str, eviction: Any, *, dry_run: bool = False) -> Obj:
    """pods/NAME/eviction (upstream ``EvictionREST.Create``).

    Order: the body, the name on the URL, the delete options (``propagateDryRun``: the request's ``dryRun``
    reaches the delete), then a pod that is terminal, pending or deleting is deleted without budgets. Otherwise
    the one PodDisruptionBudget selecting the pod must allow a disruption (``checkAndDecrement``: 429, or 403 for
    a negative budget or too many unconfirmed evictions), and is decremented, with the pod recorded in
    ``disruptedPods``, before the pod is deleted, so concurrent evictions cannot overspend it.

    Everything a delete can refuse from the request (options, uid and resourceVersion preconditions) is checked
    before the budget is touched. Should the delete still fail after the decrement (the pod changed in between),
    the decrement is undone: upstream leaves the budget spent until the disruption controller expires the
    ``disruptedPods`` entry (2 minutes); kubeplane restores it, so a failed eviction changes nothing."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request was not an Eviction object")
    metadata = eviction.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Eviction.metadata", go_type="v1.ObjectMeta")
    given = section(eviction, "metadata").get("name")
    if given not in (None, "") and given != name:  # upstream refuses an empty name too; kubeplane takes the URL's
        raise errors.bad_request("name in URL does not match name in Eviction object")
    raw_options = eviction.get("deleteOptions")
    if raw_options is not None and not isinstance(raw_options, dict):
        raise errors.cannot_unmarshal(raw_options, field="Eviction.deleteOptions", go_type="v1.DeleteOptions")
    options = DeleteOptions.parse(raw_options or {}, {})
    # propagateDryRun: both sides are validated to be exactly [All] or absent, so they cannot disagree here
    if dry_run and not options.dry_run:
        options = dataclasses.replace(options, dry_run=True)
    pods = registry.resource("", "pods")
    pod = await registry.get(pods, namespace, name)
    if is_pod_terminal(pod) or status_of(pod).get("phase") == "Pending" or pod["metadata"].get("deletionTimestamp"):
        await delete_object(registry, pods, namespace, name, options)
        return _success()
    check_preconditions(pods, pod, options)
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
    if not matching:
        await delete_object(registry, pods, namespace, name, options)
        return _success()
    pdb_name = matching[0]["metadata"]["name"]
    stamp = await _spend_budget(registry, pdbs_info, namespace, pdb_name, name, dry_run=options.dry_run)
    try:
        await delete_object(registry, pods, namespace, name, options)
    except BaseException:
        if stamp is not None:
            await _restore_budget(registry, pdbs_info, namespace, pdb_name, name, stamp)
        raise
    return _success()


_MAX_DISRUPTED_PODS = 2000
"""Upstream ``MaxDisruptedPodSize``: evictions the disruption controller has not confirmed yet."""
_VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


async def _spend_budget(
    registry: Registry, info: ResourceInfo, namespace: str, pdb_name: str, pod_name: str, *, dry_run: bool
) -> str | None:
    """Upstream ``checkAndDecrement``; returns the time recorded in ``disruptedPods`` (None for a dry run, which
    checks and writes nothing)."""
    stamp = apimeta.format_time(registry.now())

    def spend(current: Obj) -> Obj:
        status = current.setdefault("status", {})
        allowed = int(status.get("disruptionsAllowed") or 0)
        observed = status.get("observedGeneration")
        if observed is not None and observed < current["metadata"].get("generation", 0):
            message = f"The disruption budget {pdb_name} is still being processed by the server."
            raise _budget_refusal(message, retry_after=10)
        if allowed < 0:
            raise errors.forbidden("policy", "poddisruptionbudget", pdb_name, "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > _MAX_DISRUPTED_PODS:
            why = "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
            raise errors.forbidden("policy", "poddisruptionbudget", pdb_name, why)
        if allowed == 0:
            healthy = status.get("currentHealthy", 0)
            desired = status.get("desiredHealthy", 0)
            raise _budget_refusal(
                f"The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"
            )
        status["disruptionsAllowed"] = allowed - 1
        disrupted = dict(status.get("disruptedPods") or {})
        disrupted[pod_name] = stamp
        status["disruptedPods"] = disrupted
        return current

    await raw_update(registry, info, namespace, pdb_name, spend, dry_run=dry_run)
    return None if dry_run else stamp


def _budget_refusal(message: str, *, retry_after: int = 0) -> errors.APIError:
    """429 "Cannot evict pod as it would violate the pod's disruption budget." with one DisruptionBudget cause
    (eviction.go's checkAndDecrement)."""
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": message}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.APIError(code=429, reason="TooManyRequests", message=_VIOLATES, details=details)


async def _restore_budget(
    registry: Registry, info: ResourceInfo, namespace: str, pdb_name: str, pod_name: str, stamp: str
) -> None:
    """Undo :func:`_spend_budget` after a failed delete: give the disruption back and drop the pod's record, if the
    record is still the one this eviction wrote (the disruption controller may have recomputed the budget since,
    in which case its numbers stand). Best effort: a failure here must not hide the delete's error."""

    def restore(current: Obj) -> Obj:
        status = current.setdefault("status", {})
        disrupted = dict(status.get("disruptedPods") or {})
        if disrupted.get(pod_name) != stamp:
            raise _Unchanged
        del disrupted[pod_name]
        if disrupted:
            status["disruptedPods"] = disrupted
        else:  # omitempty: an empty map is no map
            status.pop("disruptedPods", None)
        status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) + 1
        return current

    with contextlib.suppress(_Unchanged, errors.APIError, StoreError):
        await raw_update(registry, info, namespace, pdb_name, restore)


class _Unchanged(Exception):
    """The budget was recomputed since the eviction spent it: nothing to restore."""


def scale_of(info: ResourceInfo, obj: Obj) -> Obj:
    if isinstance(info, CustomResourceInfo):
        from .crd_scale import custom_scale_of  # custom resources: the CRD's replica paths

        return custom_scale_of(info, obj)
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


async def update_scale(
    registry: Registry,
    info: ResourceInfo,
    namespace: str,
    name: str,
    scale: Any,
    *,
    dry_run: bool = False,
    manager: str | None = None,
) -> Obj:
    """PUT .../scale: upstream ``ValidateScale`` (``spec.replicas`` >= 0; absent is 0, as Go's zero value), the
    name on the URL, the resourceVersion precondition, then the target's own update validation (422 on the
    target's kind) before anything is written."""
    if not isinstance(scale, dict):
        raise errors.bad_request("the body of the request was not a Scale object")
    metadata = scale.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Scale.metadata", go_type="v1.ObjectMeta")
    spec = scale.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise errors.cannot_unmarshal(spec, field="Scale.spec", go_type="v1.ScaleSpec")
    replicas = section(scale, "spec").get("replicas")
    if replicas is None:
        replicas = 0
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        found = f"number {replicas}" if isinstance(replicas, float) else errors.json_type(replicas)
        raise errors.bad_request(
            f"json: cannot unmarshal {found} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if not -(2**31) <= replicas < 2**31:
        raise errors.bad_request(
            f"json: cannot unmarshal number {replicas} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if replicas < 0:
        err = invalid(new_path("spec", "replicas"), replicas, detail="must be greater than or equal to 0")
        raise errors.invalid("autoscaling", "Scale", name, [err])
    given = section(scale, "metadata").get("name")
    if given not in (None, "") and given != name:  # upstream's update handler (checkName)
        raise errors.bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
    rv = section(scale, "metadata").get("resourceVersion")

    def set_replicas(obj: Obj) -> Obj:
        if isinstance(info, CustomResourceInfo):
            from .crd_scale import set_custom_replicas

            set_custom_replicas(info, obj, replicas)
            return obj
        obj.setdefault("spec", {})["replicas"] = replicas
        return obj

    updated = await registry.guaranteed_update(
        info,
        namespace,
        name,
        set_replicas,
        precondition=str(rv) if rv else None,
        dry_run=dry_run,
        manager=manager,
        track_subresource="scale",
    )
    return scale_of(info, updated)


async def finalize_namespace(
    registry: Registry, info: ResourceInfo, name: str, body: Any, *, dry_run: bool = False
) -> Obj:
    """namespaces/NAME/finalize: set spec.finalizers; a terminating namespace with none left goes away.

    As upstream's ``FinalizeREST.Update``: the name on the URL, the resourceVersion precondition (409), and
    ``ValidateNamespaceFinalizeUpdate`` (422 Namespace, each finalizer at its index) before the write."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was not a Namespace object")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.cannot_unmarshal(metadata, field="Namespace.metadata", go_type="v1.ObjectMeta")
    spec = body.get("spec")
    if spec is not None and not isinstance(spec, dict):  # a malformed body must change nothing
        raise errors.cannot_unmarshal(spec, field="Namespace.spec", go_type="v1.NamespaceSpec")
    finalizers = section(body, "spec").get("finalizers") or []
    if not isinstance(finalizers, list):
        raise errors.cannot_unmarshal(finalizers, field="NamespaceSpec.spec.finalizers", go_type="[]v1.FinalizerName")
    for item in finalizers:
        if not isinstance(item, str):
            raise errors.cannot_unmarshal(item, field="NamespaceSpec.spec.finalizers", go_type="v1.FinalizerName")
    given = section(body, "metadata").get("name")
    if given not in (None, "") and given != name:
        raise errors.bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
    rv = section(body, "metadata").get("resourceVersion")

    def change(obj: Obj) -> Obj:
        if rv and str(rv) != obj["metadata"].get("resourceVersion"):
            raise errors.conflict(info.group, info.plural, name, errors.OPTIMISTIC_LOCK)
        old = deep_copy(obj)
        obj.setdefault("spec", {})["finalizers"] = list(finalizers)
        found = validate_namespace_finalize_update(obj, old)
        if found:
            raise errors.invalid(info.group, info.kind, name, found)
        return obj

    updated = await raw_update(registry, info, None, name, change, dry_run=dry_run)
    meta = updated["metadata"]
    if meta.get("deletionTimestamp") and not finalizers and not meta.get("finalizers") and not dry_run:
        with contextlib.suppress(Exception):
            await registry.store.delete(info.key(name))
    return updated
