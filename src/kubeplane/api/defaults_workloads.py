"""API-server defaulting for pods and everything that carries a pod template, over wire-format dicts.

Upstream is ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_Pod``, ``SetDefaults_PodSpec``,
``SetDefaults_Container``, ``SetDefaults_Volume``, ``SetDefaults_Probe`` ...) as ``zz_generated.defaults.go``
strings them together, and ``pkg/apis/apps/v1/defaults.go``; :mod:`kubeplane.api.defaults` dispatches here.

Two levels, as upstream keeps them apart on purpose:

* :func:`set_defaults_pod_spec` is everything a *PodSpec* gets wherever it appears (a pod, or the template of a
  PodTemplate, ReplicationController, Deployment, ReplicaSet, DaemonSet, StatefulSet): restartPolicy,
  dnsPolicy, schedulerName, terminationGracePeriodSeconds, securityContext, and the container, probe, volume
  and resource-list defaults below it. One function, reused by every workload.
* :func:`set_defaults_pod` adds what only a *Pod* gets (upstream: "we only want this defaulting semantic to take
  place on a v1.Pod and not a v1.PodTemplate"): a container's missing requests copied from its limits,
  ``enableServiceLinks: true``, and under ``hostNetwork`` each container port's hostPort from its
  containerPort. So a Deployment's template never shows requests it was not given; its pods do.

Wire-format rules (why the helpers look the way they do): a Go pointer left nil is a JSON key that is absent or
``null``; a Go string or int left at its zero value is absent, ``null``, ``""`` or ``0``; an empty map or list
is dropped by ``omitempty``, so defaulting never writes one (except ``securityContext: {}``, which is a pointer
upstream sets to an empty struct). Values of the wrong JSON type are left alone -- validation reports them;
defaulting never raises. Every function is idempotent: a second pass finds nothing unset.

Not here: ``status.phase: Pending`` (the pod registry sets it on create, not the defaulter), priority,
service-account and toleration defaults (admission plugins), and the Go zero-value structs a real server
serialises (``resources: {}``) -- they are not defaults.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from kubeplane.api.quantity import NANO, Quantity, QuantityError

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS",
    "TERMINATION_MESSAGE_PATH_DEFAULT",
    "VOLUME_DEFAULT_MODE",
    "JSONObject",
    "default_image_pull_policy",
    "image_tag",
    "round_up_resource_list",
    "set_defaults_daemon_set",
    "set_defaults_deployment",
    "set_defaults_pod",
    "set_defaults_pod_spec",
    "set_defaults_pod_template",
    "set_defaults_pod_template_spec",
    "set_defaults_pvc",
    "set_defaults_pvc_spec",
    "set_defaults_replica_set",
    "set_defaults_replication_controller",
    "set_defaults_stateful_set",
    "set_defaults_volume_source",
]

JSONObject = dict[str, Any]

TERMINATION_MESSAGE_PATH_DEFAULT: Final = "/dev/termination-log"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: Final = 30
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
VOLUME_DEFAULT_MODE: Final = 0o644  # 420: secret, configMap, downwardAPI and projected volumes
_TOKEN_EXPIRATION_SECONDS: Final = 3600
_MILLI_NANOS: Final = NANO // 1000


# --- wire-format helpers ---------------------------------------------------------------------------------------


def _obj(parent: JSONObject, key: str) -> JSONObject | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _ensure(parent: JSONObject, key: str) -> JSONObject | None:
    """The object at ``key``, created empty when absent or null (a Go struct is always there); None when the
    key holds something that is not an object."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _objs(parent: JSONObject, key: str) -> Iterator[JSONObject]:
    value = parent.get(key)
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def _set_nil(obj: JSONObject, key: str, value: Any) -> None:
    """Default a Go pointer: only an absent or null key counts as unset."""
    if obj.get(key) is None:
        obj[key] = value


def _set_empty(obj: JSONObject, key: str, value: Any) -> None:
    """Default a Go string or number: absent, null, ``""`` and ``0`` are all its zero value."""
    current = obj.get(key)
    if current is None or current == "" or (current == 0 and not isinstance(current, bool)):
        obj[key] = value


# --- images and resource lists ---------------------------------------------------------------------------------

# The distribution/reference grammar (ReferenceRegexp) with Go's ASCII \w.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_NAME = rf"(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"({_NAME})(?::([\w][\w.-]{{0,127}}))?(?:@({_DIGEST}))?", re.ASCII)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")
_MAX_NAME_LENGTH = 255


def image_tag(image: str) -> str | None:
    """The tag kubelet's ``parsers.ParseImageName`` finds in ``image``: ``"latest"`` when the reference has
    neither tag nor digest, ``""`` for a digest without tag, None when the reference does not parse (upstream's
    error, which its defaulter ignores). Follows distribution/reference's ``ParseNormalizedNamed``: a bare
    64-hex identifier is refused, the repository path (not the tag) must be lower case, and the 255-character
    name limit applies to the normalised name (``nginx`` is ``docker.io/library/nginx``)."""
    if _IDENTIFIER.fullmatch(image):
        return None
    slash = image.find("/")
    first = image[:slash] if slash >= 0 else ""
    if slash < 0 or (not any(ch in first for ch in ".:") and first != "localhost" and first.lower() == first):
        domain, remainder = "docker.io", image
    else:
        domain, remainder = image[:slash], image[slash + 1 :]
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in remainder:
        remainder = "library/" + remainder
    remote = remainder.partition(":")[0]
    if remote.lower() != remote:
        return None
    match = _REFERENCE.fullmatch(f"{domain}/{remainder}")
    if match is None or len(match.group(1)) > _MAX_NAME_LENGTH:
        return None
    tag, digest = match.group(2), match.group(3)
    if tag:
        return tag
    return "" if digest else "latest"


def default_image_pull_policy(image: Any) -> str:
    """``Always`` for a ``:latest`` (or untagged, undigested) image, else ``IfNotPresent`` -- also for an
    image that does not parse, as upstream (``SetDefaults_Container`` ignores the parse error)."""
    return "Always" if isinstance(image, str) and image_tag(image) == "latest" else "IfNotPresent"


def round_up_resource_list(resources: Any) -> None:
    """``SetDefaults_ResourceList``: round every quantity up (away from zero) to milli precision, so ``"0.1m"``
    is stored as ``"1m"`` ("if you want some resources, you should get some resources"). Values already at milli
    precision keep their spelling; values that do not parse are left for validation."""
    if not isinstance(resources, dict):
        return
    for name, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        try:
            quantity = Quantity.parse(value)
        except QuantityError:
            continue
        if quantity.nanos % _MILLI_NANOS:
            sign = -1 if quantity.nanos < 0 else 1
            millis = -(-abs(quantity.nanos) // _MILLI_NANOS)
            resources[name] = str(Quantity(sign * millis * _MILLI_NANOS, quantity.format))


# --- containers ------------------------------------------------------------------------------------------------


def _set_defaults_http_get(action: JSONObject | None) -> None:
    if action is not None:
        _set_empty(action, "path", "/")
        _set_empty(action, "scheme", "HTTP")


def _set_defaults_probe(probe: JSONObject | None) -> None:
    """``SetDefaults_Probe``: the four int fields are plain int32 upstream, so an explicit 0 is defaulted too."""
    if probe is None:
        return
    _set_empty(probe, "timeoutSeconds", 1)
    _set_empty(probe, "periodSeconds", 10)
    _set_empty(probe, "successThreshold", 1)
    _set_empty(probe, "failureThreshold", 3)
    _set_defaults_http_get(_obj(probe, "httpGet"))
    grpc = _obj(probe, "grpc")
    if grpc is not None:
        _set_nil(grpc, "service", "")


def _set_defaults_field_ref(holder: JSONObject) -> None:
    field_ref = _obj(holder, "fieldRef")
    if field_ref is not None:
        _set_empty(field_ref, "apiVersion", "v1")


def _set_defaults_container(container: JSONObject) -> None:
    """``SetDefaults_Container`` and what the generated defaulter does below a container."""
    if container.get("imagePullPolicy") in (None, ""):
        container["imagePullPolicy"] = default_image_pull_policy(container.get("image"))
    _set_empty(container, "terminationMessagePath", TERMINATION_MESSAGE_PATH_DEFAULT)
    _set_empty(container, "terminationMessagePolicy", "File")
    for port in _objs(container, "ports"):
        _set_empty(port, "protocol", "TCP")
    for env in _objs(container, "env"):
        value_from = _obj(env, "valueFrom")
        if value_from is not None:
            _set_defaults_field_ref(value_from)
    resources = _obj(container, "resources")
    if resources is not None:
        round_up_resource_list(resources.get("limits"))
        round_up_resource_list(resources.get("requests"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _set_defaults_probe(_obj(container, probe))
    lifecycle = _obj(container, "lifecycle")
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            handler = _obj(lifecycle, hook)
            if handler is not None:
                _set_defaults_http_get(_obj(handler, "httpGet"))


def _all_containers(spec: JSONObject) -> Iterator[JSONObject]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from _objs(spec, key)


# --- volumes ---------------------------------------------------------------------------------------------------


def set_defaults_volume_source(source: JSONObject) -> None:
    """The volume-source defaults a pod volume and a PersistentVolume share: hostPath ``type: ""``, iSCSI
    ``iscsiInterface: default``, RBD ``pool: rbd``, ``user: admin``, ``keyring: /etc/ceph/keyring``."""
    host_path = _obj(source, "hostPath")
    if host_path is not None:
        _set_nil(host_path, "type", "")
    iscsi = _obj(source, "iscsi")
    if iscsi is not None:
        _set_empty(iscsi, "iscsiInterface", "default")
    rbd = _obj(source, "rbd")
    if rbd is not None:
        _set_empty(rbd, "pool", "rbd")
        _set_empty(rbd, "user", "admin")
        _set_empty(rbd, "keyring", "/etc/ceph/keyring")


def _set_defaults_volume(volume: JSONObject) -> None:
    """``SetDefaults_Volume``: a volume naming no source is an ``emptyDir``; then per-source defaults."""
    if all(value is None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}
    set_defaults_volume_source(volume)
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = _obj(volume, key)
        if source is not None:
            _set_nil(source, "defaultMode", VOLUME_DEFAULT_MODE)
    downward = _obj(volume, "downwardAPI")
    if downward is not None:
        for item in _objs(downward, "items"):
            _set_defaults_field_ref(item)
    projected = _obj(volume, "projected")
    if projected is not None:
        for projection in _objs(projected, "sources"):
            inner = _obj(projection, "downwardAPI")
            if inner is not None:
                for item in _objs(inner, "items"):
                    _set_defaults_field_ref(item)
            token = _obj(projection, "serviceAccountToken")
            if token is not None:
                _set_nil(token, "expirationSeconds", _TOKEN_EXPIRATION_SECONDS)
    image = _obj(volume, "image")
    if image is not None and image.get("pullPolicy") in (None, ""):
        image["pullPolicy"] = default_image_pull_policy(image.get("reference"))
    ephemeral = _obj(volume, "ephemeral")
    template = _obj(ephemeral, "volumeClaimTemplate") if ephemeral is not None else None
    if template is not None:
        spec = _ensure(template, "spec")
        if spec is not None:
            set_defaults_pvc_spec(spec)


def set_defaults_pvc_spec(spec: JSONObject) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec``: ``volumeMode: Filesystem``; resource lists rounded."""
    _set_nil(spec, "volumeMode", "Filesystem")
    resources = _obj(spec, "resources")
    if resources is not None:
        round_up_resource_list(resources.get("limits"))
        round_up_resource_list(resources.get("requests"))


def set_defaults_pvc(claim: JSONObject) -> None:
    """A PersistentVolumeClaim, also as a StatefulSet's volumeClaimTemplate: ``status.phase: Pending`` and
    the spec defaults."""
    spec = _ensure(claim, "spec")
    if spec is not None:
        set_defaults_pvc_spec(spec)
    status = _ensure(claim, "status")
    if status is not None:
        _set_empty(status, "phase", "Pending")
        round_up_resource_list(status.get("capacity"))
        round_up_resource_list(status.get("allocatedResources"))


# --- pods and pod templates ------------------------------------------------------------------------------------


def set_defaults_pod_spec(spec: JSONObject) -> None:
    """``SetDefaults_PodSpec`` and every nested default of a PodSpec, for pods and pod templates alike."""
    _set_empty(spec, "dnsPolicy", "ClusterFirst")
    _set_empty(spec, "restartPolicy", "Always")
    _set_nil(spec, "securityContext", {})
    _set_nil(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    _set_empty(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
    for volume in _objs(spec, "volumes"):
        _set_defaults_volume(volume)
    for container in _all_containers(spec):
        _set_defaults_container(container)
    round_up_resource_list(spec.get("overhead"))
    resources = _obj(spec, "resources")
    if resources is not None:
        round_up_resource_list(resources.get("limits"))
        round_up_resource_list(resources.get("requests"))


def _requests_from_limits(container: JSONObject) -> None:
    resources = _obj(container, "resources")
    limits = _obj(resources, "limits") if resources is not None else None
    if resources is None or not limits:
        return
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    if isinstance(requests, dict):
        for name, value in limits.items():
            requests.setdefault(name, value)


def set_defaults_pod(pod: JSONObject) -> None:
    """A Pod: the pod-only defaults of ``SetDefaults_Pod``, then :func:`set_defaults_pod_spec`.

    Requests are copied from limits per container (init containers too) for each resource the container does
    not request, before rounding, as upstream orders it."""
    spec = _ensure(pod, "spec")
    if spec is None:
        return
    for container in (*_objs(spec, "containers"), *_objs(spec, "initContainers")):
        _requests_from_limits(container)
    _set_nil(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for container in (*_objs(spec, "containers"), *_objs(spec, "initContainers")):
            for port in _objs(container, "ports"):
                _set_empty(port, "hostPort", port.get("containerPort", 0))
    set_defaults_pod_spec(spec)


def set_defaults_pod_template_spec(template: JSONObject) -> None:
    """A PodTemplateSpec (``spec.template`` of a workload): PodSpec defaults only, never the pod-only ones."""
    spec = _ensure(template, "spec")
    if spec is not None:
        set_defaults_pod_spec(spec)


def set_defaults_pod_template(obj: JSONObject) -> None:
    """core/v1 PodTemplate, whose template sits at the top level."""
    template = _ensure(obj, "template")
    if template is not None:
        set_defaults_pod_template_spec(template)


def _workload_template(obj: JSONObject) -> JSONObject | None:
    spec = _ensure(obj, "spec")
    if spec is not None:
        template = _ensure(spec, "template")
        if template is not None:
            set_defaults_pod_template_spec(template)
    return spec


def set_defaults_replication_controller(rc: JSONObject) -> None:
    """``SetDefaults_ReplicationController``: selector and object labels from the template's labels when
    empty; ``replicas: 1`` (declarative upstream). The template is a pointer: defaulted only when present."""
    spec = _ensure(rc, "spec")
    if spec is None:
        return
    _set_nil(spec, "replicas", 1)
    template = _obj(spec, "template")
    if template is None:
        return
    metadata = _obj(template, "metadata")
    labels = _obj(metadata, "labels") if metadata is not None else None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        rc_meta = _ensure(rc, "metadata")
        if rc_meta is not None and not rc_meta.get("labels"):
            rc_meta["labels"] = dict(labels)
    set_defaults_pod_template_spec(template)


# --- apps/v1 ---------------------------------------------------------------------------------------------------


def set_defaults_deployment(deployment: JSONObject) -> None:
    """``SetDefaults_Deployment``: replicas 1, RollingUpdate with maxUnavailable and maxSurge ``"25%"`` (only
    for the RollingUpdate type: a Recreate deployment gets no rollingUpdate), revisionHistoryLimit 10,
    progressDeadlineSeconds 600."""
    spec = _workload_template(deployment)
    if spec is None:
        return
    _set_nil(spec, "replicas", 1)
    strategy = _ensure(spec, "strategy")
    if strategy is not None:
        _set_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _ensure(strategy, "rollingUpdate")
            if rolling is not None:
                _set_nil(rolling, "maxUnavailable", "25%")
                _set_nil(rolling, "maxSurge", "25%")
    _set_nil(spec, "revisionHistoryLimit", 10)
    _set_nil(spec, "progressDeadlineSeconds", 600)


def set_defaults_replica_set(replica_set: JSONObject) -> None:
    """``SetDefaults_ReplicaSet``: replicas 1, plus the template's PodSpec defaults."""
    spec = _workload_template(replica_set)
    if spec is not None:
        _set_nil(spec, "replicas", 1)


def set_defaults_daemon_set(daemon_set: JSONObject) -> None:
    """``SetDefaults_DaemonSet``: RollingUpdate with maxUnavailable 1 and maxSurge 0 (ints, unlike a
    Deployment's percentages), revisionHistoryLimit 10."""
    spec = _workload_template(daemon_set)
    if spec is None:
        return
    strategy = _ensure(spec, "updateStrategy")
    if strategy is not None:
        _set_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _ensure(strategy, "rollingUpdate")
            if rolling is not None:
                _set_nil(rolling, "maxUnavailable", 1)
                _set_nil(rolling, "maxSurge", 0)
    _set_nil(spec, "revisionHistoryLimit", 10)


def set_defaults_stateful_set(stateful_set: JSONObject) -> None:
    """``SetDefaults_StatefulSet``: podManagementPolicy OrderedReady; an unset updateStrategy becomes
    RollingUpdate with partition 0 and maxUnavailable 1 (MaxUnavailableStatefulSet, beta and on since 1.35);
    persistentVolumeClaimRetentionPolicy Retain/Retain (StatefulSetAutoDeletePVC, GA); replicas 1;
    revisionHistoryLimit 10; each volumeClaimTemplate defaulted as a PersistentVolumeClaim.

    As upstream, an explicit ``type: RollingUpdate`` without a ``rollingUpdate`` block stays without one; only an
    unset type gets the block created."""
    spec = _workload_template(stateful_set)
    if spec is None:
        return
    _set_empty(spec, "podManagementPolicy", "OrderedReady")
    strategy = _ensure(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") in (None, ""):
            strategy["type"] = "RollingUpdate"
            _set_nil(strategy, "rollingUpdate", {})
        rolling = _obj(strategy, "rollingUpdate")
        if strategy["type"] == "RollingUpdate" and rolling is not None:
            _set_nil(rolling, "partition", 0)
            _set_nil(rolling, "maxUnavailable", 1)
    retention = _ensure(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _set_empty(retention, "whenDeleted", "Retain")
        _set_empty(retention, "whenScaled", "Retain")
    _set_nil(spec, "replicas", 1)
    _set_nil(spec, "revisionHistoryLimit", 10)
    for claim in _objs(spec, "volumeClaimTemplates"):
        set_defaults_pvc(claim)
