"""What each in-tree plugin contributes to a pod's scheduling signature (upstream's ``SignPlugin.SignPod``
implementations and the shared signers of ``staging/src/k8s.io/kube-scheduler/framework/signers.go``).

A signature says: two pods with equal signatures get the same Filter verdicts and the same scores on the same
nodes in the same state. Each plugin names the parts of the pod its Filter/Score read (a *fragment*: a signer name
and a canonical value), or declares the pod unsignable (a non-success status) when its verdicts depend on more than
the pod and one node. Upstream, per plugin (the newest versions the search tools hold):

* NodeResourcesFit, NodeResourcesBalancedAllocation: the pod's requests and overheads
  (``v1.Pod.Spec.ContainerRequestsAndOverheads()``) -- but *unsignable* whenever the DRAExtendedResource gate is on
  ("signature disabled when dra extended resources enabled"), which it is by default in v1.37;
* PodTopologySpread: unsignable when the pod has topologySpreadConstraints or the plugin has default constraints
  (the ``System`` defaulting of the default profile has them), no fragment otherwise;
* InterPodAffinity: unsignable when the pod has pod (anti-)affinity; else the pod's labels (existing pods'
  anti-affinity terms select on them);
* DynamicResources: unsignable when the pod has resource claims ("pods with dra resource claims are not
  signable"), no fragment otherwise;
* NodeAffinity: the required/preferred node affinity (terms and values sorted) and the nodeSelector;
* NodeName: ``spec.nodeName``; NodePorts: the sorted set of host ports; TaintToleration and NodeUnschedulable: the
  tolerations; ImageLocality: the normalised image names; NodeDeclaredFeatures: the features the pod requires;
  VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits: the volume sources other than ConfigMap and
  Secret (those are per-pod and never affect scheduling).

Plugins outside this table (out-of-tree ones) sign by defining ``sign_pod(pod) -> (fragments, status)`` themselves;
a profile with a Filter/Score plugin that does neither signs no pod at all (upstream ``computeBatchablePlugins``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api.views import spec_of
from kubeplane.scheduler.dra.features import gate
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.image_locality import pod_image_names

__all__ = [
    "IN_TREE_SIGNERS",
    "MAY_REFUSE",
    "Fragments",
    "SignFn",
    "SignResult",
    "host_ports_signer",
    "node_affinity_signer",
    "tolerations_signer",
    "volumes_signer",
]

Fragments = list[tuple[str, Any]]
SignResult = tuple[Fragments, Status | None]
SignFn = Callable[[Any, PodInfo, Mapping[str, bool] | None], SignResult]
"""``(plugin, pod, feature gates) -> (fragments, status)``; a non-None status makes the pod unsignable."""

# Upstream's signer names (kube-scheduler/framework/signers.go): the keys of the signature object.
IMAGE_NAMES: Final = "v1.Pod.Spec.CanonicalImageNames()"
LABELS: Final = "v1.Pod.Labels"
NODE_NAME: Final = "v1.Pod.Spec.NodeName"
NODE_AFFINITY: Final = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR: Final = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS: Final = "v1.Pod.Spec.HostPorts()"
RESOURCES: Final = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME: Final = "v1.Pod.Spec.SchedulerName"
TOLERATIONS: Final = "v1.Pod.Spec.Tolerations"
VOLUMES: Final = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES: Final = "v1.Pod.Spec.RequiredFeatures()"

_OK: Final[Fragments] = []


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _unsignable(reason: str) -> SignResult:
    return [], Status.unschedulable(reason)


# --- the shared signers --------------------------------------------------------------------------------------


def host_ports_signer(pod: PodInfo) -> list[int]:
    """The set of host ports of containers and init containers, sorted (upstream ``HostPortsSigner``)."""
    spec = spec_of(pod.pod)
    ports: set[int] = set()
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            for p in c.get("ports") or ():
                hp = int(p.get("hostPort") or 0)
                if hp:
                    ports.add(hp)
    return sorted(ports)


def _requirements(reqs: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """Each requirement with its values sorted, as canonical text, sorted (``NodeSelectorRequirementsSigner``)."""
    out = []
    for r in reqs or ():
        t = dict(r)
        if t.get("values") is not None:
            t["values"] = sorted(str(v) for v in t["values"])
        out.append(_canon(t))
    return sorted(out)


def _term(term: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        "MatchExpressions": _requirements(term.get("matchExpressions")),
        "MatchFields": _requirements(term.get("matchFields")),
    }


def node_affinity_signer(pod: PodInfo) -> Any:
    """The pod's node affinity with every list sorted (upstream ``NodeAffinitySigner``); None without one."""
    affinity = (spec_of(pod.pod).get("affinity") or {}).get("nodeAffinity")
    if affinity is None:
        return None
    preferred = sorted(
        _canon({"Weight": int(t.get("weight") or 0), "Preference": _term(t.get("preference") or {})})
        for t in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    required_terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    required = sorted(_canon(_term(t)) for t in required_terms or ())
    return {"Required": required, "Preferred": preferred}


def tolerations_signer(pod: PodInfo) -> list[Any]:
    """The tolerations sorted by key then value (upstream ``TolerationsSigner``; canonical text breaks the
    remaining ties so that equal sets sign equally)."""
    tolerations = list(spec_of(pod.pod).get("tolerations") or ())
    return sorted(tolerations, key=lambda t: (str(t.get("key") or ""), str(t.get("value") or ""), _canon(t)))


def volumes_signer(pod: PodInfo) -> list[str]:
    """The volume sources other than ConfigMap and Secret, as canonical text, sorted (upstream ``VolumesSigner``:
    those two are specific to each pod and never affect scheduling)."""
    out = []
    for volume in spec_of(pod.pod).get("volumes") or ():
        if "configMap" in volume or "secret" in volume:
            continue
        out.append(_canon({k: v for k, v in volume.items() if k != "name"}))
    return sorted(out)


# --- per plugin ------------------------------------------------------------------------------------------------


def _resources(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    if gate(gates, "DRAExtendedResource"):
        return _unsignable("signature disabled when dra extended resources enabled")
    r = pod.requests
    value = {
        "cpu": r.milli_cpu,
        "memory": r.memory,
        "ephemeral-storage": r.ephemeral_storage,
        "scalar": dict(sorted(r.scalar.items())),
    }
    return [(RESOURCES, value)], None


def _topology_spread(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    if spec_of(pod.pod).get("topologySpreadConstraints"):
        return _unsignable("pods with topology constraints are not signable")
    if getattr(plugin, "_default_constraints", ()):
        return _unsignable("pods with default topology constraints are not signable")
    return _OK, None


def _inter_pod_affinity(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    affinity = spec_of(pod.pod).get("affinity") or {}
    if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
        return _unsignable("pods with inter-pod affinity are not signable")
    return [(LABELS, dict(sorted(pod.labels.items())))], None


def _dynamic_resources(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    if spec_of(pod.pod).get("resourceClaims"):
        return _unsignable("pods with dra resource claims are not signable")
    return _OK, None


def _node_affinity(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    selector = spec_of(pod.pod).get("nodeSelector") or {}
    return [(NODE_AFFINITY, node_affinity_signer(pod)), (NODE_SELECTOR, dict(sorted(selector.items())))], None


def _node_name(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    return [(NODE_NAME, pod.node_name)], None


def _node_ports(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    return [(HOST_PORTS, host_ports_signer(pod))], None


def _tolerations(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    return [(TOLERATIONS, tolerations_signer(pod))], None


def _images(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    return [(IMAGE_NAMES, sorted(pod_image_names(pod)))], None


def _volumes(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    return [(VOLUMES, volumes_signer(pod))], None


def _features(plugin: Any, pod: PodInfo, gates: Mapping[str, bool] | None) -> SignResult:
    try:
        required = plugin.framework.infer_for_pod_scheduling(spec_of(pod.pod), plugin.version)
    except ValueError as exc:
        return [], Status.from_error(exc)
    return [(FEATURES, int(required))], None


IN_TREE_SIGNERS: Final[Mapping[str, SignFn]] = {
    "NodeResourcesFit": _resources,
    "NodeResourcesBalancedAllocation": _resources,
    "PodTopologySpread": _topology_spread,
    "InterPodAffinity": _inter_pod_affinity,
    "DynamicResources": _dynamic_resources,
    "NodeAffinity": _node_affinity,
    "NodeName": _node_name,
    "NodePorts": _node_ports,
    "TaintToleration": _tolerations,
    "NodeUnschedulable": _tolerations,
    "ImageLocality": _images,
    "NodeDeclaredFeatures": _features,
    "VolumeBinding": _volumes,
    "VolumeRestrictions": _volumes,
    "VolumeZone": _volumes,
    "NodeVolumeLimits": _volumes,
}
"""In-tree plugin name -> its SignPod (module docstring). Applied only to kubeplane's own plugin classes."""

MAY_REFUSE: Final = frozenset(
    {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "PodTopologySpread", "InterPodAffinity", "DynamicResources"}
)
"""The in-tree plugins whose SignPod can make a pod unsignable."""
