"""Pod and node predicates the descheduler's plugins share (upstream ``pkg/utils/pod.go``,
``pkg/descheduler/pod/pods.go``, ``pkg/descheduler/node/node.go``'s simple parts).

Pods and nodes are the wire dicts the informers hold; nothing here writes to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api.labels import label_selector_as_selector
from kubeplane.api.pods import QOSClass, pod_qos_class
from kubeplane.api.views import annotations_of, meta_of, spec_of, status_of

from .args import Namespaces

Obj = Mapping[str, Any]
PodFilter = Callable[[Obj], bool]

SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
"""``utils.SystemCriticalPriority`` (scheduling.SystemCriticalPriority)."""
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
EVICT_ANNOTATION: Final = "descheduler.alpha.kubernetes.io/evict"
PREFER_NO_EVICTION_ANNOTATION: Final = "descheduler.alpha.kubernetes.io/prefer-no-eviction"


def owner_refs(pod: Obj) -> list[Obj]:
    return list(meta_of(pod).get("ownerReferences") or ())


def priority(pod: Obj) -> int | None:
    value = spec_of(pod).get("priority")
    return None if value is None else int(value)


def is_mirror_pod(pod: Obj) -> bool:
    return MIRROR_POD_ANNOTATION in annotations_of(pod)


def is_static_pod(pod: Obj) -> bool:
    """Upstream ``IsStaticPod``: a config source other than ``api`` (no annotation: not static)."""
    source = annotations_of(pod).get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != "api"


def is_terminating(pod: Obj) -> bool:
    return bool(meta_of(pod).get("deletionTimestamp"))


def is_critical_priority(pod: Obj) -> bool:
    value = priority(pod)
    return value is not None and value >= SYSTEM_CRITICAL_PRIORITY


def is_daemonset_pod(pod: Obj) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in owner_refs(pod))


def has_local_storage(pod: Obj) -> bool:
    return any(
        v.get("hostPath") is not None or v.get("emptyDir") is not None for v in spec_of(pod).get("volumes") or ()
    )


def has_pvc(pod: Obj) -> bool:
    return any(v.get("persistentVolumeClaim") is not None for v in spec_of(pod).get("volumes") or ())


def has_resource_claims(pod: Obj) -> bool:
    return bool(spec_of(pod).get("resourceClaims"))


def has_evict_annotation(pod: Obj) -> bool:
    return EVICT_ANNOTATION in annotations_of(pod)


def has_no_eviction_annotation(pod: Obj) -> bool:
    return PREFER_NO_EVICTION_ANNOTATION in annotations_of(pod)


def phase(pod: Obj) -> str:
    return str(status_of(pod).get("phase") or "")


def is_node_ready(node: Obj) -> bool:
    """Upstream ``nodeutil.IsReady``: a Ready condition that is not True makes the node not ready; no Ready
    condition at all does not."""
    for condition in status_of(node).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return False
    return True


def build_filter(
    *,
    namespaces: Namespaces | None = None,
    label_selector: Mapping[str, Any] | None = None,
    filters: Sequence[PodFilter] = (),
) -> PodFilter:
    """Upstream ``podutil.NewOptions().WithNamespaces().WithoutNamespaces().WithLabelSelector().WithFilter()``:
    namespaces first, then the label selector, then the filters in order (all must pass)."""
    selector = label_selector_as_selector(label_selector) if label_selector is not None else None

    def check(pod: Obj) -> bool:
        if namespaces is not None and not namespaces.admits(str(meta_of(pod).get("namespace") or "")):
            return False
        if selector is not None and not selector.matches(meta_of(pod).get("labels") or {}):
            return False
        return all(f(pod) for f in filters)

    return check


_QOS_RANK: Final = {QOSClass.BEST_EFFORT: 0, QOSClass.BURSTABLE: 1, QOSClass.GUARANTEED: 2}


def sort_by_priority_low_to_high(pods: list[Obj]) -> None:
    """Upstream ``SortPodsBasedOnPriorityLowToHigh``, in place and stable: pods without a priority first, then by
    priority; equal priorities by QoS (BestEffort, Burstable, Guaranteed), and within a QoS class pods without the
    ``prefer-no-eviction`` annotation before pods with it."""

    def key(pod: Obj) -> tuple[int, int, int, int]:
        value = priority(pod)
        return (
            0 if value is None else 1,
            0 if value is None else value,
            _QOS_RANK[pod_qos_class(pod)],
            1 if has_no_eviction_annotation(pod) else 0,
        )

    pods.sort(key=key)
