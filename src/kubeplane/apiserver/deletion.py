"""Delete and deletecollection with kube-apiserver's semantics.

Order of decisions for one object (upstream ``genericregistry.Store.Delete``):

1. Preconditions (uid, resourceVersion) must hold, else 409 Conflict.
2. Graceful deletion (pods bound to a node and not terminal): ``deletionTimestamp`` = now + grace and
   ``deletionGracePeriodSeconds`` = grace are set and the pod stays until its kubelet deletes it with grace 0.
   A second delete may only shorten the grace period.
3. Finalizers hold deletion: ``deletionTimestamp`` is set (grace 0) and the object stays until an update removes
   the last finalizer. ``propagationPolicy`` Orphan and Foreground add the ``orphan`` / ``foregroundDeletion``
   finalizers for the garbage collector, as upstream.
4. Otherwise the key is deleted (compare-and-delete on the revision read).

Namespaces are never deleted directly: they become Terminating and the namespace controller finishes them.
The response is the object for kinds that return it (strategies.RETURNS_DELETED_OBJECT), else a Status Success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.field import new_path, not_supported
from kubeplane.store.interface import Conflict

from . import errors, params
from .auth import noderestriction
from .dryrun import dry_run
from .listing import ListOptions, list_objects
from .registry import MAX_RETRIES, Registry
from .watchcache import Obj, decode, encode


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False

    @classmethod
    def parse(cls, body: Any, query: dict[str, str]) -> DeleteOptions:
        body = body if isinstance(body, dict) else {}
        grace: Any = body.get("gracePeriodSeconds")
        if "gracePeriodSeconds" in query:  # strconv.ParseInt, as upstream's parameter codec (400 otherwise)
            grace = params.parse_int64(query["gracePeriodSeconds"])
        elif grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
            found = f"number {grace}" if isinstance(grace, float) else errors.json_type(grace)
            raise errors.bad_request(
                f"json: cannot unmarshal {found} into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
            )
        preconditions = body.get("preconditions")
        if preconditions is None:
            preconditions = {}
        policy = query.get("propagationPolicy", body.get("propagationPolicy"))
        if policy is not None and not isinstance(policy, str):
            raise errors.cannot_unmarshal(
                policy, field="DeleteOptions.propagationPolicy", go_type="v1.DeletionPropagation"
            )
        if policy not in (None, "Orphan", "Background", "Foreground"):  # upstream ValidateDeleteOptions
            err = not_supported(new_path("propagationPolicy"), policy, supported=_POLICIES)
            raise errors.invalid("meta.k8s.io", "DeleteOptions", "", [err])
        if grace is not None and not _INT64_MIN <= grace <= _INT64_MAX:  # upstream decodes it into an int64
            raise errors.cannot_unmarshal(grace, field="DeleteOptions.gracePeriodSeconds", go_type="int64")
        dry = query.get("dryRun") == "All" or dry_run(_as_list(body.get("dryRun")), verb="delete")
        if not isinstance(preconditions, dict):  # [] or "" too: a malformed precondition never means "none"
            raise errors.cannot_unmarshal(
                preconditions, field="DeleteOptions.preconditions", go_type="v1.Preconditions"
            )
        for key, go_type in (("uid", "types.UID"), ("resourceVersion", "string")):
            value = preconditions.get(key)
            if value is not None and not isinstance(value, str):
                raise errors.cannot_unmarshal(value, field=f"Preconditions.preconditions.{key}", go_type=go_type)
        return cls(grace, policy, preconditions.get("uid"), preconditions.get("resourceVersion"), dry)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_POLICIES = ("Foreground", "Background", "Orphan", "nil")
_LATEST_TIME = 253402300799.0
"""9999-12-31T23:59:59Z as Unix seconds: the latest time RFC 3339 (and metav1.Time) can write."""


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


_FINALIZER_FOR_POLICY = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}


async def delete_object(
    registry: Registry, info: ResourceInfo, namespace: str | None, name: str, options: DeleteOptions
) -> tuple[int, Obj]:
    """``(http status, body)``: 200 with the object (pods, or any object still held by grace or finalizers) or
    a Status. Upstream answers 202 only for the deprecated ``orphanDependents: false``, which kubeplane does
    not take."""
    key = info.key(name, namespace)
    strategy = registry.strategy(info)
    for _ in range(MAX_RETRIES):
        current = await registry.store.get(key)
        if current is None:
            raise errors.not_found(info.group, info.plural, name)
        obj = decode(current)
        meta = obj["metadata"]
        await noderestriction.admit_delete(registry, info, namespace, name, obj)  # upstream's deleteValidation
        check_preconditions(info, obj, options)
        if info.group == "" and info.kind == "Namespace":
            return await _terminate_namespace(registry, info, obj, current.mod_revision, options)
        if info.group == "apiextensions.k8s.io" and not meta.get("deletionTimestamp"):
            from .crds import delete_crd  # the CRD's own delete: finalizer first (crds builds on this module)

            marked = await delete_crd(registry, info, name, dry_run=options.dry_run)
            if marked is not None:
                return 200, marked
        grace = strategy.grace_period(obj, options.grace_period_seconds)
        finalizers = list(meta.get("finalizers") or [])
        policy = options.propagation_policy
        if policy is None and not set(finalizers) & set(_FINALIZER_FOR_POLICY.values()):
            policy = strategy.default_propagation_policy  # upstream shouldOrphanDependents' last resort
        wanted = _FINALIZER_FOR_POLICY.get(policy or "")
        if wanted and wanted not in finalizers:
            finalizers.append(wanted)
        if grace > 0 or finalizers:
            updated = _mark_deleting(registry, obj, grace=grace, finalizers=finalizers)
            if updated is None:  # already deleting with a shorter grace: nothing to change
                return 200, registry._with_type(info, obj)
            if options.dry_run:
                return 200, registry._with_type(info, updated)
            try:
                kv = await registry.store.update(key, encode(updated), expected_mod_revision=current.mod_revision)
            except Conflict:
                continue
            updated["metadata"]["resourceVersion"] = str(kv.mod_revision)
            return 200, registry._with_type(info, updated)
        if options.dry_run:
            return 200, _deleted_body(info, obj, strategy.returns_deleted_object)
        try:
            deleted = await registry.store.delete(key, expected_mod_revision=current.mod_revision)
        except Conflict:
            continue
        meta["resourceVersion"] = str(deleted.revision)  # as upstream: the revision of the delete itself
        await strategy.after_delete(registry, obj)  # upstream AfterDelete (a Service's addresses and ports)
        return 200, _deleted_body(info, obj, strategy.returns_deleted_object)
    raise errors.conflict(info.group, info.plural, name, "too many concurrent updates; try again")


def check_preconditions(info: ResourceInfo, obj: Obj, options: DeleteOptions) -> None:
    """409 unless the options' uid and resourceVersion preconditions hold for ``obj`` (upstream
    ``Preconditions.Check``)."""
    meta, name = obj["metadata"], obj["metadata"].get("name", "")
    if options.uid is not None and options.uid != meta.get("uid"):
        raise errors.conflict(
            info.group,
            info.plural,
            name,
            f"Precondition failed: UID in precondition: {options.uid}, UID in object meta: {meta.get('uid')}",
        )
    if options.resource_version is not None and options.resource_version != meta.get("resourceVersion"):
        raise errors.conflict(
            info.group,
            info.plural,
            name,
            f"Precondition failed: ResourceVersion in precondition: {options.resource_version}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )


def _mark_deleting(registry: Registry, obj: Obj, *, grace: int, finalizers: list[str]) -> Obj | None:
    meta = obj["metadata"]
    current_grace = meta.get("deletionGracePeriodSeconds")
    unchanged = finalizers == (meta.get("finalizers") or [])
    if meta.get("deletionTimestamp") and current_grace is not None and grace >= int(current_grace) and unchanged:
        return None
    updated = dict(obj)
    new_meta = dict(meta)
    now = registry.now()
    generation = meta.get("generation")
    if not meta.get("deletionTimestamp") and type(generation) is int and generation > 0:
        # upstream BeforeDelete (graceful) and markAsDeleting (finalizers): the first deletion mark bumps a set
        # generation, since the object's controllers must stop acting on it
        new_meta["generation"] = generation + 1
    if not meta.get("deletionTimestamp") or (current_grace is not None and grace < int(current_grace)):
        # A grace period past year 9999 cannot be written as a metav1.Time: the deadline saturates there.
        new_meta["deletionTimestamp"] = apimeta.format_time(min(now + grace, _LATEST_TIME))
        new_meta["deletionGracePeriodSeconds"] = grace
    if finalizers:
        new_meta["finalizers"] = finalizers
    updated["metadata"] = new_meta
    return updated


async def _terminate_namespace(
    registry: Registry, info: ResourceInfo, obj: Obj, mod_revision: int, options: DeleteOptions
) -> tuple[int, Obj]:
    if obj["metadata"].get("deletionTimestamp"):
        return 200, registry._with_type(info, obj)
    updated = dict(obj)
    updated["metadata"] = {
        **obj["metadata"],
        "deletionTimestamp": apimeta.format_time(registry.now()),
        "deletionGracePeriodSeconds": 0,
    }
    updated["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
    if options.dry_run:
        return 200, registry._with_type(info, updated)
    try:
        kv = await registry.store.update(
            info.key(obj["metadata"]["name"]), encode(updated), expected_mod_revision=mod_revision
        )
    except Conflict:
        raise errors.conflict(info.group, info.plural, obj["metadata"]["name"], errors.OPTIMISTIC_LOCK) from None
    updated["metadata"]["resourceVersion"] = str(kv.mod_revision)
    return 200, registry._with_type(info, updated)


def _deleted_body(info: ResourceInfo, obj: Obj, return_object: bool) -> Obj:
    """The deleted object, or upstream ``finalizeDelete``'s Status Success (``kind`` is the resource, as there)."""
    if return_object:
        return {"apiVersion": info.api_version, "kind": info.kind, **obj}
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": info.group, "kind": info.plural, "uid": meta.get("uid") or ""}
    return errors.status_object("Success", details=details)


async def delete_collection(
    registry: Registry,
    info: ResourceInfo,
    namespace: str | None,
    list_options: ListOptions,
    options: DeleteOptions,
) -> Obj:
    """Delete every matching object (each with the same options); the response lists what was deleted."""
    listed = await list_objects(registry, info, namespace, list_options)
    deleted: list[Obj] = []
    for item in listed["items"]:
        meta = item["metadata"]
        try:
            _, body = await delete_object(registry, info, meta.get("namespace"), meta["name"], options)
        except errors.APIError as exc:
            if exc.code == 404:
                continue
            raise
        deleted.append(item if body.get("kind") == "Status" else body)
    return {**listed, "items": deleted}
