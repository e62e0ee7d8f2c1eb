"""NodeRestriction admission: a kubelet may write only its own node's objects (upstream
``plugin/pkg/admission/noderestriction/admission.go`` and ``k8s.io/kubelet/pkg/apis/well_known_labels.go``,
v1.37, with RecoverVolumeExpansionFailure and DynamicResourceAllocation on).

Applies only when the requester (:func:`kubeplane.apiserver.auth.context.requester`) is a node
(:func:`kubeplane.apiserver.auth.node.node_identity`); everyone else, and the server's own calls, pass untouched.
The Node authorizer lets nodes create/update/delete pods, nodes, leases, CSINodes and resource slices without
seeing the objects; this plugin holds each write to the node's own objects:

* pods: only mirror pods bound to the node, owned by (a controller reference to) its Node with the Node's uid,
  referencing no service account, secret, configmap, ClusterTrustBundle or PVC; delete only pods bound to it;
  status updates only of its pods, without changing labels or ``status.resourceClaimStatuses``; evictions only of
  its pods; no other pod subresource.
* nodes: only its own Node; no configSource; on update no taint changes; labels under ``node-restriction.kubernetes.io``
  and unknown ``kubernetes.io`` / ``k8s.io`` labels (outside the kubelet's well-known set) may not be set or changed.
* PVCs: only status updates that change nothing but ``status.capacity``, ``status.conditions`` and the expansion
  recovery fields.
* serviceaccounts/token: bound to a pod (with uid) that runs on the node.
* leases (in ``kube-node-lease``) and CSINodes named after the node; resource slices of the node (create and
  delete).

Refusals are ``admission.NewForbidden``: 403 ``<resource> "<name>" is forbidden: <upstream's reason>`` (the name
of the request, else of the object, else ``Unknown``); a pod or Node looked up that does not exist is its 404.
A refused write changes nothing: every check runs before the write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.api.node_labels import is_kubelet_label, is_kubernetes_label, label_namespace
from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver import errors

from .context import requester
from .node import NODE_LEASE_NAMESPACE, node_identity
from .node_graph import MIRROR_POD_ANNOTATION, pod_configmap_names, pod_secret_names

if TYPE_CHECKING:
    from kubeplane.apiserver.registry import Registry

Obj = Mapping[str, Any]

LABEL_NAMESPACE_NODE_RESTRICTION = "node-restriction.kubernetes.io"
"""``v1.LabelNamespaceNodeRestriction``."""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Obj | None) -> Mapping[str, Any]:
    return _map(obj.get("metadata")) if obj is not None else {}


def _spec(obj: Obj | None) -> Mapping[str, Any]:
    return _map(obj.get("spec")) if obj is not None else {}


def _requesting_node() -> str | None:
    """The requesting node's name, None when the requester is not a node; an identified node without a name is
    refused by the caller (``could not determine node from user``)."""
    node, is_node = node_identity(requester())
    return node if is_node else None


class _Request:
    """The ``admission.Attributes`` the checks need: resource, subresource, name, operation, objects."""

    def __init__(
        self,
        info: ResourceInfo,
        operation: str,
        *,
        subresource: str = "",
        name: str = "",
        namespace: str = "",
        obj: Obj | None = None,
        old: Obj | None = None,
    ) -> None:
        self.info, self.operation, self.subresource = info, operation, subresource
        self.name, self.namespace, self.obj, self.old = name, namespace, obj, old

    def forbidden(self, why: str) -> errors.APIError:
        """``admission.NewForbidden`` (``extractResourceName``: the request's name, else the object's name or
        generateName, else ``Unknown``)."""
        name = self.name
        if not name:
            meta = _meta(self.obj)
            name = str(meta.get("name") or meta.get("generateName") or "Unknown")
        return errors.forbidden(self.info.group, self.info.plural, name, why)


# -- entry points (the hooks in admission.py, dispatch.py, deletion.py) -------------------------------------------


async def admit_create(registry: Registry, info: ResourceInfo, obj: Obj, *, subresource: str = "") -> None:
    node = _requesting_node()
    if node is not None:
        meta = _meta(obj)
        request = _Request(info, "CREATE", subresource=subresource, namespace=str(meta.get("namespace") or ""), obj=obj)
        await _admit(registry, node, request)


async def admit_update(registry: Registry, info: ResourceInfo, new: Obj, old: Obj, subresource: str | None) -> None:
    node = _requesting_node()
    if node is not None:
        meta = _meta(old)
        request = _Request(
            info,
            "UPDATE",
            subresource=subresource or "",
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            obj=new,
            old=old,
        )
        await _admit(registry, node, request)


async def admit_delete(registry: Registry, info: ResourceInfo, namespace: str | None, name: str, old: Obj) -> None:
    """Upstream's ``deleteValidation`` of one object (a delete, or each item of a deletecollection)."""
    node = _requesting_node()
    if node is not None:
        await _admit(registry, node, _Request(info, "DELETE", name=name, namespace=namespace or "", old=old))


async def admit_subresource_create(
    registry: Registry, info: ResourceInfo, subresource: str, namespace: str, name: str, body: Any
) -> None:
    """A create on a subresource (pods/eviction, pods/binding, serviceaccounts/token): the request's name is the
    parent's."""
    node = _requesting_node()
    if node is not None:
        obj = body if isinstance(body, Mapping) else {}
        request = _Request(info, "CREATE", subresource=subresource, name=name, namespace=namespace, obj=obj)
        await _admit(registry, node, request)


# -- upstream's Admit ----------------------------------------------------------------------------------------------


async def _admit(registry: Registry, node: str, a: _Request) -> None:
    if not node:
        user = requester()
        raise a.forbidden(f'could not determine node from user "{user.name if user else ""}"')
    group, resource = a.info.group, a.info.plural
    if group == "" and resource == "pods":
        if a.subresource == "":
            await _admit_pod(registry, node, a)
        elif a.subresource == "status":
            _admit_pod_status(node, a)
        elif a.subresource == "eviction":
            await _admit_pod_eviction(registry, node, a)
        else:
            raise a.forbidden(
                f"unexpected pod subresource \"{a.subresource}\", only 'status' and 'eviction' are allowed"
            )
    elif group == "" and resource == "nodes":
        _admit_node(node, a)
    elif group == "" and resource == "persistentvolumeclaims":
        if a.subresource != "status":
            raise a.forbidden("may only update PVC status")
        _admit_pvc_status(node, a)
    elif group == "" and resource == "serviceaccounts":
        await _admit_service_account(registry, node, a)
    elif group == "coordination.k8s.io" and resource == "leases":
        _admit_named(node, a, lease=True)
    elif group == "storage.k8s.io" and resource == "csinodes":
        _admit_named(node, a, lease=False)
    elif group == "resource.k8s.io" and resource == "resourceslices":
        _admit_resource_slice(node, a)


async def _existing_pod(registry: Registry, namespace: str, name: str) -> Obj:
    """``podsGetter.Pods(ns).Get(name)``: a missing pod is its 404."""
    return await registry.get(registry.resource("", "pods"), namespace, name)


async def _admit_pod(registry: Registry, node: str, a: _Request) -> None:
    if a.operation == "CREATE":
        await _admit_pod_create(registry, node, a)
    elif a.operation == "DELETE":
        existing = await _existing_pod(registry, a.namespace, a.name)
        if _spec(existing).get("nodeName") != node:
            raise a.forbidden(f'node "{node}" can only delete pods with spec.nodeName set to itself')
    else:
        raise a.forbidden(f'unexpected operation "{a.operation}", node "{node}" can only create and delete mirror pods')


async def _admit_pod_create(registry: Registry, node: str, a: _Request) -> None:
    pod = a.obj or {}
    meta, spec = _meta(pod), _spec(pod)
    if MIRROR_POD_ANNOTATION not in _map(meta.get("annotations")):
        raise a.forbidden(
            f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can only create mirror pods'
        )
    if (spec.get("nodeName") or "") != node:
        raise a.forbidden(f'node "{node}" can only create pods with spec.nodeName set to itself')
    owners = meta.get("ownerReferences") or []
    if not isinstance(owners, list):
        owners = []
    if len(owners) > 1:
        raise a.forbidden(f'node "{node}" can only create pods with a single owner reference set to itself')
    if not owners:
        raise a.forbidden(f'node "{node}" can only create pods with an owner reference set to itself')
    owner = _map(owners[0])
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        raise a.forbidden(f'node "{node}" can only create pods with an owner reference set to itself')
    if owner.get("controller") is not True:
        raise a.forbidden(f'node "{node}" can only create pods with a controller owner reference set to itself')
    if owner.get("blockOwnerDeletion") is True:
        raise a.forbidden(f'node "{node}" must not set blockOwnerDeletion on an owner reference')
    node_obj = await registry.get(registry.resource("", "nodes"), None, node)
    node_uid = str(_meta(node_obj).get("uid") or "")
    owner_uid = str(owner.get("uid") or "")
    if owner_uid != node_uid:
        raise a.forbidden(f"node {node} UID mismatch: expected {owner_uid} got {node_uid}")
    if spec.get("serviceAccountName"):
        raise a.forbidden(f'node "{node}" can not create pods that reference a service account')
    if next(pod_secret_names(pod), None) is not None:
        raise a.forbidden(f'node "{node}" can not create pods that reference secrets')
    if next(pod_configmap_names(pod), None) is not None:
        raise a.forbidden(f'node "{node}" can not create pods that reference configmaps')
    volumes = [_map(v) for v in spec.get("volumes") or [] if isinstance(v, Mapping)]
    for volume in volumes:
        for source in _map(volume.get("projected")).get("sources") or []:
            if _map(source).get("clusterTrustBundle") is not None:
                raise a.forbidden(f'node "{node}" can not create pods that reference clustertrustbundles')
    if any(volume.get("persistentVolumeClaim") is not None for volume in volumes):
        raise a.forbidden(f'node "{node}" can not create pods that reference persistentvolumeclaims')


def _claim_statuses(pod: Obj | None) -> list[tuple[object, object]]:
    statuses = _map(pod.get("status") if pod is not None else None).get("resourceClaimStatuses") or []
    return [(_map(s).get("name"), _map(s).get("resourceClaimName")) for s in statuses if isinstance(s, Mapping)]


def _admit_pod_status(node: str, a: _Request) -> None:
    if a.operation != "UPDATE":
        raise a.forbidden(f'unexpected operation "{a.operation}"')
    if _spec(a.old).get("nodeName") != node:
        raise a.forbidden(f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
    if dict(_meta(a.old).get("labels") or {}) != dict(_meta(a.obj).get("labels") or {}):
        raise a.forbidden(f'node "{node}" cannot update labels through pod status')
    if _claim_statuses(a.old) != _claim_statuses(a.obj):
        raise a.forbidden(f'node "{node}" cannot update resource claim statues')


async def _admit_pod_eviction(registry: Registry, node: str, a: _Request) -> None:
    if a.operation != "CREATE":
        raise a.forbidden(f"unexpected operation {a.operation}")
    pod_name = a.name or str(_meta(a.obj).get("name") or "")
    if not pod_name:
        raise a.forbidden("could not determine pod from request data")
    existing = await _existing_pod(registry, a.namespace, pod_name)
    if _spec(existing).get("nodeName") != node:
        raise a.forbidden(f"node {node} can only evict pods with spec.nodeName set to itself")


def _stripped_pvc(pvc: Obj | None) -> dict[str, Any]:
    """The PVC without what a node may change: resourceVersion, managedFields, status capacity, conditions and
    the expansion-recovery fields (``admitPVCStatus``)."""
    out = dict(pvc or {})
    meta = dict(_meta(pvc))
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out["metadata"] = meta
    status = dict(_map(out.get("status")))
    for field in ("capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"):
        status.pop(field, None)
    out["status"] = status
    return out


def _admit_pvc_status(node: str, a: _Request) -> None:
    if a.operation != "UPDATE":
        raise a.forbidden(f'unexpected operation "{a.operation}"')
    old, new = _stripped_pvc(a.old), _stripped_pvc(a.obj)
    if old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise a.forbidden(
            f'node "{node}" is not allowed to update fields other than status.quantity and status.conditions: '
            f"{', '.join(changed)}"
        )


def _forbidden_labels(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[str]:
    """``getForbiddenLabels(getModifiedLabels(new, old))``, sorted as ``sets.String.List``."""
    modified = {k for k in set(new) | set(old) if k not in new or k not in old or new[k] != old[k]}
    forbidden = set()
    for label in modified:
        namespace = label_namespace(label)
        if namespace == LABEL_NAMESPACE_NODE_RESTRICTION or namespace.endswith("." + LABEL_NAMESPACE_NODE_RESTRICTION):
            forbidden.add(label)
        if is_kubernetes_label(label) and not is_kubelet_label(label):
            forbidden.add(label)
    return sorted(forbidden)


def _admit_node(node: str, a: _Request) -> None:
    requested = a.name if a.operation != "CREATE" else str(_meta(a.obj).get("name") or "")
    if requested != node:
        raise a.forbidden(f'node "{node}" is not allowed to modify node "{requested}"')
    if a.operation == "CREATE":
        if _spec(a.obj).get("configSource") is not None:
            raise a.forbidden(f'node "{node}" is not allowed to create pods with a non-nil configSource')
        labels = _forbidden_labels(dict(_meta(a.obj).get("labels") or {}), {})
        if labels:
            raise a.forbidden(f'node "{node}" is not allowed to set the following labels: {", ".join(labels)}')
    elif a.operation == "UPDATE":
        source = _spec(a.obj).get("configSource")
        if source is not None and source != _spec(a.old).get("configSource"):
            raise a.forbidden(f'node "{node}" is not allowed to update configSource to a new non-nil configSource')
        if (_spec(a.obj).get("taints") or []) != (_spec(a.old).get("taints") or []):
            raise a.forbidden(f'node "{node}" is not allowed to modify taints')
        labels = _forbidden_labels(dict(_meta(a.obj).get("labels") or {}), dict(_meta(a.old).get("labels") or {}))
        if labels:
            raise a.forbidden(f"is not allowed to modify labels: {', '.join(labels)}")


async def _admit_service_account(registry: Registry, node: str, a: _Request) -> None:
    if a.operation != "CREATE" or a.subresource != "token":
        return
    ref = _map(_spec(a.obj).get("boundObjectRef"))
    if not ref or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
        raise a.forbidden("node requested token not bound to a pod")
    uid = str(ref.get("uid") or "")
    if not uid:
        raise a.forbidden("node requested token with a pod binding without a uid")
    pod = await _existing_pod(registry, a.namespace, str(ref["name"]))
    if uid != _meta(pod).get("uid"):
        raise a.forbidden(
            f"the UID in the bound object reference ({uid}) does not match the UID in record. The object might "
            "have been deleted and then recreated"
        )
    if _spec(pod).get("nodeName") != node:
        raise a.forbidden("node requested token bound to a pod scheduled on a different node")


def _admit_named(node: str, a: _Request, *, lease: bool) -> None:
    """``admitLease`` / ``admitCSINode``: the object is named after the node (its name in the body on create)."""
    if lease and a.namespace != NODE_LEASE_NAMESPACE:
        raise a.forbidden(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
    name = str(_meta(a.obj).get("name") or "") if a.operation == "CREATE" else a.name
    if name != node:
        what = "node lease" if lease else "CSINode"
        raise a.forbidden(f"can only access {what} with the same name as the requesting node")


def _admit_resource_slice(node: str, a: _Request) -> None:
    if a.operation == "CREATE" and _spec(a.obj).get("nodeName") != node:
        raise a.forbidden("can only create ResourceSlice with the same NodeName as the requesting node")
    if a.operation == "DELETE" and _spec(a.old).get("nodeName") != node:
        raise a.forbidden("can only delete ResourceSlice with the same NodeName as the requesting node")
