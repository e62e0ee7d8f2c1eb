"""Which Node labels a kubelet may set itself (upstream ``pkg/kubelet/apis/well_known_labels.go``,
``IsKubeletLabel``, v1.37): NodeRestriction refuses the others in the ``kubernetes.io``/``k8s.io`` namespaces, so
the simulated kubelet registers without them and the fleet adds them as an admin would. One table for both sides.
"""

from __future__ import annotations

KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
"""``kubeletLabels``: the kubernetes.io labels a kubelet may set on its Node."""
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
"""``kubeletLabelNamespaces``: label namespaces (and their subdomains) a kubelet may set."""


def label_namespace(key: str) -> str:
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def _in(namespace: str, domains: tuple[str, ...]) -> bool:
    return any(namespace == d or namespace.endswith("." + d) for d in domains)


def is_kubelet_label(key: str) -> bool:
    """``IsKubeletLabel``."""
    return key in KUBELET_LABELS or _in(label_namespace(key), KUBELET_LABEL_NAMESPACES)


def is_kubernetes_label(key: str) -> bool:
    """A label in the ``kubernetes.io`` or ``k8s.io`` namespaces (or their subdomains)."""
    return _in(label_namespace(key), ("kubernetes.io", "k8s.io"))
