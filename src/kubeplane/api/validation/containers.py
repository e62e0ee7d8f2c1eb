"""Container-level validation of core/v1 pods, as kube-apiserver's ``validateContainerCommon`` and its helpers.

Also home of :class:`Obj`, the typed reader every core/v1 validator in this package goes through. Objects reach
validation as plain JSON dicts, so any field may hold the wrong JSON type; upstream's decoder would refuse such a
body before validation, and here a wrong type must still become a field error (a 422), never an exception (a
500). :class:`Obj` reads one field with the type the schema gives it, reports a wrong type once at that field's
path and hands back Go's zero value, so the rules below are written as if the object were well typed.

Invariants
    * A wrong-typed field reads as absent; :func:`finish` then drops every other error reported at or below
      its path (the ``Required value`` its absence caused), so a bad type yields one error, not several.
    * Resource lists are read as :class:`~kubeplane.api.quantity.Quantity` values; an unparsable quantity gets
      upstream's decoder text (``quantities must match the regular expression ...``) at its key's path.
    * Map entries are visited in sorted key order: upstream iterates Go maps (random order), ours is stable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.validation import field, names
from kubeplane.api.validation.field import Error, ErrorList, ErrorType, Path

__all__ = [
    "HUGEPAGES_PREFIX",
    "MAX_INT32",
    "NEGATIVE_MSG",
    "PROTOCOLS",
    "Obj",
    "finish",
    "is_integer_resource",
    "is_overcommit_allowed",
    "is_standard_resource_name",
    "parse_quantity_at",
    "type_error",
    "validate_container_resource_name",
    "validate_containers",
    "validate_ephemeral_containers",
    "validate_init_containers",
    "validate_port_num_or_name",
    "validate_resource_name",
    "validate_resource_quantity_value",
    "validate_resource_requirements",
]

NEGATIVE_MSG: Final = "must be greater than or equal to 0"
HUGEPAGES_PREFIX: Final = "hugepages-"
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")  # sets.List order: sorted
MAX_INT32: Final = 2**31 - 1


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def type_error(path: Path, value: object, expected: str) -> Error:
    """``Invalid value: "<JSON type of value>": must be of type <expected>`` (a TypeInvalid error)."""
    return field.type_invalid(path, _json_type(value), detail=f"must be of type {expected}")


@dataclass(frozen=True, slots=True)
class Obj:
    """A JSON object under validation, its path (None at the object's root) and the shared error sink."""

    data: Mapping[str, Any]
    path: Path | None
    errs: ErrorList

    def at(self, key: str) -> Path:
        """The path of field ``key``."""
        return field.new_path(key) if self.path is None else self.path.child(key)

    def has(self, key: str) -> bool:
        """``key`` is present and not null (Go: a non-nil pointer, slice or map)."""
        return self.data.get(key) is not None

    def _get(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) is not (types is bool) or not isinstance(value, types):
            self.errs.append(type_error(self.at(key), value, expected))
            return None
        return value

    def string(self, key: str) -> str:
        """A string field; ``""`` when absent (Go's zero value)."""
        value: str | None = self._get(key, str, "string")
        return value or ""

    def opt_string(self, key: str) -> str | None:
        """A ``*string`` field: None when absent."""
        value: str | None = self._get(key, str, "string")
        return value

    def integer(self, key: str, default: int | None = 0) -> int | None:
        """An integer field; ``default`` when absent, None when of the wrong type (already reported)."""
        if self.data.get(key) is None:
            return default
        value: int | None = self._get(key, int, "integer")
        return value

    def boolean(self, key: str) -> bool | None:
        """A ``*bool`` field: None when absent."""
        value: bool | None = self._get(key, bool, "boolean")
        return value

    def mapping(self, key: str) -> Obj | None:
        """A nested object, or None when absent."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        return None if value is None else Obj(value, self.at(key), self.errs)

    def array(self, key: str) -> list[Any]:
        """A list field, empty when absent."""
        value: list[Any] | None = self._get(key, list, "array")
        return value or []

    def items(self, key: str) -> list[Obj]:
        """A list of objects; an element that is not an object is reported and skipped."""
        out: list[Obj] = []
        path = self.at(key)
        for i, item in enumerate(self.array(key)):
            if isinstance(item, Mapping):
                out.append(Obj(item, path.index(i), self.errs))
            else:
                self.errs.append(type_error(path.index(i), item, "object"))
        return out

    def strings(self, key: str) -> list[str]:
        """A list of strings; other elements are reported and skipped."""
        out: list[str] = []
        for i, item in enumerate(self.array(key)):
            if isinstance(item, str):
                out.append(item)
            else:
                self.errs.append(type_error(self.at(key).index(i), item, "string"))
        return out

    def string_map(self, key: str) -> dict[str, str]:
        """A ``map[string]string``; entries with a non-string value are reported and skipped."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        out: dict[str, str] = {}
        for k in sorted(value or ()):
            v = value[k] if value is not None else None
            if isinstance(v, str):
                out[k] = v
            else:
                self.errs.append(type_error(self.at(key).key(k), v, "string"))
        return out

    def quantities(self, key: str) -> dict[str, Quantity]:
        """A ``ResourceList``: resource name to quantity, unparsable entries reported and skipped."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        out: dict[str, Quantity] = {}
        for k in sorted(value or ()):
            q = parse_quantity_at(value[k] if value is not None else None, self.at(key).key(k), self.errs)
            if q is not None:
                out[k] = q
        return out


def parse_quantity_at(raw: object, path: Path, errs: ErrorList) -> Quantity | None:
    """``raw`` as a quantity, or None with an error in ``errs`` (upstream's decoder message as the detail)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        errs.append(type_error(path, raw, "string"))
        return None
    try:
        return Quantity.parse(raw)
    except QuantityError as exc:
        # QuantityError reads "invalid quantity '<text>': <reason>"; the reason is upstream's error text.
        errs.append(field.invalid(path, raw, detail=str(exc).rsplit(": ", 1)[-1]))
        return None


def finish(errs: ErrorList) -> ErrorList:
    """Deduplicate, and let a type error supersede every other error at or below its path."""
    typed = {e.field for e in errs if e.type is ErrorType.TYPE_INVALID}
    if not typed:
        return field.dedupe(errs)
    return [e for e in field.dedupe(errs) if e.type is ErrorType.TYPE_INVALID or not _under(e.field, typed)]


def _under(path: str, prefixes: set[str]) -> bool:
    """``path`` is one of ``prefixes`` or a field below one (``a.b`` and ``a[0]`` are below ``a``)."""
    if path in prefixes:
        return True
    return any(ch in ".[" and path[:i] in prefixes for i, ch in enumerate(path))


# --- resource names and quantities (pkg/apis/core/helper) ------------------------------------------------

_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_STANDARD_RESOURCES: Final = (
    _STANDARD_CONTAINER_RESOURCES
    | _INTEGER_RESOURCES
    | frozenset(
        {
            "requests.cpu",
            "requests.memory",
            "requests.ephemeral-storage",
            "limits.cpu",
            "limits.memory",
            "limits.ephemeral-storage",
            "requests.storage",
        }
    )
)


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    return not _is_native(name) and not name.startswith("requests.") and not names.is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    """Native, non-hugepages resources may have requests below limits (upstream ``IsOvercommitAllowed``)."""
    return _is_native(name) and not name.startswith(HUGEPAGES_PREFIX)


def is_integer_resource(name: str) -> bool:
    """Counted resources and extended resources take whole numbers only (``IsIntegerResourceName``)."""
    return name in _INTEGER_RESOURCES or _is_extended(name)


def is_standard_resource_name(name: str) -> bool:
    """Upstream ``IsStandardResourceName`` (includes quota hugepages names)."""
    return name in _STANDARD_RESOURCES or name.startswith((HUGEPAGES_PREFIX, "requests." + HUGEPAGES_PREFIX))


def validate_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validateResourceName``: a qualified name, standard when not prefixed."""
    errs = [field.invalid(path, name, detail=m) for m in names.is_qualified_name(name)]
    if not errs and "/" not in name and not is_standard_resource_name(name):
        errs.append(field.invalid(path, name, detail="must be a standard resource type or fully qualified"))
    return errs


def validate_container_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validateContainerResourceName``; its two errors for an unknown bare name are both kept."""
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith(HUGEPAGES_PREFIX):
            errs.append(field.invalid(path, name, detail="must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(field.invalid(path, name, detail="doesn't follow extended resource name standard"))
    return errs


def validate_resource_quantity_value(name: str, q: Quantity, path: Path) -> ErrorList:
    """Upstream ``ValidateResourceQuantityValue``: non-negative, and whole for integer resources."""
    errs: ErrorList = []
    if q.sign() < 0:
        errs.append(field.invalid(path, str(q), detail=NEGATIVE_MSG))
    if is_integer_resource(name) and q.milli_value() % 1000:
        errs.append(field.invalid(path, str(q), detail="must be an integer"))
    return errs


def _hugepage_error(name: str, q: Quantity) -> str | None:
    """Upstream ``validateResourceQuantityHugePageValue``: a whole number of pages of the named size."""
    try:
        page = Quantity.parse(name.removeprefix(HUGEPAGES_PREFIX))
    except QuantityError:
        page = None
    if page is None or page.sign() <= 0 or page.milli_value() % 1000 or q.value() % page.value():
        return f"{q} is not positive integer multiple of {name}"
    return None


def validate_resource_requirements(
    res: Obj, *, name_fn: Callable[[str, Path], ErrorList], claim_names: frozenset[str]
) -> None:
    """Upstream ``validateResourceRequirements``: names, quantities, requests <= limits, hugepages rules."""
    errs = res.errs
    limits, requests = res.quantities("limits"), res.quantities("requests")
    lim_path, req_path = res.at("limits"), res.at("requests")
    cpu_or_mem = hugepages = False
    for kind, values, path in (("limits", limits, lim_path), ("requests", requests, req_path)):
        for name, q in values.items():
            at = path.key(name)
            errs.extend(name_fn(name, at))
            errs.extend(validate_resource_quantity_value(name, q, at))
            if kind == "requests":
                limit = limits.get(name)
                if limit is not None:
                    if q != limit and not is_overcommit_allowed(name):
                        errs.append(field.invalid(req_path, str(q), detail=f"must be equal to {name} limit of {limit}"))
                    elif q > limit:
                        detail = f"must be less than or equal to {name} limit of {limit}"
                        errs.append(field.invalid(req_path, str(q), detail=detail))
                elif not is_overcommit_allowed(name):
                    errs.append(field.required(lim_path, "Limit must be set for non overcommitable resources"))
            if name.startswith(HUGEPAGES_PREFIX):
                hugepages = True
                msg = _hugepage_error(name, q)
                if msg:
                    errs.append(field.invalid(at, str(q), detail=msg))
            cpu_or_mem = cpu_or_mem or name in ("cpu", "memory")
    if hugepages and not cpu_or_mem:
        errs.append(field.forbidden(res.path, "HugePages require cpu or memory"))
    _validate_claim_refs(res, claim_names)


def _validate_claim_refs(res: Obj, claim_names: frozenset[str]) -> None:
    """Upstream ``validateResourceClaimNames``: each claim is named once and exists in the pod's claims."""
    seen: set[str] = set()
    for claim in res.items("claims"):
        at = claim.path
        assert at is not None
        name = claim.string("name")
        if not name:
            res.errs.append(field.required(at))
            continue
        if name in seen:
            res.errs.append(field.duplicate(at, name))
        else:
            key, request = name, claim.string("request")
            if request:
                res.errs.extend(_dns_label(request, claim.at("request")))
                key += "/" + request
            if key in seen:
                res.errs.append(field.duplicate(at, key))
            elif not request and any(k.partition("/")[0] == name for k in seen if "/" in k):
                res.errs.append(field.duplicate(at, name))
            seen.add(key)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            res.errs.append(Error(ErrorType.NOT_FOUND, str(at), name, detail))


# --- small shared checks ------------------------------------------------------------------------------------


def _dns_label(value: str, path: Path) -> ErrorList:
    return [field.invalid(path, value, detail=m) for m in names.is_dns1123_label(value)]


def _subdomain(value: str, path: Path) -> ErrorList:
    return [field.invalid(path, value, detail=m) for m in names.is_dns1123_subdomain(value)]


def validate_port_num_or_name(raw: object, path: Path) -> ErrorList:
    """Upstream ``ValidatePortNumOrName`` for an IntOrString: a port number or an IANA service name."""
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        return [type_error(path, raw, "integer or string")]
    if isinstance(raw, int):
        return [field.invalid(path, raw, detail=m) for m in names.is_valid_port_num(raw)]
    return [field.invalid(path, raw, detail=m) for m in names.is_valid_port_name(raw)]


def _nonnegative(o: Obj, key: str) -> None:
    value = o.integer(key)
    if value is not None and value < 0:
        o.errs.append(field.invalid(o.at(key), value, detail=NEGATIVE_MSG))


_RELAXED_ENV_MSG: Final = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)


def _env_name(name: str, path: Path) -> ErrorList:
    """Upstream ``IsRelaxedEnvVarName`` (RelaxedEnvironmentVariableValidation is GA, so the relaxed rule)."""
    if any(not 32 <= ord(ch) <= 126 or ch == "=" for ch in name):
        return [field.invalid(path, name, detail=_RELAXED_ENV_MSG)]
    return []


# --- one container ------------------------------------------------------------------------------------------

_FIELD_REF_PATHS: Final = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_RESOURCE_REF_PATHS: Final = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)


def _validate_ports(c: Obj) -> None:
    seen: set[str] = set()
    for p in c.items("ports"):
        name = p.string("name")
        if name:
            msgs = names.is_valid_port_name(name)
            if msgs:
                p.errs.extend(field.invalid(p.at("name"), name, detail=m) for m in msgs)
            elif name in seen:
                p.errs.append(field.duplicate(p.at("name"), name))
            else:
                seen.add(name)
        port = p.integer("containerPort")
        if port == 0:
            p.errs.append(field.required(p.at("containerPort")))
        elif port is not None:
            p.errs.extend(field.invalid(p.at("containerPort"), port, detail=m) for m in names.is_valid_port_num(port))
        host = p.integer("hostPort")
        if host:
            p.errs.extend(field.invalid(p.at("hostPort"), host, detail=m) for m in names.is_valid_port_num(host))
        _protocol(p)


def _protocol(p: Obj) -> None:
    protocol = p.string("protocol")
    if not protocol:
        p.errs.append(field.required(p.at("protocol")))
    elif protocol not in PROTOCOLS:
        p.errs.append(field.not_supported(p.at("protocol"), protocol, supported=PROTOCOLS))


def _validate_key_ref(ref: Obj) -> None:
    """A configMapKeyRef or secretKeyRef: a DNS-subdomain name and a config-map key."""
    name = ref.string("name")
    ref.errs.extend(_subdomain(name, ref.at("name")))
    key = ref.string("key")
    if not key:
        ref.errs.append(field.required(ref.at("key")))
    else:
        ref.errs.extend(field.invalid(ref.at("key"), key, detail=m) for m in names.is_config_map_key(key))


def _validate_field_ref(ref: Obj) -> None:
    if not ref.string("apiVersion"):
        ref.errs.append(field.required(ref.at("apiVersion")))
        return
    path = ref.string("fieldPath")
    if not path:
        ref.errs.append(field.required(ref.at("fieldPath")))
        return
    base, bracket, rest = path.partition("[")
    if bracket and rest.endswith("]") and len(rest) > 3 and rest[0] == rest[-2] == "'":
        subscript = rest[1:-2]
        if base == "metadata.annotations":
            subscript = subscript.lower()
        elif base != "metadata.labels":
            ref.errs.append(field.invalid(ref.path, base, detail="does not support subscript"))
            return
        ref.errs.extend(field.invalid(ref.path, subscript, detail=m) for m in names.is_qualified_name(subscript))
    elif path not in _FIELD_REF_PATHS:
        ref.errs.append(field.not_supported(ref.at("fieldPath"), path, supported=sorted(_FIELD_REF_PATHS)))


def _validate_env(c: Obj) -> None:
    for ev in c.items("env"):
        name = ev.string("name")
        if not name:
            ev.errs.append(field.required(ev.at("name")))
        else:
            ev.errs.extend(_env_name(name, ev.at("name")))
        source = ev.mapping("valueFrom")
        if source is None:
            continue
        count = 0
        ref = source.mapping("fieldRef")
        if ref is not None:
            count += 1
            _validate_field_ref(ref)
        ref = source.mapping("resourceFieldRef")
        if ref is not None:
            count += 1
            resource = ref.string("resource")
            if not resource:
                ref.errs.append(field.required(ref.at("resource")))
            elif resource not in _RESOURCE_REF_PATHS and not resource.startswith(
                ("requests." + HUGEPAGES_PREFIX, "limits." + HUGEPAGES_PREFIX)
            ):
                ref.errs.append(field.not_supported(ref.at("resource"), resource, supported=_RESOURCE_REF_PATHS))
        for key in ("configMapKeyRef", "secretKeyRef"):
            ref = source.mapping(key)
            if ref is not None:
                count += 1
                _validate_key_ref(ref)
        if count == 0:
            detail = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
            ev.errs.append(field.invalid(source.path, "", detail=detail))
        elif ev.string("value"):
            ev.errs.append(field.invalid(source.path, "", detail="may not be specified when `value` is not empty"))
        elif count > 1:
            detail = "may not have more than one field specified at a time"
            ev.errs.append(field.invalid(source.path, "", detail=detail))


def _validate_env_from(c: Obj) -> None:
    for ev in c.items("envFrom"):
        prefix = ev.string("prefix")
        if prefix:
            ev.errs.extend(_env_name(prefix, ev.at("prefix")))
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = ev.mapping(key)
            if ref is not None:
                count += 1
                name = ref.string("name")
                if not name:
                    ref.errs.append(field.required(ref.at("name")))
                else:
                    masked = name[:-1] + "a" if name.endswith("-") else name  # prefix=true: a trailing '-' is fine
                    ref.errs.extend(
                        field.invalid(ref.at("name"), name, detail=m) for m in names.is_dns1123_subdomain(masked)
                    )
        if count != 1:
            detail = (
                "must specify one of: `configMapRef` or `secretRef`"
                if count == 0
                else "may not have more than one field specified at a time"
            )
            ev.errs.append(field.invalid(c.at("envFrom"), "", detail=detail))


def _local_descending_path(value: str, path: Path) -> ErrorList:
    errs: ErrorList = []
    if value.startswith("/"):
        errs.append(field.invalid(path, value, detail="must be a relative path"))
    if ".." in value.replace("\\", "/").split("/"):
        errs.append(field.invalid(path, value, detail="must not contain '..'"))
    return errs


def _validate_mounts(c: Obj, volumes: Mapping[str, Mapping[str, Any]]) -> None:
    """Upstream ``ValidateVolumeMounts`` and ``ValidateVolumeDevices`` (mount propagation not checked)."""
    mounts_path, devices_path = c.at("volumeMounts"), c.at("volumeDevices")
    mounts, devices = c.items("volumeMounts"), c.items("volumeDevices")
    device_map = {d.string("name"): d.string("devicePath") for d in devices}
    mount_map = {m.string("name"): m.string("mountPath") for m in mounts}
    seen_paths: set[str] = set()
    for m in mounts:
        name, mount_path = m.string("name"), m.string("mountPath")
        if not name:
            m.errs.append(field.required(m.at("name")))
        if name not in volumes:
            m.errs.append(field.not_found(m.at("name"), name))
        if not mount_path:
            m.errs.append(field.required(m.at("mountPath")))
        if mount_path in seen_paths:
            m.errs.append(field.invalid(m.at("mountPath"), mount_path, detail="must be unique"))
        seen_paths.add(mount_path)
        if name in device_map:
            m.errs.append(field.invalid(m.at("name"), name, detail="must not already exist in volumeDevices"))
        if mount_path in device_map.values():
            detail = "must not already exist as a path in volumeDevices"
            m.errs.append(field.invalid(m.at("mountPath"), mount_path, detail=detail))
        sub_path, sub_expr = m.string("subPath"), m.string("subPathExpr")
        if sub_path:  # upstream reports these at volumeMounts.subPath, not at the element
            m.errs.extend(_local_descending_path(sub_path, mounts_path.child("subPath")))
        if sub_expr:
            if sub_path:
                detail = "subPathExpr and subPath are mutually exclusive"
                m.errs.append(field.invalid(m.at("subPathExpr"), sub_expr, detail=detail))
            m.errs.extend(_local_descending_path(sub_expr, mounts_path.child("subPathExpr")))
    seen_names: set[str] = set()
    seen_dev_paths: set[str] = set()
    for d in devices:
        name, dev_path = d.string("name"), d.string("devicePath")
        source = volumes.get(name)
        if not name:
            d.errs.append(field.required(d.at("name")))
        if name in seen_names:
            d.errs.append(field.invalid(d.at("name"), name, detail="must be unique"))
        if source is not None and source.get("persistentVolumeClaim") is None and source.get("ephemeral") is None:
            detail = "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"
            d.errs.append(field.invalid(d.at("name"), name, detail=detail))
        if source is None:
            d.errs.append(field.not_found(d.at("name"), name))
        if not dev_path:
            d.errs.append(field.required(d.at("devicePath")))
        if dev_path in seen_dev_paths:
            d.errs.append(field.invalid(d.at("devicePath"), dev_path, detail="must be unique"))
        if dev_path and _local_descending_path(dev_path.lstrip("/"), devices_path):
            d.errs.append(field.invalid(d.at("devicePath"), dev_path, detail="can not contain backsteps ('..')"))
        else:
            seen_dev_paths.add(dev_path)
        if name in mount_map:
            d.errs.append(field.invalid(d.at("name"), name, detail="must not already exist in volumeMounts"))
        if dev_path in mount_map.values():
            detail = "must not already exist as a path in volumeMounts"
            d.errs.append(field.invalid(d.at("devicePath"), dev_path, detail=detail))
        if name:
            seen_names.add(name)


_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")


def _validate_security_context(c: Obj) -> None:
    sc = c.mapping("securityContext")
    if sc is None:
        return
    for key in ("runAsUser", "runAsGroup"):
        value = sc.integer(key, None)
        if value is not None and not 0 <= value <= MAX_INT32:
            sc.errs.append(field.invalid(sc.at(key), value, detail=names.inclusive_range_error(0, MAX_INT32)))
    if sc.boolean("allowPrivilegeEscalation") is False and sc.boolean("privileged"):
        detail = "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
        sc.errs.append(field.invalid(sc.path, dict(sc.data), detail=detail))


def _validate_common(c: Obj, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str]) -> None:
    """Upstream ``validateContainerCommon``: what regular, init and ephemeral containers share."""
    name = c.string("name")
    c.errs.extend([field.required(c.at("name"))] if not name else _dns_label(name, c.at("name")))
    if not c.string("image"):
        c.errs.append(field.required(c.at("image")))
    policy = c.string("terminationMessagePolicy")
    if not policy:
        c.errs.append(field.required(c.at("terminationMessagePolicy")))
    elif policy not in _MESSAGE_POLICIES:
        c.errs.append(field.not_supported(c.at("terminationMessagePolicy"), policy, supported=_MESSAGE_POLICIES))
    _validate_ports(c)
    _validate_env(c)
    _validate_env_from(c)
    _validate_mounts(c, volumes)
    pull = c.string("imagePullPolicy")
    if not pull:
        c.errs.append(field.required(c.at("imagePullPolicy")))
    elif pull not in _PULL_POLICIES:
        c.errs.append(field.not_supported(c.at("imagePullPolicy"), pull, supported=_PULL_POLICIES))
    res = c.mapping("resources")
    if res is not None:
        validate_resource_requirements(res, name_fn=validate_container_resource_name, claim_names=claim_names)
    _validate_security_context(c)


_HANDLERS: Final = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")


def _validate_handler(h: Obj, *, grace: int | None, allowed: tuple[str, ...]) -> None:
    count = 0
    for key in _HANDLERS:
        if key not in allowed or not h.has(key):
            continue
        if count:
            h.errs.append(field.forbidden(h.at(key), "may not specify more than 1 handler type"))
            continue
        count += 1
        action = h.mapping(key)
        if action is None:
            continue
        if key == "exec" and not action.strings("command"):
            h.errs.append(field.required(action.at("command")))
        elif key == "httpGet":
            if not action.string("path"):
                h.errs.append(field.required(action.at("path")))
            h.errs.extend(validate_port_num_or_name(action.data.get("port", 0), action.at("port")))
            scheme = action.string("scheme")
            if scheme not in ("HTTP", "HTTPS"):
                h.errs.append(field.not_supported(action.at("scheme"), scheme, supported=("HTTP", "HTTPS")))
        elif key in ("tcpSocket", "grpc"):
            h.errs.extend(validate_port_num_or_name(action.data.get("port", 0), action.at("port")))
        elif key == "sleep":
            seconds = action.integer("seconds")
            if grace is not None and seconds is not None and not 0 <= seconds <= grace:
                detail = f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                h.errs.append(field.invalid(h.at("sleep"), seconds, detail=detail))
    if count == 0:
        h.errs.append(field.required(h.path, "must specify a handler type"))


def _validate_probes_and_lifecycle(c: Obj, grace: int | None) -> None:
    lifecycle = c.mapping("lifecycle")
    if lifecycle is not None:
        for key in ("postStart", "preStop"):
            handler = lifecycle.mapping(key)
            if handler is not None:
                _validate_handler(handler, grace=grace, allowed=("exec", "httpGet", "tcpSocket", "sleep"))
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.mapping(key)
        if probe is None:
            continue
        _validate_handler(probe, grace=grace, allowed=("exec", "httpGet", "tcpSocket", "grpc"))
        for k in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
            _nonnegative(probe, k)
        tgps = probe.integer("terminationGracePeriodSeconds", None)
        if tgps is not None and tgps <= 0:
            probe.errs.append(
                field.invalid(probe.at("terminationGracePeriodSeconds"), tgps, detail="must be greater than 0")
            )
        success = probe.integer("successThreshold")
        if key != "readinessProbe" and success is not None and success != 1:
            probe.errs.append(field.invalid(probe.at("successThreshold"), success, detail="must be 1"))
        if key == "readinessProbe" and tgps is not None:
            detail = "must not be set for readinessProbes"
            probe.errs.append(field.invalid(probe.at("terminationGracePeriodSeconds"), tgps, detail=detail))


def _host_port_conflicts(containers: list[Obj], seen: set[str]) -> None:
    """Upstream ``AccumulateUniqueHostPorts``: ``<protocol>/<hostIP>/<hostPort>`` at most once."""
    for c in containers:
        for p in c.items("ports"):
            port = p.integer("hostPort")
            if not port:
                continue
            key = f"{p.string('protocol')}/{p.string('hostIP')}/{port}"
            if key in seen:
                p.errs.append(field.duplicate(p.at("hostPort"), key))
            seen.add(key)


def validate_containers(
    spec: Obj, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str], grace: int | None
) -> None:
    """Upstream ``validateContainers``: at least one; unique names; probes; no restartPolicy; host ports."""
    if not spec.array("containers"):
        spec.errs.append(field.required(spec.at("containers")))
        return
    containers = spec.items("containers")
    seen: set[str] = set()
    for c in containers:
        _validate_common(c, volumes=volumes, claim_names=claim_names)
        name = c.string("name")
        if name in seen:
            c.errs.append(field.duplicate(c.at("name"), name))
        seen.add(name)
        _validate_probes_and_lifecycle(c, grace)
        if c.has("restartPolicy"):
            c.errs.append(field.forbidden(c.at("restartPolicy"), "may not be set for non-init containers"))
    _host_port_conflicts(containers, set())


def validate_init_containers(
    spec: Obj, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str], grace: int | None
) -> None:
    """Upstream ``validateInitContainers``: sidecars (restartPolicy Always) may have probes and lifecycle."""
    seen = {c.string("name") for c in spec.items("containers")}
    for c in spec.items("initContainers"):
        _validate_common(c, volumes=volumes, claim_names=claim_names)
        policy = c.opt_string("restartPolicy")
        if policy is not None and policy != "Always":
            c.errs.append(field.not_supported(c.at("restartPolicy"), policy, supported=("Always",)))
        name = c.string("name")
        if name in seen:
            c.errs.append(field.duplicate(c.at("name"), name))
        elif name:
            seen.add(name)
        _host_port_conflicts([c], set())
        if policy == "Always":
            _validate_probes_and_lifecycle(c, grace)
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.has(key):
                    detail = "may not be set for init containers without restartPolicy=Always"
                    c.errs.append(field.forbidden(c.at(key), detail))


_EPHEMERAL_FORBIDDEN: Final = ("ports", "resources", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle")


def validate_ephemeral_containers(
    spec: Obj, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str]
) -> None:
    """Upstream ``validateEphemeralContainers``: unique names across all kinds, an existing target, no
    ports, resources, probes or lifecycle (they must not look like part of the workload)."""
    others = {c.string("name") for key in ("containers", "initContainers") for c in spec.items(key)}
    seen = set(others)
    for c in spec.items("ephemeralContainers"):
        _validate_common(c, volumes=volumes, claim_names=claim_names)
        image = c.string("image")
        if image != image.strip():
            c.errs.append(field.invalid(c.at("image"), image, detail="must not have leading or trailing whitespace"))
        name = c.string("name")
        if name in seen:
            c.errs.append(field.duplicate(c.at("name"), name))
        seen.add(name)
        target = c.string("targetContainerName")
        if target and target not in others:
            c.errs.append(field.not_found(c.at("targetContainerName"), target))
        for key in _EPHEMERAL_FORBIDDEN:
            if c.data.get(key) not in (None, [], {}):
                c.errs.append(field.forbidden(c.at(key), "cannot be set for an Ephemeral Container"))
        for m in c.items("volumeMounts"):
            for key in ("subPath", "subPathExpr"):
                if m.string(key):
                    m.errs.append(field.forbidden(m.at(key), "cannot be set for an Ephemeral Container"))
