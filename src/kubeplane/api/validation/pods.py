"""Pod validation, as kube-apiserver's ``ValidatePodCreate``, ``ValidatePodUpdate`` and ``ValidatePodStatusUpdate``.

Objects are core/v1 JSON dicts that the registry has already defaulted; metadata is validated generically by the
API server, so these functions look at ``spec`` and ``status`` only and root their paths at the object
(``spec.containers[0].image``). Messages and paths are upstream's (v1.37), including its historical oddities:
pod condition types are reported under ``metadata.conditions``, pod affinity namespaces under ``.namespace``.

What an update may change (``ValidatePodUpdate``): container and init-container images, a lower
``activeDeadlineSeconds``, added tolerations (or their ``tolerationSeconds``), removed scheduling gates,
``terminationGracePeriodSeconds`` to 1 when it was negative, and -- while the pod is still gated -- added
``nodeSelector`` entries. Anything else is refused with upstream's ``pod updates may not change fields other
than ...`` followed by a diff; upstream prints ``cmp.Diff`` of the Go structs, kubeplane prints one
``<path>: <old> -> <new>`` line per changed field (JSON values), which carries the same information.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta, taints
from kubeplane.api.validation import field, names
from kubeplane.api.validation.containers import (
    MAX_INT32,
    Obj,
    finish,
    parse_quantity_at,
    type_error,
    validate_container_resource_name,
    validate_containers,
    validate_ephemeral_containers,
    validate_init_containers,
    validate_resource_name,
    validate_resource_requirements,
)
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "check_pod_spec",
    "check_pod_template_spec",
    "normalize",
    "spec_diff",
    "validate_label_selector",
    "validate_node_selector",
    "validate_pod",
    "validate_pod_spec",
    "validate_pod_status_update",
    "validate_pod_update",
]

_SYSTEM_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
_NODE_POLICIES: Final = ("Honor", "Ignore")
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
_UPDATABLE: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _invalid_each(errs: ErrorList, path: Path, value: str, msgs: list[str]) -> None:
    errs.extend(field.invalid(path, value, detail=m) for m in msgs)


def _enum(o: Obj, key: str, allowed: tuple[str, ...], *, required: bool = True) -> None:
    value = o.string(key)
    if not value:
        if required:
            o.errs.append(field.required(o.at(key)))
    elif value not in allowed:
        o.errs.append(field.not_supported(o.at(key), value, supported=allowed))


# --- selectors -------------------------------------------------------------------------------------------


def validate_label_selector(sel: Obj | None) -> None:
    """metav1 ``ValidateLabelSelector`` with label values checked (AllowInvalidLabelValueInSelector off)."""
    if sel is None:
        return
    sel.errs.extend(meta.validate_labels(sel.string_map("matchLabels"), sel.at("matchLabels")))
    for expr in sel.items("matchExpressions"):
        _selector_requirement(expr, gt_lt=False, check_values=True)


def _selector_requirement(expr: Obj, *, gt_lt: bool, check_values: bool) -> None:
    op, values = expr.string("operator"), expr.strings("values")
    if op in ("In", "NotIn"):
        if not values:
            expr.errs.append(field.required(expr.at("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            expr.errs.append(field.forbidden(expr.at("values"), detail))
    elif gt_lt and op in ("Gt", "Lt"):
        if len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            expr.errs.append(field.required(expr.at("values"), detail))
    else:
        expr.errs.append(field.invalid(expr.at("operator"), op, detail="not a valid selector operator"))
    key = expr.string("key")
    _invalid_each(expr.errs, expr.at("key"), key, names.is_qualified_name(key))
    if check_values:
        for i, v in enumerate(values):
            _invalid_each(expr.errs, expr.at("values").index(i), v, names.is_valid_label_value(v))


def _node_selector_term(term: Obj, *, check_values: bool) -> None:
    for expr in term.items("matchExpressions"):
        _selector_requirement(expr, gt_lt=True, check_values=check_values)
    for req in term.items("matchFields"):
        op, values = req.string("operator"), req.strings("values")
        if op in ("In", "NotIn"):
            if len(values) != 1:
                detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
                req.errs.append(field.required(req.at("values"), detail))
        else:
            req.errs.append(field.invalid(req.at("operator"), op, detail="not a valid selector operator"))
        key = req.string("key")
        if key != "metadata.name":
            req.errs.append(field.invalid(req.at("key"), key, detail="not a valid field selector key"))
        else:
            for i, v in enumerate(values):
                _invalid_each(req.errs, req.at("values").index(i), v, names.is_dns1123_subdomain(v))


def validate_node_selector(sel: Obj) -> None:
    """Upstream ``ValidateNodeSelector``: at least one term; requirements as label selectors plus Gt/Lt."""
    terms = sel.items("nodeSelectorTerms")
    if not terms:
        sel.errs.append(field.required(sel.at("nodeSelectorTerms"), "must have at least one node selector term"))
    for term in terms:
        _node_selector_term(term, check_values=True)


# --- affinity, tolerations, spreading ---------------------------------------------------------------------


def _label_keys(term: Obj, key: str, selector: Obj | None) -> None:
    keys = term.strings(key)
    if keys and selector is None:
        term.errs.append(field.forbidden(term.at(key), "must not be specified when labelSelector is not set"))
        return
    for i, k in enumerate(keys):
        _invalid_each(term.errs, term.at(key).index(i), k, names.is_qualified_name(k))


def _pod_affinity_term(term: Obj) -> None:
    selector = term.mapping("labelSelector")
    validate_label_selector(selector)
    validate_label_selector(term.mapping("namespaceSelector"))
    for ns in term.strings("namespaces"):  # upstream reports these at ".namespace"
        _invalid_each(term.errs, term.at("namespace"), ns, names.is_dns1123_label(ns))
    _label_keys(term, "matchLabelKeys", selector)
    _label_keys(term, "mismatchLabelKeys", selector)
    match_keys, mismatch = term.strings("matchLabelKeys"), set(term.strings("mismatchLabelKeys"))
    if selector is not None:
        index = {k: i for i, k in enumerate(match_keys)}
        seen = set(selector.string_map("matchLabels"))
        for expr in selector.items("matchExpressions"):
            k = expr.string("key")
            if k in index and k in seen:  # as upstream, reported at the term's path
                assert term.path is not None
                term.errs.append(field.invalid(term.path.index(index[k]), k, detail=_BOTH_SEL))
            seen.add(k)
    for i, k in enumerate(match_keys):
        if k in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            term.errs.append(field.invalid(term.at("matchLabelKeys").index(i), k, detail=detail))
    topology_key = term.string("topologyKey")
    if not topology_key:
        term.errs.append(field.required(term.at("topologyKey"), "can not be empty"))
    _invalid_each(term.errs, term.at("topologyKey"), topology_key, names.is_qualified_name(topology_key))


_BOTH_SEL: Final = "exists in both matchLabelKeys and labelSelector"


def _weight(o: Obj) -> None:
    weight = o.integer("weight")
    if weight is not None and not 1 <= weight <= 100:
        o.errs.append(field.invalid(o.at("weight"), weight, detail="must be in the range 1-100"))


def _validate_affinity(spec: Obj) -> None:
    affinity = spec.mapping("affinity")
    if affinity is None:
        return
    node = affinity.mapping("nodeAffinity")
    if node is not None:
        required = node.mapping("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            validate_node_selector(required)
        for term in node.items("preferredDuringSchedulingIgnoredDuringExecution"):
            _weight(term)
            preference = term.mapping("preference")  # invalid label values are allowed in preferences
            if preference is not None:
                _node_selector_term(preference, check_values=False)
    for key in ("podAffinity", "podAntiAffinity"):
        pod = affinity.mapping(key)
        if pod is None:
            continue
        for term in pod.items("requiredDuringSchedulingIgnoredDuringExecution"):
            _pod_affinity_term(term)
        for weighted in pod.items("preferredDuringSchedulingIgnoredDuringExecution"):
            _weight(weighted)
            _pod_affinity_term(_child(weighted, "podAffinityTerm"))


def _tolerations(spec: Obj) -> list[Mapping[str, Any]]:
    """The tolerations as well-typed dicts (wrong types reported), for :func:`taints.validate_tolerations`."""
    out: list[Mapping[str, Any]] = []
    for t in spec.items("tolerations"):
        for key in ("key", "operator", "value", "effect"):
            t.string(key)
        t.integer("tolerationSeconds", None)
        out.append(t.data)
    return out


def _topology_spread(spec: Obj) -> None:
    constraints = spec.items("topologySpreadConstraints")
    for i, c in enumerate(constraints):
        max_skew = c.integer("maxSkew")
        if max_skew is not None and max_skew <= 0:
            c.errs.append(field.invalid(c.at("maxSkew"), max_skew, detail="must be greater than zero"))
        key, action = c.string("topologyKey"), c.string("whenUnsatisfiable")
        if not key:
            c.errs.append(field.required(c.at("topologyKey"), "can not be empty"))
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            c.errs.append(field.not_supported(c.at("whenUnsatisfiable"), action, supported=_ACTIONS))
        if any(
            r.string("topologyKey") == key and r.string("whenUnsatisfiable") == action for r in constraints[i + 1 :]
        ):
            c.errs.append(field.duplicate(c.at("{topologyKey, whenUnsatisfiable}"), f"{{{key}, {action}}}"))
        min_domains = c.integer("minDomains", None)
        if min_domains is not None:
            if min_domains <= 0:
                c.errs.append(field.invalid(c.at("minDomains"), min_domains, detail="must be greater than zero"))
            if action != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                c.errs.append(field.invalid(c.at("minDomains"), min_domains, detail=detail))
        _enum(c, "nodeAffinityPolicy", _NODE_POLICIES, required=False)
        _enum(c, "nodeTaintsPolicy", _NODE_POLICIES, required=False)
        selector = c.mapping("labelSelector")
        keys = c.strings("matchLabelKeys")
        if keys:
            in_selector: set[str] = set()
            if selector is None:
                c.errs.append(
                    field.forbidden(c.at("matchLabelKeys"), "must not be specified when labelSelector is not set")
                )
            else:
                in_selector = set(selector.string_map("matchLabels"))
                in_selector.update(e.string("key") for e in selector.items("matchExpressions"))
            for j, k in enumerate(keys):
                _invalid_each(c.errs, c.at("matchLabelKeys").index(j), k, names.is_qualified_name(k))
                if k in in_selector:
                    c.errs.append(field.invalid(c.at("matchLabelKeys").index(j), k, detail=_BOTH_SEL))
        validate_label_selector(selector)


_ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")


def _dns_config(spec: Obj) -> None:
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
        _invalid_each(config.errs, config.at("searches").index(i), trimmed, names.is_dns1123_subdomain(trimmed))
    for option in config.items("options"):
        if not option.string("name"):
            assert option.path is not None
            option.errs.append(field.required(option.path, "must not be empty"))


# --- the pod spec ------------------------------------------------------------------------------------------


def _validate_volumes(spec: Obj) -> dict[str, Mapping[str, Any]]:
    """Upstream ``ValidateVolumes`` (sources checked shallowly): the valid volumes by name."""
    volumes: dict[str, Mapping[str, Any]] = {}
    for vol in spec.items("volumes"):
        errs: ErrorList = []
        sub = Obj(vol.data, vol.path, errs)
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
                limit = parse_quantity_at(source.data["sizeLimit"], source.at("sizeLimit"), errs)
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
            _invalid_each(errs, sub.at("name"), name, names.is_dns1123_label(name))
        if name in volumes:
            errs.append(field.duplicate(sub.at("name"), name))
        if errs:
            spec.errs.extend(errs)
        else:
            volumes[name] = vol.data
    return volumes


def _validate_pod_security_context(spec: Obj) -> None:
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
    _enum(sc, "fsGroupChangePolicy", ("Always", "OnRootMismatch"), required=False)


def check_pod_spec(spec: Obj, *, resource_is_pod: bool) -> None:
    """Upstream ``ValidatePodSpec`` (security contexts, sysctls, OS-specific and Windows rules only in part)."""
    errs = spec.errs
    if not spec.has("terminationGracePeriodSeconds"):
        errs.append(field.required(spec.at("terminationGracePeriodSeconds")))
    grace = spec.integer("terminationGracePeriodSeconds", None)
    volumes = _validate_volumes(spec)
    claim_names = frozenset(c.string("name") for c in spec.items("resourceClaims")) - {""}
    validate_containers(spec, volumes=volumes, claim_names=claim_names, grace=grace)
    validate_init_containers(spec, volumes=volumes, claim_names=claim_names, grace=grace)
    validate_ephemeral_containers(spec, volumes=volumes, claim_names=claim_names)
    pod_resources = spec.mapping("resources")
    if pod_resources is not None:
        if pod_resources.has("claims"):
            errs.append(field.forbidden(pod_resources.at("claims"), "claims cannot be set for Resources at pod-level"))
        validate_resource_requirements(pod_resources, name_fn=_pod_resource_name, claim_names=claim_names)
    if spec.boolean("hostNetwork"):
        for c in spec.items("containers"):
            for p in c.items("ports"):
                host, port = p.integer("hostPort"), p.integer("containerPort")
                if (resource_is_pod or host != 0) and host != port:
                    detail = "must match `containerPort` when `hostNetwork` is true"
                    errs.append(field.invalid(p.at("hostPort"), host, detail=detail))
    _enum(spec, "restartPolicy", _RESTART_POLICIES)
    _enum(spec, "dnsPolicy", _DNS_POLICIES)
    errs.extend(meta.validate_labels(spec.string_map("nodeSelector"), spec.at("nodeSelector")))
    _validate_pod_security_context(spec)
    _validate_affinity(spec)
    _dns_config(spec)
    for gate in spec.items("readinessGates"):
        condition = gate.string("conditionType")
        _invalid_each(errs, gate.at("conditionType"), condition, names.is_qualified_name(condition))
    seen_gates: set[str] = set()
    for gate in spec.items("schedulingGates"):
        assert gate.path is not None
        name = gate.string("name")
        _invalid_each(errs, gate.path, name, names.is_qualified_name(name))
        if name in seen_gates:
            errs.append(field.duplicate(gate.path, name))
        seen_gates.add(name)
    _topology_spread(spec)
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = spec.string(key)
        if value:
            _invalid_each(errs, spec.at(key), value, names.is_dns1123_subdomain(value))
    deadline = spec.integer("activeDeadlineSeconds", None)
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        detail = names.inclusive_range_error(1, MAX_INT32)
        errs.append(field.invalid(spec.at("activeDeadlineSeconds"), deadline, detail=detail))
    for key in ("hostname", "subdomain"):
        label = spec.string(key)
        if label:
            _invalid_each(errs, spec.at(key), label, names.is_dns1123_label(label))
    errs.extend(taints.validate_tolerations(_tolerations(spec), spec.at("tolerations")))
    for alias in spec.items("hostAliases"):
        errs.extend(names.is_valid_ip(alias.at("ip"), alias.string("ip")))
        for j, hostname in enumerate(alias.strings("hostnames")):
            _invalid_each(errs, alias.at("hostnames").index(j), hostname, names.is_dns1123_subdomain(hostname))
    runtime_class = spec.opt_string("runtimeClassName")
    if runtime_class is not None:
        _invalid_each(errs, spec.at("runtimeClassName"), runtime_class, names.is_dns1123_subdomain(runtime_class))
    if spec.has("preemptionPolicy"):
        _enum(spec, "preemptionPolicy", _PREEMPTION_POLICIES)
    if spec.has("overhead"):
        overhead = Obj({"limits": spec.data["overhead"]}, spec.at("overhead"), errs)
        validate_resource_requirements(overhead, name_fn=validate_container_resource_name, claim_names=claim_names)
    os = spec.mapping("os")
    if os is not None:
        if not os.string("name"):
            errs.append(field.required(os.at("name"), "cannot be empty"))
        elif os.string("name") not in ("linux", "windows"):
            errs.append(field.not_supported(os.path, os.string("name"), supported=("linux", "windows")))


def validate_pod_spec(spec: object, path: Path, *, resource_is_pod: bool = False) -> ErrorList:
    """Upstream ``ValidatePodSpec`` for a pod spec embedded in another object (a workload's template).

    ``resource_is_pod`` is upstream's ``PodValidationOptions.ResourceIsPod`` (a template may leave a host-network
    ``hostPort`` at 0). Errors are deduplicated and rooted at ``path``; a non-object is one type error.
    """
    if not isinstance(spec, Mapping):
        return [type_error(path, spec, "object")]
    errs: ErrorList = []
    check_pod_spec(Obj(spec, path, errs), resource_is_pod=resource_is_pod)
    return finish(errs)


def _pod_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validatePodResourceName``: cpu, memory and hugepages only at pod level."""
    errs = validate_resource_name(name, path)
    if not errs and name not in ("cpu", "memory") and not name.startswith("hugepages-"):
        errs.append(field.not_supported(path, name, supported=("cpu", "memory")))
    return errs


def check_pod_template_spec(tpl: Obj) -> None:
    """Upstream ``ValidatePodTemplateSpec``; as upstream, template labels are reported at ``<path>.labels``."""
    md = tpl.mapping("metadata")
    if md is not None:
        tpl.errs.extend(meta.validate_labels(md.string_map("labels"), tpl.at("labels")))
        tpl.errs.extend(meta.validate_annotations(md.string_map("annotations"), tpl.at("annotations")))
    spec = _child(tpl, "spec")
    check_pod_spec(spec, resource_is_pod=False)
    if spec.array("ephemeralContainers"):
        detail = "ephemeral containers not allowed in pod template"
        tpl.errs.append(field.forbidden(spec.at("ephemeralContainers"), detail))


# --- pods: create, update, status --------------------------------------------------------------------------


def _child(o: Obj, key: str) -> Obj:
    """``o[key]`` as an object, empty when absent or of the wrong type (so rules see Go's zero value)."""
    sub = o.mapping(key)
    return sub if sub is not None else Obj({}, o.at(key), o.errs)


def _root(obj: object, errs: ErrorList) -> Obj:
    return Obj(obj if isinstance(obj, Mapping) else {}, None, errs)


def _metadata_and_spec(pod: object, errs: ErrorList) -> Obj:
    """Upstream ``validatePodMetadataAndSpec`` without the metadata part: the spec, and pod-only image rules."""
    spec = _child(_root(pod, errs), "spec")
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


def normalize(value: Any, key: str = "") -> Any:
    """A value for upstream's ``Semantic.DeepEqual``: quantities by value, zero values and empties dropped.

    Go reads an absent non-pointer field as its zero value and treats nil and empty slices and maps alike;
    dropping ``""``, ``0``, ``false``, ``[]`` and ``{}`` gives the same equality on JSON. (A change between an
    explicit zero and an absent *pointer* field is therefore not seen as a change.)
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if key in ("limits", "requests", "overhead", "capacity") and isinstance(v, str | int | float):
                q = parse_quantity_at(v, field.new_path(k), [])
                nv: Any = v if q is None else q
            else:
                nv = normalize(v, k)
            if nv is not None and nv is not False and not (isinstance(nv, str | int | list | dict) and not nv):
                out[k] = nv
        return out
    if isinstance(value, list):
        return [normalize(v, key) for v in value]
    return value


def _show(value: Any) -> str:
    return json.dumps(value, default=str, separators=(",", ":"), sort_keys=True)


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            _diff(old.get(k), new.get(k), f"{path}.{k}", out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, f"{path}[{i}]", out)
    else:
        out.append(f"{path}: {_show(old)} -> {_show(new)}")


def spec_diff(old: Any, new: Any, path: str) -> str:
    """``<path>: <old> -> <new>`` per changed field of two normalized values (kubeplane's ``cmp.Diff``)."""
    out: list[str] = []
    _diff(old, new, path, out)
    return "\n".join(out)


def _updates_allowed(spec: Obj, old: Obj) -> bool:
    """The per-field update rules of ``ValidatePodUpdate``; False when upstream stops at the first error."""
    errs = spec.errs
    for key in ("containers", "initContainers"):
        new_list, old_list = spec.items(key), old.items(key)
        if len(new_list) != len(old_list):
            errs.append(field.forbidden(spec.at(key), "pod updates may not add or remove containers"))
            return False
        for c in new_list:
            if not c.string("image"):
                errs.append(field.required(c.at("image")))
    deadline, old_deadline = spec.integer("activeDeadlineSeconds", None), old.integer("activeDeadlineSeconds", None)
    path = spec.at("activeDeadlineSeconds")
    if deadline is not None:
        if not 0 <= deadline <= MAX_INT32:
            errs.append(field.invalid(path, deadline, detail=names.inclusive_range_error(0, MAX_INT32)))
            return False
        if old_deadline is not None and old_deadline < deadline:
            errs.append(field.invalid(path, deadline, detail="must be less than or equal to previous value"))
            return False
    elif old_deadline is not None and not spec.has("activeDeadlineSeconds"):
        errs.append(field.invalid(path, None, detail="must not update from a positive integer to nil value"))
    new_tolerations = [normalize(t.data) for t in spec.items("tolerations")]
    for t in old.items("tolerations"):
        old_t = normalize(t.data)
        if not any(
            {**old_t, "tolerationSeconds": n.get("tolerationSeconds")}
            == {**n, "tolerationSeconds": n.get("tolerationSeconds")}
            for n in new_tolerations
        ):
            errs.append(
                field.forbidden(
                    spec.at("tolerations"), "existing toleration can not be modified except its tolerationSeconds"
                )
            )
            break
    old_gates = {g.string("name") for g in old.items("schedulingGates")}
    added = {g.string("name"): g for g in spec.items("schedulingGates") if g.string("name") not in old_gates}
    for name, gate in added.items():
        detail = f"only deletion is allowed, but found new scheduling gate '{name}'"
        errs.append(field.forbidden(gate.at("name"), detail))
    return True


def _munge(spec: Obj, old: Obj) -> dict[str, Any]:
    """The new spec with every field an update may change put back to its old value (upstream's munging)."""
    munged = copy.deepcopy(dict(spec.data))
    for key in ("containers", "initContainers"):
        new_list, old_list = munged.get(key), old.data.get(key)
        if isinstance(new_list, list) and isinstance(old_list, list) and len(new_list) == len(old_list):
            for i, (c, o) in enumerate(zip(new_list, old_list, strict=True)):
                if isinstance(c, dict) and isinstance(o, Mapping):
                    new_list[i] = {**c, "image": o.get("image")}
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged[key] = old.data.get(key)
    old_grace = old.data.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old.array("schedulingGates"):  # a gated pod may gain node selector entries
        old_selector = old.string_map("nodeSelector")
        new_selector = munged.get("nodeSelector")
        if normalize(new_selector) != normalize(old_selector):
            new_map = new_selector if isinstance(new_selector, Mapping) else {}
            if any(new_map.get(k) != v for k, v in old_selector.items()):
                detail = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
                spec.errs.append(field.invalid(spec.at("nodeSelector"), dict(new_map), detail=detail))
            munged["nodeSelector"] = old.data.get("nodeSelector")
    return munged


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodUpdate``: the create rules on ``new`` plus the update rules above."""
    errs: ErrorList = []
    spec = _metadata_and_spec(new, errs)
    old_spec = _child(_root(old, []), "spec")  # the stored object's own problems are not this update's
    if not _updates_allowed(spec, old_spec):
        return finish(errs)
    munged, old_norm = normalize(_munge(spec, old_spec)), normalize(old_spec.data)
    if munged != old_norm:
        detail = f"pod updates may not change fields other than {','.join(_UPDATABLE)}\n"
        errs.append(field.forbidden(field.new_path("spec"), detail + spec_diff(old_norm, munged, "spec")))
    return finish(errs)


def _state_transitions(new: Obj, old: Obj, key: str, *, policy: str, restartable: frozenset[str]) -> None:
    """Upstream ``ValidateContainerStateTransition``: a terminated container that may not restart stays so."""
    if policy == "Always":
        return
    new_statuses = new.items(key)
    for i, status in enumerate(old.items(key)):
        terminated = _child(_child(status, "state"), "terminated")
        if not terminated.data or (terminated.integer("exitCode") != 0 and policy == "OnFailure"):
            continue
        name = status.string("name")
        if name in restartable:
            continue
        if any(n.string("name") == name and not _child(n, "state").has("terminated") for n in new_statuses):
            detail = "may not be transitioned to non-terminated state"
            new.errs.append(field.forbidden(new.at(key).index(i).child("state"), detail))


def _ips(status: Obj, key: str, *, host_ip: str | None) -> None:
    """Upstream ``validatePodIPs`` / ``validateHostIPs``: valid, at most one per family, no duplicates."""
    entries = status.items(key)
    ips = [e.string("ip") for e in entries]
    path = status.at(key)
    if host_ip is not None and entries and host_ip != ips[0]:
        status.errs.append(field.invalid(path.index(0).child("ip"), ips[0], detail="must be equal to `hostIP`"))
    bad = False
    for i, ip in enumerate(ips):
        ip_errs = names.is_valid_ip(path.index(i), ip)
        bad = bad or bool(ip_errs)
        status.errs.extend(ip_errs)
    if len(ips) > 1:
        v6 = [not names.is_valid_ipv6_address(None, ip) for ip in ips]
        if len(ips) > 2 or all(v6) or not any(v6) or bad:
            shown = [dict(e.data) for e in entries]
            detail = "may specify no more than one IP for each IP family"
            status.errs.append(field.invalid(path, shown, detail=detail))
        seen: set[str] = set()
        for i, (e, ip) in enumerate(zip(entries, ips, strict=True)):
            if ip in seen:
                status.errs.append(field.duplicate(path.index(i), dict(e.data)))
            seen.add(ip)


def validate_pod_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodStatusUpdate`` (container user and allocated-resource health checks skipped)."""
    errs: ErrorList = []
    root, old_root = _root(new, errs), _root(old, [])
    status, old_status = _child(root, "status"), _child(old_root, "status")
    spec, old_spec = _child(root, "spec"), _child(old_root, "spec")
    for i, condition in enumerate(status.items("conditions")):
        kind = condition.string("type")
        if kind not in _SYSTEM_CONDITIONS:  # upstream's path: metadata.conditions[i].Type
            at = field.new_path("metadata", "conditions").index(i).child("Type")
            _invalid_each(errs, at, kind, names.is_qualified_name(kind))
    if spec.string("nodeName") != old_spec.string("nodeName"):
        errs.append(field.forbidden(status.at("nodeName"), "may not be changed directly"))
    nominated = status.string("nominatedNodeName")
    if nominated and nominated != old_status.string("nominatedNodeName"):
        _invalid_each(errs, status.at("nominatedNodeName"), nominated, names.is_dns1123_subdomain(nominated))
    qos = status.string("qosClass")
    if qos != old_status.string("qosClass"):
        errs.append(field.invalid(status.at("qosClass"), qos, detail="field is immutable"))
    policy = old_spec.string("restartPolicy")
    sidecars = frozenset(
        c.string("name") for c in old_spec.items("initContainers") if c.string("restartPolicy") == "Always"
    )
    _state_transitions(status, old_status, "containerStatuses", policy=policy, restartable=frozenset())
    _state_transitions(status, old_status, "initContainerStatuses", policy=policy, restartable=sidecars)
    _state_transitions(status, old_status, "ephemeralContainerStatuses", policy="Never", restartable=frozenset())
    _ips(status, "podIPs", host_ip=None)
    if status.array("hostIPs"):
        _ips(status, "hostIPs", host_ip=status.string("hostIP"))
    return finish(errs)
