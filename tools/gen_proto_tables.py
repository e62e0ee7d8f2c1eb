"""Generate ``src/kubeplane/api/proto_tables.json`` from upstream ``generated.proto`` files.

Why: kubectl v1.37 sends the bodies of built-in types as Kubernetes protobuf
(``application/vnd.kubernetes.protobuf``) from its typed clientset (``kubectl create deployment``, ``create
namespace``, ``create secret`` ...). :mod:`kubeplane.api.protobuf` decodes those bodies into the same JSON dicts
the JSON path sees, and needs, per message, field number -> (JSON name, type, repeated). In every k8s.io
``generated.proto`` the proto field name is the JSON name (``optional string restartPolicy = 3;``), so the
``.proto`` text is enough for names, numbers and types. This tool is run by hand and its output is committed;
kubeplane never needs a protobuf library.

Input: a directory holding copies of the upstream files under their package paths, e.g.
``<root>/api/core/v1/generated.proto`` (k8s.io/api) and ``<root>/apimachinery/pkg/apis/meta/v1/generated.proto``
(k8s.io/apimachinery). Comments are ignored, so trimmed copies work too.

What ``.proto`` text does not say, and this tool adds by hand (it fails if an entry names no parsed field):

* :data:`INLINE` -- Go structs embedded with ``json:",inline"`` (``LocalObjectReference`` in key selectors,
  ``VolumeSource`` in ``Volume``, ``ProbeHandler`` in ``Probe`` ...): the proto has a field, JSON has the
  embedded struct's keys in the parent.
* :data:`KEEP_ZERO` -- fields whose zero value is kept. Go's generated marshallers write every non-pointer
  scalar, even ``""``/``0``/``false`` (see ``tests/api/data/deployment.pb``: ``generateName: ""``, ``stdin:
  false``), and write pointer scalars only when set. The JSON form drops zero ``omitempty`` values and keeps a
  set pointer even at zero (``replicas: 0``). So a zero scalar is dropped unless the field is a pointer in the
  upstream Go types (``*int32 replicas``) or has no ``omitempty`` and is a number that validation reads.

Output format (sorted, deterministic, one message per line)::

    {"kinds": {"<apiVersion>": {"<Kind>": "<message>", ...}, ...},
     "messages": {"<package>.<Message>": [[<number>, "<jsonName>", "<type>", <flags>], ...], ...}}

``<type>`` is a protobuf scalar (``string``, ``int32``, ``bytes`` ...), a fully qualified message name, or
``map<K,V>`` with V resolved. ``<flags>``: 1 repeated, 2 inline, 4 keep zero. Kinds of meta/v1 (DeleteOptions,
Status ...) are listed under ``meta.k8s.io/v1`` and apply to every group version.

Usage: ``.venv/bin/python tools/gen_proto_tables.py --proto-root /tmp/protos [--check]``.

Adding packages: ``--add k8s.io.api.scheduling.v1beta1 [--add ...]`` takes only those packages' messages and kinds
from the root (the other ``.proto`` files there resolve their references) and merges them into the committed
tables, keeping every other message. The committed tables hold fields newer than any one mirror commit
(``NodeFeatures.containerUlimits``), so regenerating them wholesale from one commit would lose fields; a
package added later (scheduling.k8s.io/v1beta1, from the k8s.io/api commit ``gotypes.json`` records) is merged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "src" / "kubeplane" / "api" / "proto_tables.json"

SCALARS = frozenset(
    {
        "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
        "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
    }
)  # fmt: skip

REPEATED, INLINE_FLAG, KEEP_ZERO_FLAG = 1, 2, 4

_CORE = "k8s.io.api.core.v1."
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."

# Embedded Go structs (json:",inline"): upstream k8s.io/api/core/v1/types.go.
INLINE: dict[str, tuple[str, ...]] = {
    _CORE + "ConfigMapEnvSource": ("localObjectReference",),
    _CORE + "ConfigMapKeySelector": ("localObjectReference",),
    _CORE + "ConfigMapProjection": ("localObjectReference",),
    _CORE + "ConfigMapVolumeSource": ("localObjectReference",),
    _CORE + "SecretEnvSource": ("localObjectReference",),
    _CORE + "SecretKeySelector": ("localObjectReference",),
    _CORE + "SecretProjection": ("localObjectReference",),
    _CORE + "EphemeralContainer": ("ephemeralContainerCommon",),
    _CORE + "Volume": ("volumeSource",),
    _CORE + "PersistentVolumeSpec": ("persistentVolumeSource",),
    _CORE + "Probe": ("handler",),
    _CORE + "VolumeMountStatus": ("volumeStatus",),
}

# Pointer scalars (explicit zero differs from unset) and non-omitempty numbers: upstream Go types.
KEEP_ZERO: dict[str, tuple[str, ...]] = {
    "k8s.io.api.authentication.v1.TokenRequestSpec": ("expirationSeconds",),
    _META + "DeleteOptions": (
        "gracePeriodSeconds", "orphanDependents", "propagationPolicy",
        "ignoreStoreReadErrorWithClusterBreakingPotential",
    ),
    _META + "Preconditions": ("uid", "resourceVersion"),
    _META + "ObjectMeta": ("deletionGracePeriodSeconds",),
    _META + "OwnerReference": ("controller", "blockOwnerDeletion"),
    _META + "ListMeta": ("remainingItemCount",),
    _META + "ListOptions": ("sendInitialEvents",),
    _META + "PatchOptions": ("force",),
    _CORE + "PodSpec": (
        "terminationGracePeriodSeconds", "activeDeadlineSeconds", "automountServiceAccountToken",
        "shareProcessNamespace", "priority", "enableServiceLinks", "preemptionPolicy", "setHostnameAsFQDN",
        "hostUsers", "runtimeClassName", "hostnameOverride",
    ),
    _CORE + "Container": ("restartPolicy",),
    _CORE + "EphemeralContainerCommon": ("restartPolicy",),
    _CORE + "ContainerPort": ("containerPort",),
    _CORE + "ContainerStatus": ("ready", "restartCount", "started", "stopSignal"),
    _CORE + "LinuxContainerUser": ("uid", "gid"),
    _CORE + "Lifecycle": ("stopSignal",),
    _CORE + "SecurityContext": (
        "privileged", "runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
        "allowPrivilegeEscalation", "procMount",
    ),
    _CORE + "PodSecurityContext": (
        "runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "fsGroupChangePolicy", "supplementalGroupsPolicy",
        "seLinuxChangePolicy",
    ),
    _CORE + "WindowsSecurityContextOptions": (
        "gmsaCredentialSpecName", "gmsaCredentialSpec", "runAsUserName", "hostProcess",
    ),
    _CORE + "SeccompProfile": ("localhostProfile",),
    _CORE + "AppArmorProfile": ("localhostProfile",),
    _CORE + "Toleration": ("tolerationSeconds",),
    _CORE + "Probe": ("terminationGracePeriodSeconds",),
    _CORE + "GRPCAction": ("service",),
    _CORE + "TopologySpreadConstraint": ("maxSkew", "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy"),
    _CORE + "WeightedPodAffinityTerm": ("weight",),
    _CORE + "PreferredSchedulingTerm": ("weight",),
    _CORE + "SecretVolumeSource": ("defaultMode", "optional"),
    _CORE + "ConfigMapVolumeSource": ("defaultMode", "optional"),
    _CORE + "ProjectedVolumeSource": ("defaultMode",),
    _CORE + "DownwardAPIVolumeSource": ("defaultMode",),
    _CORE + "KeyToPath": ("mode",),
    _CORE + "DownwardAPIVolumeFile": ("mode",),
    _CORE + "ConfigMapKeySelector": ("optional",),
    _CORE + "SecretKeySelector": ("optional",),
    _CORE + "ConfigMapEnvSource": ("optional",),
    _CORE + "SecretEnvSource": ("optional",),
    _CORE + "ConfigMapProjection": ("optional",),
    _CORE + "SecretProjection": ("optional",),
    _CORE + "FileKeySelector": ("optional",),
    _CORE + "ClusterTrustBundleProjection": ("name", "signerName", "optional"),
    _CORE + "ServiceAccountTokenProjection": ("expirationSeconds",),
    _CORE + "PodCertificateProjection": ("maxExpirationSeconds",),
    _CORE + "CSIVolumeSource": ("readOnly", "fsType"),
    _CORE + "AzureDiskVolumeSource": ("cachingMode", "fsType", "readOnly", "kind"),
    _CORE + "HostPathVolumeSource": ("type",),
    _CORE + "LocalVolumeSource": ("fsType",),
    _CORE + "ISCSIVolumeSource": ("initiatorName",),
    _CORE + "ISCSIPersistentVolumeSource": ("initiatorName",),
    _CORE + "VolumeMount": ("recursiveReadOnly", "mountPropagation"),
    _CORE + "VolumeMountStatus": ("recursiveReadOnly",),
    _CORE + "PersistentVolumeClaimSpec": ("storageClassName", "volumeMode", "volumeAttributesClassName"),
    _CORE + "PersistentVolumeClaimStatus": ("currentVolumeAttributesClassName",),
    _CORE + "PersistentVolumeSpec": ("volumeMode", "volumeAttributesClassName"),
    _CORE + "TypedLocalObjectReference": ("apiGroup",),
    _CORE + "TypedObjectReference": ("apiGroup", "namespace"),
    _CORE + "ServiceSpec": (
        "ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass", "internalTrafficPolicy",
        "trafficDistribution",
    ),
    _CORE + "ServicePort": ("appProtocol", "port"),
    _CORE + "EndpointPort": ("appProtocol", "port"),
    _CORE + "ClientIPConfig": ("timeoutSeconds",),
    _CORE + "LoadBalancerIngress": ("ipMode",),
    _CORE + "ConfigMap": ("immutable",),
    _CORE + "Secret": ("immutable",),
    _CORE + "ServiceAccount": ("automountServiceAccountToken",),
    _CORE + "ReplicationControllerSpec": ("replicas",),
    _CORE + "ReplicationControllerStatus": ("replicas",),
    _CORE + "PodResourceClaim": ("resourceClaimName", "resourceClaimTemplateName"),
    _CORE + "PodResourceClaimStatus": ("resourceClaimName",),
    _CORE + "PodLogOptions": ("sinceSeconds", "tailLines", "limitBytes", "stream"),
    _CORE + "NodeSwapStatus": ("capacity",),
    _CORE + "NodeFeatures": ("supplementalGroupsPolicy", "containerUlimits"),
    _CORE + "NodeRuntimeHandlerFeatures": ("recursiveReadOnlyMounts", "userNamespaces"),
    _CORE + "ResourceHealth": ("message",),
    "k8s.io.api.apps.v1.DeploymentSpec": (
        "replicas", "revisionHistoryLimit", "progressDeadlineSeconds", "podReplacementPolicy",
    ),
    "k8s.io.api.apps.v1.DeploymentStatus": ("collisionCount", "terminatingReplicas"),
    "k8s.io.api.apps.v1.ReplicaSetSpec": ("replicas",),
    "k8s.io.api.apps.v1.ReplicaSetStatus": ("replicas", "terminatingReplicas"),
    "k8s.io.api.apps.v1.StatefulSetSpec": ("replicas", "revisionHistoryLimit"),
    "k8s.io.api.apps.v1.StatefulSetStatus": ("replicas", "collisionCount"),
    "k8s.io.api.apps.v1.RollingUpdateStatefulSetStrategy": ("partition",),
    "k8s.io.api.apps.v1.DaemonSetSpec": ("revisionHistoryLimit",),
    "k8s.io.api.apps.v1.DaemonSetStatus": (
        "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady", "collisionCount",
    ),
    "k8s.io.api.policy.v1.PodDisruptionBudgetSpec": ("unhealthyPodEvictionPolicy",),
    "k8s.io.api.policy.v1.PodDisruptionBudgetStatus": (
        "disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods",
    ),
    "k8s.io.api.scheduling.v1.PriorityClass": ("value", "preemptionPolicy"),
    "k8s.io.api.coordination.v1.LeaseSpec": (
        "holderIdentity", "leaseDurationSeconds", "leaseTransitions", "strategy", "preferredHolder",
    ),
    "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec": (
        "minReplicas", "maxReplicas", "targetCPUUtilizationPercentage",
    ),
    "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus": (
        "currentReplicas", "desiredReplicas", "currentCPUUtilizationPercentage",
    ),
    "k8s.io.api.autoscaling.v1.ScaleStatus": ("replicas",),
    "k8s.io.api.batch.v1.JobSpec": (
        "parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "manualSelector",
        "ttlSecondsAfterFinished", "suspend", "backoffLimitPerIndex", "maxFailedIndexes",
    ),
    "k8s.io.api.batch.v1.JobStatus": ("ready", "terminating"),
    "k8s.io.api.batch.v1.SuccessPolicyRule": ("succeededCount",),
    "k8s.io.api.scheduling.v1beta1.GangSchedulingPolicy": ("minCount",),
    "k8s.io.api.scheduling.v1beta1.CompositeGangSchedulingPolicy": ("minGroupCount",),
    "k8s.io.api.scheduling.v1beta1.PodGroupSpec": ("priority",),
    "k8s.io.api.scheduling.v1beta1.PodGroupTemplate": ("priority",),
    "k8s.io.api.scheduling.v1beta1.CompositePodGroupTemplate": ("priority",),
    "k8s.io.api.batch.v1.CronJobSpec": (
        "startingDeadlineSeconds", "suspend", "successfulJobsHistoryLimit", "failedJobsHistoryLimit",
    ),
    "k8s.io.api.storage.v1.StorageClass": ("allowVolumeExpansion", "reclaimPolicy", "volumeBindingMode"),
    "k8s.io.api.storage.v1.CSIDriverSpec": (
        "attachRequired", "podInfoOnMount", "storageCapacity", "fsGroupPolicy", "requiresRepublish",
        "seLinuxMount", "nodeAllocatableUpdatePeriodSeconds", "serviceAccountTokenInSecrets",
        "preventPodSchedulingIfMissing",
    ),
    "k8s.io.api.storage.v1.TokenRequest": ("expirationSeconds",),
    "k8s.io.api.storage.v1.VolumeNodeResources": ("count",),
    "k8s.io.api.storage.v1.VolumeAttachmentSource": ("persistentVolumeName",),
    "k8s.io.api.storage.v1.VolumeAttachmentStatus": ("attached",),
    "k8s.io.api.storage.v1.VolumeError": ("errorCode",),
    # resource.k8s.io/v1: pointer scalars (types.go) and ResourcePool's numbers without omitempty
    "k8s.io.api.resource.v1.ResourcePool": ("generation", "resourceSliceCount"),
    "k8s.io.api.resource.v1.ResourceSliceSpec": ("nodeName", "allNodes", "perDeviceNodeSelection"),
    "k8s.io.api.resource.v1.Device": ("nodeName", "allNodes", "bindsToNode", "allowMultipleAllocations"),
    "k8s.io.api.resource.v1.DeviceAttribute": ("int", "bool", "string", "version"),
    "k8s.io.api.resource.v1.ExactDeviceRequest": ("adminAccess",),
    "k8s.io.api.resource.v1.DeviceToleration": ("tolerationSeconds",),
    "k8s.io.api.resource.v1.DeviceRequestAllocationResult": ("adminAccess",),
    "k8s.io.api.resource.v1.DeviceClassSpec": ("extendedResourceName",),
}  # fmt: skip

GROUP_VERSIONS = {
    "k8s.io.api.core.v1": "v1",
    "k8s.io.api.apps.v1": "apps/v1",
    "k8s.io.api.batch.v1": "batch/v1",
    "k8s.io.api.storage.v1": "storage.k8s.io/v1",
    "k8s.io.api.policy.v1": "policy/v1",
    "k8s.io.api.autoscaling.v1": "autoscaling/v1",
    "k8s.io.api.coordination.v1": "coordination.k8s.io/v1",
    "k8s.io.api.scheduling.v1": "scheduling.k8s.io/v1",
    "k8s.io.api.scheduling.v1beta1": "scheduling.k8s.io/v1beta1",
    "k8s.io.api.rbac.v1": "rbac.authorization.k8s.io/v1",
    "k8s.io.api.events.v1": "events.k8s.io/v1",
    "k8s.io.api.authentication.v1": "authentication.k8s.io/v1",
    "k8s.io.api.authorization.v1": "authorization.k8s.io/v1",
    "k8s.io.api.resource.v1": "resource.k8s.io/v1",
}
META_KINDS = (
    "APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "CreateOptions", "DeleteOptions", "GetOptions",
    "ListOptions", "PartialObjectMetadata", "PartialObjectMetadataList", "PatchOptions", "Status",
    "UpdateOptions", "WatchEvent",
)  # fmt: skip
NOT_KINDS = frozenset(
    {
        _CORE + "PodTemplateSpec",
        _CORE + "PersistentVolumeClaimTemplate",
        "k8s.io.api.batch.v1.JobTemplateSpec",
        "k8s.io.api.resource.v1.ResourceClaimTemplateSpec",
        # no longer served: scheduling.k8s.io/v1beta1 PriorityClass was removed in 1.22
        "k8s.io.api.scheduling.v1beta1.PriorityClass",
        "k8s.io.api.scheduling.v1beta1.PriorityClassList",
    }
)

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_PACKAGE = re.compile(r"\bpackage\s+([\w.]+)\s*;")
_MESSAGE = re.compile(r"\bmessage\s+(\w+)\s*\{([^{}]*)\}")
_FIELD = re.compile(
    r"(optional|required|repeated)?\s*(map\s*<\s*(\w+)\s*,\s*([\w.]+)\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[[^\]]*\])?\s*;"
)


@dataclass(frozen=True, slots=True)
class Field:
    number: int
    name: str
    type: str
    flags: int


def parse_file(text: str) -> dict[str, list[tuple[str, str, int, str, str, str]]]:
    """Messages of one file: name -> [(label, type, number, json name, map key, map value)], types unresolved."""
    text = _COMMENTS.sub("", text)
    package = _PACKAGE.search(text)
    if package is None:
        raise ValueError("no package statement")
    if re.search(r"\b(enum|oneof)\b", text):
        raise ValueError("enum/oneof are not used by k8s.io protos; refusing to guess")
    messages: dict[str, list[tuple[str, str, int, str, str, str]]] = {}
    for match in _MESSAGE.finditer(text):
        body = match.group(2)
        fields = []
        for f in _FIELD.finditer(body):
            label, typ, key, value, name, number = f.groups()
            fields.append((label or "optional", "map" if key else typ, int(number), name, key or "", value or ""))
        leftover = _FIELD.sub("", body).strip()
        if leftover:
            raise ValueError(f"message {match.group(1)}: cannot parse {leftover[:80]!r}")
        messages[f"{package.group(1)}.{match.group(1)}"] = fields
    return messages


def _resolve(typ: str, package: str, known: set[str]) -> str:
    if typ in SCALARS:
        return typ
    full = typ[1:] if typ.startswith(".") else typ if "." in typ else f"{package}.{typ}"
    if full not in known:
        raise ValueError(f"unresolved type {typ!r} (as {full!r})")
    return full


def build(root: Path, only: frozenset[str] = frozenset()) -> dict[str, object]:
    """Parse every ``generated.proto`` under ``root`` and return the tables (see module docstring); with
    ``only``, just the messages and kinds of those proto packages (hand-listed entries of others are skipped)."""
    parsed: dict[str, list[tuple[str, str, int, str, str, str]]] = {}
    for path in sorted(root.rglob("generated.proto")):
        try:
            parsed.update(parse_file(path.read_text()))
        except ValueError as exc:
            raise SystemExit(f"{path}: {exc}") from exc
    known = set(parsed)
    messages: dict[str, list[Field]] = {}
    for full, raw_fields in parsed.items():
        package = full.rsplit(".", 1)[0]
        out = []
        for label, typ, number, name, key, value in raw_fields:
            if typ == "map":
                resolved = f"map<{_resolve(key, package, known)},{_resolve(value, package, known)}>"
            else:
                resolved = _resolve(typ, package, known)
            out.append(Field(number, name, resolved, REPEATED if label == "repeated" else 0))
        messages[full] = out
    if only:
        messages = {m: fs for m, fs in messages.items() if m.rsplit(".", 1)[0] in only}
    for table, flag in ((INLINE, INLINE_FLAG), (KEEP_ZERO, KEEP_ZERO_FLAG)):
        for message, names in table.items():
            if only and message.rsplit(".", 1)[0] not in only:
                continue
            fields = messages.get(message)
            if fields is None:
                raise SystemExit(f"hand-listed message {message} not found in the protos")
            for name in names:
                hit = [i for i, f in enumerate(fields) if f.name == name]
                if not hit:
                    raise SystemExit(f"hand-listed field {message}.{name} not found in the protos")
                f = fields[hit[0]]
                fields[hit[0]] = Field(f.number, f.name, f.type, f.flags | flag)
    kinds: dict[str, dict[str, str]] = {}
    for full, fields in messages.items():
        package, name = full.rsplit(".", 1)
        version = GROUP_VERSIONS.get(package)
        metadata = next((f for f in fields if f.number == 1 and f.name == "metadata"), None)
        is_top_level = metadata is not None and metadata.type in (_META + "ObjectMeta", _META + "ListMeta")
        if version and is_top_level and full not in NOT_KINDS:
            kinds.setdefault(version, {})[name] = full
    if not only:
        kinds["meta.k8s.io/v1"] = {kind: _META + kind for kind in META_KINDS}
    return {
        "kinds": {v: dict(sorted(k.items())) for v, k in sorted(kinds.items())},
        "messages": {
            m: [[f.number, f.name, f.type, f.flags] for f in sorted(fs, key=lambda f: f.number)]
            for m, fs in sorted(messages.items())
        },
    }


def merge(committed: dict[str, Any], added: dict[str, Any]) -> dict[str, object]:
    """``committed`` with ``added``'s messages and kinds put in (an added package replaces its old entries)."""
    kinds = {v: dict(k) for v, k in committed["kinds"].items()}
    for version, names in added["kinds"].items():
        kinds[version] = dict(sorted({**kinds.get(version, {}), **names}.items()))
    messages = {**committed["messages"], **added["messages"]}
    return {"kinds": dict(sorted(kinds.items())), "messages": dict(sorted(messages.items()))}


def render(tables: dict[str, object]) -> str:
    """Deterministic JSON: compact separators, sorted keys, one message per line."""
    compact = {"separators": (",", ":"), "sort_keys": True}
    kinds = json.dumps(tables["kinds"], **compact)  # type: ignore[arg-type]
    messages = tables["messages"]
    assert isinstance(messages, dict)
    lines = [f"{json.dumps(m)}:{json.dumps(fs, separators=(',', ':'))}" for m, fs in sorted(messages.items())]
    return '{"kinds":' + kinds + ',\n"messages":{\n' + ",\n".join(lines) + "\n}}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--proto-root", type=Path, required=True, help="directory with the generated.proto copies")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="fail if the committed file is out of date")
    parser.add_argument(
        "--add", action="append", default=[], help="merge only this proto package into the committed tables"
    )
    args = parser.parse_args()
    tables = build(args.proto_root, frozenset(args.add))
    if args.add:
        tables = merge(json.loads(OUT.read_text()), tables)
    text = render(tables)
    if args.check:
        if args.out.read_text() != text:
            print(f"{args.out} is out of date; rerun tools/gen_proto_tables.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
