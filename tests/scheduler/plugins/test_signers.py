"""Each in-tree plugin's SignPod (upstream's ``SignPod`` of every plugin and kube-scheduler/framework/signers.go):
what makes two pods sign equally, what tells them apart, and what makes a pod unsignable. Pinned through the
default profile's signer with PodTopologySpread defaulting ``List`` and DRAExtendedResource off (otherwise no pod
signs at all: tests/scheduler/test_signature.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.signers import host_ports_signer, node_affinity_signer, volumes_signer
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.signature import PodSigner

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}


def _signer() -> PodSigner:
    fwk = build_profiles(parse_config(CONFIG), Handle())["default-scheduler"]
    return PodSigner(fwk, {"DRAExtendedResource": False})


def base(name: str = "a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "d", "uid": name, "labels": {"app": "x"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
            ],
            "volumes": [
                {"name": "cfg", "configMap": {"name": f"cfg-{name}"}},
                {"name": "tok", "secret": {"secretName": f"tok-{name}"}},
            ],
            "tolerations": [
                {"key": "k1", "operator": "Exists"},
                {"key": "k0", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            ],
        },
    }


def sign(obj: dict[str, Any]) -> str | None:
    return _signer().sign(PodInfo(obj))


def test_pods_of_one_template_sign_equally_whatever_their_names_and_per_pod_volumes() -> None:
    """Name, uid and ConfigMap/Secret volumes are not part of any fragment (VolumesSigner skips those two)."""
    a, b = base("a"), base("b")
    assert sign(a) is not None
    assert sign(a) == sign(b)


def test_toleration_order_does_not_matter() -> None:
    """TolerationsSigner sorts by key and value."""
    a, b = base("a"), base("b")
    b["spec"]["tolerations"].reverse()
    assert sign(a) == sign(b)


def _variant(path: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(base("b"))
    spec = obj["spec"]
    if path == "requests":
        spec["containers"][0]["resources"]["requests"]["cpu"] = value
    elif path == "labels":
        obj["metadata"]["labels"] = value
    else:
        spec[path] = value
    return obj


@pytest.mark.parametrize(
    ("path", "value", "signer"),
    [
        ("requests", "600m", "NodeResourcesFit: ResourcesSignerName"),
        ("nodeSelector", {"zone": "a"}, "NodeAffinity: NodeSelectorSignerName"),
        (
            "affinity",
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            },
            "NodeAffinity: NodeAffinitySignerName",
        ),
        ("nodeName", "n1", "NodeName: NodeNameSignerName"),
        ("tolerations", [], "TaintToleration: TolerationsSignerName"),
        ("labels", {"app": "y"}, "InterPodAffinity: LabelsSignerName"),
        ("volumes", [{"name": "d", "emptyDir": {}}], "VolumeBinding: VolumesSignerName"),
        ("schedulerName", "other", "framework: SchedulerNameSignerName"),
    ],
)
def test_what_a_plugin_reads_tells_pods_apart(path: str, value: Any, signer: str) -> None:
    assert sign(_variant(path, value)) != sign(base("a")), signer


@pytest.mark.parametrize(
    ("path", "value", "upstream"),
    [
        (
            "topologySpreadConstraints",
            [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
            "PodTopologySpread: pods with topology constraints are not signable",
        ),
        (
            "affinity",
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}
                    ]
                }
            },
            "InterPodAffinity: pod (anti-)affinity",
        ),
        (
            "resourceClaims",
            [{"name": "gpu", "resourceClaimName": "c"}],
            "DynamicResources: pods with dra resource claims are not signable",
        ),
    ],
)
def test_pods_a_plugin_cannot_sign(path: str, value: Any, upstream: str) -> None:
    assert sign(_variant(path, value)) is None, upstream


def test_shared_signers_canonicalise() -> None:
    """HostPortsSigner: a sorted set over containers and init containers; NodeAffinitySigner: values, terms and
    preferences sorted; VolumesSigner: sorted, ConfigMap and Secret skipped."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 90}, {"containerPort": 2}]}],
        "initContainers": [{"name": "i", "ports": [{"containerPort": 3, "hostPort": 80}, {"hostPort": 90}]}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 2,
                        "preference": {"matchExpressions": [{"key": "b", "operator": "In", "values": ["2", "1"]}]},
                    },
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
                ]
            }
        },
        "volumes": [{"name": "z", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "x"}}],
    }
    pi = PodInfo({"metadata": {"name": "p", "namespace": "d"}, "spec": spec})
    assert host_ports_signer(pi) == [80, 90]
    aff = node_affinity_signer(pi)
    assert aff["Required"] == []
    assert len(aff["Preferred"]) == 2
    assert '\\"values\\":[\\"1\\",\\"2\\"]' in aff["Preferred"][1]  # values sorted inside the term
    assert volumes_signer(pi) == ['{"emptyDir":{}}']
