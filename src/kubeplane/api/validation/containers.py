"""Container-level validation of pod specs, as kube-apiserver's ``validateContainerCommon`` and its callers.

Regular, init and ephemeral containers share :func:`_validate_common` (name, image, ports, env, mounts, pull
policy, resources, security context); each kind then adds its own rules: probes and lifecycle for regular
containers and sidecars (init containers with ``restartPolicy: Always``), the absence of anything that would make
an ephemeral container look like part of the workload. The pod-level rules that call these live in
:mod:`.pods`; resource names and quantities in :mod:`.resources`.

Invariants
    * Containers are read with :meth:`~.reader.Reader.items`: a list element that is not an object is reported
      once and then ignored, so counts and duplicate checks see only real containers.
    * Volumes arrive already validated, by name (``volumes``), and resource claims as the set of the pod's claim
      names (``claim_names``): a mount or claim reference is checked against what is valid, not what was sent.
    * Host ports are unique per ``<protocol>/<hostIP>/<hostPort>`` across the regular containers and within
      each init container, as upstream's ``AccumulateUniqueHostPorts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    MAX_INT32,
    PROTOCOLS,
    invalid_each,
    read_nonnegative,
    validate_port_num_or_name,
)
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import Reader
from kubeplane.api.validation.resources import (
    HUGEPAGES_PREFIX,
    validate_container_resource_name,
    validate_resource_requirements,
)

__all__ = ["validate_containers", "validate_ephemeral_containers", "validate_init_containers"]

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


def _validate_ports(c: Reader) -> None:
    seen: set[str] = set()
    for p in c.items("ports"):
        name = p.string("name")
        if name:
            msgs = names.is_valid_port_name(name)
            if msgs:
                p.errs.extend(invalid_each(p.at("name"), name, msgs))
            elif name in seen:
                p.errs.append(field.duplicate(p.at("name"), name))
            else:
                seen.add(name)
        port = p.integer("containerPort")
        if port == 0:
            p.errs.append(field.required(p.at("containerPort")))
        elif port is not None:
            p.errs.extend(invalid_each(p.at("containerPort"), port, names.is_valid_port_num(port)))
        host = p.integer("hostPort")
        if host:
            p.errs.extend(invalid_each(p.at("hostPort"), host, names.is_valid_port_num(host)))
        _protocol(p)


def _protocol(p: Reader) -> None:
    protocol = p.string("protocol")
    if not protocol:
        p.errs.append(field.required(p.at("protocol")))
    elif protocol not in PROTOCOLS:
        p.errs.append(field.not_supported(p.at("protocol"), protocol, supported=PROTOCOLS))


def _validate_key_ref(ref: Reader) -> None:
    """A configMapKeyRef or secretKeyRef: a DNS-subdomain name and a config-map key."""
    name = ref.string("name")
    ref.errs.extend(invalid_each(ref.at("name"), name, names.is_dns1123_subdomain(name)))
    key = ref.string("key")
    if not key:
        ref.errs.append(field.required(ref.at("key")))
    else:
        ref.errs.extend(invalid_each(ref.at("key"), key, names.is_config_map_key(key)))


def _validate_field_ref(ref: Reader) -> None:
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
        ref.errs.extend(invalid_each(ref.path, subscript, names.is_qualified_name(subscript)))
    elif path not in _FIELD_REF_PATHS:
        ref.errs.append(field.not_supported(ref.at("fieldPath"), path, supported=sorted(_FIELD_REF_PATHS)))


def _validate_env(c: Reader) -> None:
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


def _validate_env_from(c: Reader) -> None:
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
                    ref.errs.extend(invalid_each(ref.at("name"), name, names.is_dns1123_subdomain(masked)))
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


def _validate_mounts(c: Reader, volumes: Mapping[str, Mapping[str, Any]]) -> None:
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


def _validate_security_context(c: Reader) -> None:
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


def _validate_common(c: Reader, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str]) -> None:
    """Upstream ``validateContainerCommon``: what regular, init and ephemeral containers share."""
    name = c.string("name")
    if not name:
        c.errs.append(field.required(c.at("name")))
    else:
        c.errs.extend(invalid_each(c.at("name"), name, names.is_dns1123_label(name)))
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


def _validate_handler(h: Reader, *, grace: int | None, allowed: tuple[str, ...]) -> None:
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
            h.errs.extend(validate_port_num_or_name(action, "port"))
            scheme = action.string("scheme")
            if scheme not in ("HTTP", "HTTPS"):
                h.errs.append(field.not_supported(action.at("scheme"), scheme, supported=("HTTP", "HTTPS")))
        elif key in ("tcpSocket", "grpc"):
            h.errs.extend(validate_port_num_or_name(action, "port"))
        elif key == "sleep":
            seconds = action.integer("seconds")
            if grace is not None and seconds is not None and not 0 <= seconds <= grace:
                detail = f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                h.errs.append(field.invalid(h.at("sleep"), seconds, detail=detail))
    if count == 0:
        h.errs.append(field.required(h.path, "must specify a handler type"))


def _validate_probes_and_lifecycle(c: Reader, grace: int | None) -> None:
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
        read_nonnegative(
            probe, "initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"
        )
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


def _host_port_conflicts(containers: list[Reader], seen: set[str]) -> None:
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
    spec: Reader, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str], grace: int | None
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
    spec: Reader, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str], grace: int | None
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
    spec: Reader, *, volumes: Mapping[str, Mapping[str, Any]], claim_names: frozenset[str]
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
