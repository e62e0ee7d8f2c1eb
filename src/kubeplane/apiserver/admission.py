"""Admission on create, in upstream's order for the plugins kubeplane implements.

* NamespaceLifecycle: the namespace must exist (404; looked up in the store when the cache does not have it, as
  upstream's live lookup) and not be terminating (403).
* ServiceAccount (when the registry runs it): a pod's service account, its token volume and pull secrets
  (:mod:`kubeplane.apiserver.admission_serviceaccount`).
* Priority: a pod's ``priorityClassName`` resolves to ``spec.priority`` and ``spec.preemptionPolicy``; an
  unknown class is 403; without a class the globalDefault class applies, else priority 0 and
  PreemptLowerPriority. A pod that gives a priority or preemptionPolicy other than the computed one is 403.
* DefaultTolerationSeconds: pods tolerate ``node.kubernetes.io/not-ready`` and ``unreachable`` (NoExecute) for
  300 s unless they say otherwise.
* NodeRestriction (requesters in system:nodes; also on deletes and on the pods/eviction, pods/binding and
  serviceaccounts/token creates): :mod:`kubeplane.apiserver.auth.noderestriction`.
* DefaultStorageClass, StorageObjectInUseProtection (create) and PersistentVolumeClaimResize (update):
  :mod:`kubeplane.apiserver.admission_storage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.api.priority import global_default_class
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import status_of

from . import admission_serviceaccount, admission_storage, dra_admin, errors
from .auth import escalation, noderestriction

if TYPE_CHECKING:
    from .registry import Registry

DEFAULT_TOLERATION_SECONDS = 300
_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


async def admit_create(registry: Registry, info: ResourceInfo, obj: dict[str, Any]) -> None:
    if info.namespaced:
        namespace = obj["metadata"]["namespace"]
        namespaces = registry.resource("", "namespaces")
        ns = registry.get_cached(namespaces, None, namespace)
        if ns is None:
            # upstream's last resort, a live read: a namespace newer than the cache is not missing (the cache of
            # an etcd store is fed by a watch, so it can lag a create that already returned)
            ns = await registry.get_live(namespaces, None, namespace)
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp") or status_of(ns).get("phase") == "Terminating":
            raise errors.forbidden(
                info.group,
                info.plural,
                str(obj["metadata"].get("name") or ""),
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )
    await noderestriction.admit_create(registry, info, obj)  # requesters in system:nodes only
    await escalation.admit(registry, info, obj, None)  # roles and bindings: no privilege escalation
    await admission_storage.admit_create(registry, info, obj)
    if info.group == "" and info.kind == "Pod":
        if registry.service_account_admission:
            await admission_serviceaccount.admit(registry, obj)
        _admit_priority(registry, obj)
        _default_tolerations(obj)


async def admit_update(
    registry: Registry, info: ResourceInfo, new: dict[str, Any], old: dict[str, Any], subresource: str | None
) -> None:
    """Validating admission of an update (after the strategy's validation, as upstream's updateValidation);
    NodeRestriction first, for requesters in system:nodes (upstream runs it in the mutating phase)."""
    await noderestriction.admit_update(registry, info, new, old, subresource)
    await escalation.admit(registry, info, new, old)
    admission_storage.validate_update(registry, info, new, old, subresource)
    await dra_admin.admit_status_update(registry, info, new, old, subresource)


def _admit_priority(registry: Registry, pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    classes = registry.resource("scheduling.k8s.io", "priorityclasses")
    name = spec.get("priorityClassName")
    pc: Mapping[str, Any] | None = None
    if name:
        pc = registry.get_cached(classes, None, str(name))
        if pc is None:
            raise errors.forbidden(
                "",
                "pods",
                str(pod["metadata"].get("name") or ""),
                f"no PriorityClass with name {name} was found",
            )
    else:
        pc = global_default_class(registry.cache(classes).objects.values())
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value", 0)) if pc is not None else 0
    _set_computed(pod, "priority", "the integer value of priority", value)
    # A PriorityClass's preemptionPolicy defaults to PreemptLowerPriority, as does the policy without a class.
    policy = str((pc.get("preemptionPolicy") if pc is not None else None) or "PreemptLowerPriority")
    _set_computed(pod, "preemptionPolicy", "the string value of PreemptionPolicy", policy)


def _set_computed(pod: dict[str, Any], field: str, what: str, computed: object) -> None:
    """Set ``spec.<field>`` to what admission computed; a different value given by the user is 403 (upstream's
    message)."""
    spec = pod["spec"]
    given = spec.get(field)
    if given is not None and given != computed:
        raise errors.forbidden(
            "",
            "pods",
            str(pod["metadata"].get("name") or ""),
            f"{what} ({given}) must not be provided in pod spec; priority admission controller computed "
            f"{computed} from the given PriorityClass name",
        )
    spec[field] = computed


def _default_tolerations(pod: dict[str, Any]) -> None:
    spec = pod["spec"]
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return
    for key in _TOLERATED:
        covered = any(
            isinstance(t, dict)
            and t.get("effect") in (None, "", "NoExecute")
            and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations
