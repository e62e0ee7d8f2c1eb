"""Pod validation: the pod spec (``ValidatePodSpec``) and the Pod kind's entry points, as kube-apiserver's
``ValidatePodCreate``, ``ValidatePodUpdate`` and ``ValidatePodStatusUpdate``.

Objects are core/v1 JSON dicts that the registry has already defaulted; metadata is validated generically by the
API server, so these functions look at ``spec`` and ``status`` only and root their paths at the object
(``spec.containers[0].image``). Messages and paths are upstream's (v1.37), including its historical oddities
(pod condition types under ``metadata.conditions``, pod affinity namespaces under ``.namespace``).

:func:`validate_pod_spec` is the contract other kinds' validators use for an embedded pod spec (a workload's
template): ``validate_pod_spec(spec, path, *, resource_is_pod=False) -> ErrorList``, errors rooted at ``path``.
The pieces of the spec live beside this module: containers in :mod:`.containers`, resources in
:mod:`.resources`, scheduling constraints in :mod:`.scheduling`, the update rules in :mod:`.pod_update`.

Invariants
    * Everything is read through a :data:`~.reader.CORE_V1` reader and every entry point ends with
      :func:`~.reader.finish`, so a wrongly typed field is one error and never an exception.
    * Volumes are validated first and only the valid ones, by name, are what container mounts may refer to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta, taints
from kubeplane.api.shapes import ShapeMemo, shape_key
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import MAX_INT32, check_enum, invalid_each
from kubeplane.api.validation.containers import (
    validate_containers,
    validate_ephemeral_containers,
    validate_init_containers,
)
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.pod_claims import validate_pod_resource_claims
from kubeplane.api.validation.pod_update import check_pod_spec_update, validate_pod_status_update
from kubeplane.api.validation.reader import CORE_V1, Reader, finish, type_error
from kubeplane.api.validation.resources import (
    validate_container_resource_name,
    validate_pod_resource_name,
    validate_resource_requirements,
)
from kubeplane.api.validation.scheduling import check_affinity, check_topology_spread, read_tolerations

__all__ = [
    "check_pod_spec",
    "check_pod_template_spec",
    "validate_pod",
    "validate_pod_create",
    "validate_pod_spec",
    "validate_pod_status_update",
    "validate_pod_update",
]

_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
# Upstream's order: the first source present wins, any later one is "more than 1 volume type". Two error
# paths differ from the JSON key, as upstream ("cephFS", and the "downwarAPI" typo).
_VOLUME_SOURCES: Final = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"), ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"), ("cinder", "cinder"),
    ("cephfs", "cephFS"), ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"), ("fc", "fc"),
    ("flexVolume", "flexVolume"), ("configMap", "configMap"), ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"), ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"), ("storageos", "storageos"),
    ("projected", "projected"), ("scaleIO", "scaleIO"), ("csi", "csi"), ("ephemeral", "ephemeral"),
    ("image", "image"),
)  # fmt: skip
_REQUIRED_SOURCE_FIELDS: Final = {
    "hostPath": "path", "persistentVolumeClaim": "claimName", "nfs": "server", "csi": "driver", "image": "reference",
}  # fmt: skip


def _dns_config(spec: Reader) -> None:
    config = spec.mapping("dnsConfig")
    if spec.string("dnsPolicy") == "None":
        if config is None:
            spec.errs.append(field.required(spec.at("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
            return
        if not config.strings("nameservers"):
            detail = "must provide at least one DNS nameserver when `dnsPolicy` is None"
            spec.errs.append(field.required(config.at("nameservers"), detail))
            return
    if config is None:
        return
    servers, searches = config.strings("nameservers"), config.strings("searches")
    if len(servers) > 3:
        config.errs.append(
            field.invalid(config.at("nameservers"), servers, detail="must not have more than 3 nameservers")
        )
    for i, ns in enumerate(servers):
        config.errs.extend(names.is_valid_ip(config.at("nameservers").index(i), ns))
    if len(searches) > 32:
        detail = "must not have more than 32 search paths"
        config.errs.append(field.invalid(config.at("searches"), searches, detail=detail))
    if len(" ".join(searches)) > 2048:
        detail = "must not have more than 2048 characters (including spaces) in the search list"
        config.errs.append(field.invalid(config.at("searches"), searches, detail=detail))
    for i, search in enumerate(searches):
        trimmed = search.removesuffix(".")
        config.errs.extend(invalid_each(config.at("searches").index(i), trimmed, names.is_dns1123_subdomain(trimmed)))
    for option in config.items("options"):
        if not option.string("name"):
            assert option.path is not None
            option.errs.append(field.required(option.path, "must not be empty"))


# --- the pod spec ------------------------------------------------------------------------------------------


def _validate_volumes(spec: Reader) -> dict[str, Mapping[str, Any]]:
    """Upstream ``ValidateVolumes`` (sources checked shallowly): the valid volumes by name."""
    volumes: dict[str, Mapping[str, Any]] = {}
    for vol in spec.items("volumes"):
        errs: ErrorList = []
        sub = vol.with_errs(errs)
        count = 0
        for key, shown in _VOLUME_SOURCES:
            source = sub.mapping(key)
            if source is None:
                continue
            if count:
                errs.append(field.forbidden(sub.at(shown), "may not specify more than 1 volume type"))
                continue
            count += 1
            required = _REQUIRED_SOURCE_FIELDS.get(key)
            if required and not source.string(required):
                errs.append(field.required(source.at(required)))
            if key == "emptyDir" and source.has("sizeLimit"):
                limit = source.quantity("sizeLimit")
                if limit is not None and limit.sign() < 0:
                    detail = "SizeLimit field must be a valid resource quantity"
                    errs.append(field.forbidden(source.at("sizeLimit"), detail))
        if count == 0:
            assert vol.path is not None
            errs.append(field.required(vol.path, "must specify a volume type"))
        name = sub.string("name")
        if not name:
            errs.append(field.required(sub.at("name")))
        else:
            errs.extend(invalid_each(sub.at("name"), name, names.is_dns1123_label(name)))
        if name in volumes:
            errs.append(field.duplicate(sub.at("name"), name))
        if errs:
            spec.errs.extend(errs)
        else:
            volumes[name] = vol.data
    return volumes


def _validate_pod_security_context(spec: Reader) -> None:
    sc = spec.mapping("securityContext")
    if sc is None:
        return
    for key in ("fsGroup", "runAsUser", "runAsGroup"):
        value = sc.integer(key, None)
        if value is not None and not 0 <= value <= MAX_INT32:
            sc.errs.append(field.invalid(sc.at(key), value, detail=names.inclusive_range_error(0, MAX_INT32)))
    for i, gid in enumerate(sc.array("supplementalGroups")):
        if isinstance(gid, int) and not 0 <= gid <= MAX_INT32:
            detail = names.inclusive_range_error(0, MAX_INT32)
            sc.errs.append(field.invalid(sc.at("supplementalGroups").index(i), gid, detail=detail))
    if spec.boolean("shareProcessNamespace") and spec.boolean("hostPID"):
        detail = "ShareProcessNamespace and HostPID cannot both be enabled"
        sc.errs.append(field.invalid(sc.at("shareProcessNamespace"), True, detail=detail))
    check_enum(sc, "fsGroupChangePolicy", ("Always", "OnRootMismatch"), required=False)


def check_pod_spec(spec: Reader, *, resource_is_pod: bool) -> None:
    """Upstream ``ValidatePodSpec`` (security contexts, sysctls, OS-specific and Windows rules only in part)."""
    errs = spec.errs
    if not spec.has("terminationGracePeriodSeconds"):
        errs.append(field.required(spec.at("terminationGracePeriodSeconds")))
    grace = spec.integer("terminationGracePeriodSeconds", None)
    volumes = _validate_volumes(spec)
    validate_pod_resource_claims(spec)
    claim_names = frozenset(c.string("name") for c in spec.items("resourceClaims")) - {""}
    validate_containers(spec, volumes=volumes, claim_names=claim_names, grace=grace)
    validate_init_containers(spec, volumes=volumes, claim_names=claim_names, grace=grace)
    validate_ephemeral_containers(spec, volumes=volumes, claim_names=claim_names)
    pod_resources = spec.mapping("resources")
    if pod_resources is not None:
        if pod_resources.has("claims"):
            errs.append(field.forbidden(pod_resources.at("claims"), "claims cannot be set for Resources at pod-level"))
        validate_resource_requirements(pod_resources, name_fn=validate_pod_resource_name, claim_names=claim_names)
    if spec.boolean("hostNetwork"):
        for c in spec.items("containers"):
            for p in c.items("ports"):
                host, port = p.integer("hostPort"), p.integer("containerPort")
                if (resource_is_pod or host != 0) and host != port:
                    detail = "must match `containerPort` when `hostNetwork` is true"
                    errs.append(field.invalid(p.at("hostPort"), host, detail=detail))
    check_enum(spec, "restartPolicy", _RESTART_POLICIES)
    check_enum(spec, "dnsPolicy", _DNS_POLICIES)
    errs.extend(meta.validate_labels(spec.string_map("nodeSelector"), spec.at("nodeSelector")))
    _validate_pod_security_context(spec)
    check_affinity(spec)
    _dns_config(spec)
    for gate in spec.items("readinessGates"):
        condition = gate.string("conditionType")
        errs.extend(invalid_each(gate.at("conditionType"), condition, names.is_qualified_name(condition)))
    seen_gates: set[str] = set()
    for gate in spec.items("schedulingGates"):
        assert gate.path is not None
        name = gate.string("name")
        errs.extend(invalid_each(gate.path, name, names.is_qualified_name(name)))
        if name in seen_gates:
            errs.append(field.duplicate(gate.path, name))
        seen_gates.add(name)
    check_topology_spread(spec)
    check_scheduling_group(spec)
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = spec.string(key)
        if value:
            errs.extend(invalid_each(spec.at(key), value, names.is_dns1123_subdomain(value)))
    deadline = spec.integer("activeDeadlineSeconds", None)
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        detail = names.inclusive_range_error(1, MAX_INT32)
        errs.append(field.invalid(spec.at("activeDeadlineSeconds"), deadline, detail=detail))
    for key in ("hostname", "subdomain"):
        label = spec.string(key)
        if label:
            errs.extend(invalid_each(spec.at(key), label, names.is_dns1123_label(label)))
    errs.extend(taints.validate_tolerations(read_tolerations(spec), spec.at("tolerations")))
    for alias in spec.items("hostAliases"):
        errs.extend(names.is_valid_ip(alias.at("ip"), alias.string("ip")))
        for j, hostname in enumerate(alias.strings("hostnames")):
            errs.extend(invalid_each(alias.at("hostnames").index(j), hostname, names.is_dns1123_subdomain(hostname)))
    runtime_class = spec.opt_string("runtimeClassName")
    if runtime_class is not None:
        errs.extend(invalid_each(spec.at("runtimeClassName"), runtime_class, names.is_dns1123_subdomain(runtime_class)))
    if spec.has("preemptionPolicy"):
        check_enum(spec, "preemptionPolicy", _PREEMPTION_POLICIES)
    if spec.has("overhead"):
        overhead = Reader({"limits": spec.data["overhead"]}, spec.at("overhead"), errs, CORE_V1)
        validate_resource_requirements(overhead, name_fn=validate_container_resource_name, claim_names=claim_names)
    os = spec.mapping("os")
    if os is not None:
        if not os.string("name"):
            errs.append(field.required(os.at("name"), "cannot be empty"))
        elif os.string("name") not in ("linux", "windows"):
            errs.append(field.not_supported(os.path, os.string("name"), supported=("linux", "windows")))


def check_scheduling_group(spec: Reader) -> None:
    """``spec.schedulingGroup`` (core/v1 ``PodSchedulingGroup``, a one-member union): ``podGroupName`` must be
    set and a DNS subdomain (the PodGroup's name). Immutability is checked on update
    (:func:`kubeplane.api.validation.pod_update.check_scheduling_group_update`)."""
    group = spec.mapping("schedulingGroup")
    if group is None:
        return
    name = group.opt_string("podGroupName")
    if name is None:
        spec.errs.append(field.invalid(spec.at("schedulingGroup"), "", detail="must specify one of: `podGroupName`"))
    elif not name:
        spec.errs.append(field.required(group.at("podGroupName")))
    else:
        spec.errs.extend(invalid_each(group.at("podGroupName"), name, names.is_dns1123_subdomain(name)))


def validate_pod_spec(spec: object, path: Path, *, resource_is_pod: bool = False) -> ErrorList:
    """Upstream ``ValidatePodSpec`` for a pod spec embedded in another object (a workload's template).

    ``resource_is_pod`` is upstream's ``PodValidationOptions.ResourceIsPod`` (a template may leave a host-network
    ``hostPort`` at 0). Errors are deduplicated and rooted at ``path``; a non-object is one type error.
    """
    if not isinstance(spec, Mapping):
        return [type_error(path, spec, "object", dialect=CORE_V1)]
    errs: ErrorList = []
    check_pod_spec(Reader(spec, path, errs, CORE_V1), resource_is_pod=resource_is_pod)
    return finish(errs)


def check_pod_template_spec(tpl: Reader) -> None:
    """Upstream ``ValidatePodTemplateSpec``; as upstream, template labels are reported at ``<path>.labels``."""
    md = tpl.mapping("metadata")
    if md is not None:
        tpl.errs.extend(meta.validate_labels(md.string_map("labels"), tpl.at("labels")))
        tpl.errs.extend(meta.validate_annotations(md.string_map("annotations"), tpl.at("annotations")))
    spec = tpl.child("spec")
    check_pod_spec(spec, resource_is_pod=False)
    if spec.array("ephemeralContainers"):
        detail = "ephemeral containers not allowed in pod template"
        tpl.errs.append(field.forbidden(spec.at("ephemeralContainers"), detail))


# --- the Pod kind ------------------------------------------------------------------------------------------


def _metadata_and_spec(pod: object, errs: ErrorList) -> Reader:
    """Upstream ``validatePodMetadataAndSpec`` without the metadata part: the spec, and pod-only image rules."""
    spec = CORE_V1.root(pod, errs).child("spec")
    check_pod_spec(spec, resource_is_pod=True)
    for key in ("containers", "initContainers"):
        for c in spec.items(key):
            image = c.string("image")
            if image != image.strip():
                errs.append(field.invalid(c.at("image"), image, detail="must not have leading or trailing whitespace"))
    return spec


def validate_pod(pod: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodCreate``: the spec, no ephemeral containers, no node while gates remain."""
    errs: ErrorList = []
    spec = _metadata_and_spec(pod, errs)
    if spec.array("ephemeralContainers"):
        errs.append(field.forbidden(spec.at("ephemeralContainers"), "cannot be set on create"))
    if spec.string("nodeName") and spec.array("schedulingGates"):
        detail = "cannot be set until all schedulingGates have been cleared"
        errs.append(field.forbidden(spec.at("nodeName"), detail))
    return finish(errs)


VALID_SPECS: ShapeMemo[bool] = ShapeMemo()
"""The pod specs :func:`validate_pod` found valid, by encoding (:mod:`kubeplane.api.shapes`)."""


def validate_pod_create(pod: Mapping[str, Any]) -> ErrorList:
    """:func:`validate_pod`, answered from :data:`VALID_SPECS` for a spec already found valid: the create path's.

    Exact because ``validate_pod`` reads ``spec`` and nothing else of the pod (no feature gate, no metadata: the
    API server validates metadata generically), so a spec with the same encoding has the same, empty, error
    list. Only valid specs are kept: an invalid one is validated again to build its errors."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    key = shape_key(spec) if isinstance(spec, dict) else None
    if VALID_SPECS.get(key):
        return []
    errs = validate_pod(pod)
    if not errs:
        VALID_SPECS.put(key, True)
    return errs


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodUpdate``: the create rules on ``new`` plus what an update may change."""
    errs: ErrorList = []
    spec = _metadata_and_spec(new, errs)
    check_pod_spec_update(spec, CORE_V1.root(old, []).child("spec"))  # the stored object's problems are not ours
    return finish(errs)


def validate_pod_binding(binding: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodBinding`` (``target.kind`` ``Node`` or empty, ``target.name`` required), plus the
    target's name as a node name (``ValidateNodeName``, a DNS-1123 subdomain).

    Why the extra rule: the name becomes the pod's ``spec.nodeName``, which ``ValidatePodSpec`` checks on every
    later update of the pod; upstream stores ``../x`` and the pod then refuses every update. kubeplane refuses the
    binding instead, so what is stored always passes the Pod's validation."""
    errs: ErrorList = []
    root = CORE_V1.root(binding, errs)
    target = root.child("target")
    kind = target.string("kind")
    if kind and kind != "Node":
        errs.append(field.not_supported(target.at("kind"), kind, supported=("Node", "<empty>")))
    node = target.string("name")
    if not node:
        errs.append(field.required(target.at("name"), ""))
    else:
        errs.extend(invalid_each(target.at("name"), node, names.is_dns1123_subdomain(node)))
    metadata = root.mapping("metadata")
    if metadata is not None:  # merged into the pod's annotations
        errs.extend(meta.validate_annotations(metadata.string_map("annotations"), metadata.at("annotations")))
    return finish(errs)
