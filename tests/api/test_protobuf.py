"""Tests for :mod:`kubeplane.api.protobuf`: Kubernetes protobuf bodies decode to the objects' JSON dicts.

The ``tests/api/data/*.pb`` fixtures are real request bodies of kubectl v1.37.1 (``.venv/bin/kubectl``), recorded
by a local HTTP server it was pointed at (``kubectl create deployment web --image=nginx`` ...); each ``*.json``
beside it is what the same kubectl prints for the same command with ``--dry-run=client -o json``, i.e. the JSON
form of the very object it sent. The hand-built cases use the small encoder below.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api.durations import format_duration
from kubeplane.api.protobuf import (
    CONTENT_TYPE,
    MAGIC,
    ProtobufError,
    decode_message,
    decode_object,
    load_tables,
)

DATA = Path(__file__).parent / "data"


# --- a minimal protobuf encoder -----------------------------------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers: two's complement, 10 bytes, as Go writes int32/int64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def num(number: int, value: int | bool) -> bytes:
    return key(number, 0) + varint(int(value))


def ld(number: int, payload: bytes | str) -> bytes:
    raw = payload.encode() if isinstance(payload, str) else payload
    return key(number, 2) + varint(len(raw)) + raw


def msg(number: int, *parts: bytes) -> bytes:
    return ld(number, b"".join(parts))


def entries(number: int, mapping: dict[str, bytes | str]) -> bytes:
    """Map field: one entry message (key 1, value 2) per item; a bytes value is an encoded message."""
    return b"".join(msg(number, ld(1, k), ld(2, v)) for k, v in mapping.items())


def quantity(text: str) -> bytes:
    return ld(1, text)


def int_or_string(value: int | str) -> bytes:
    return num(1, 1) + ld(3, value) if isinstance(value, str) else num(1, 0) + num(2, value)


def envelope(api_version: str, kind: str, raw: bytes, *, extra: bytes = b"") -> bytes:
    return MAGIC + msg(1, ld(1, api_version), ld(2, kind)) + ld(2, raw) + extra


def meta(name: str, *parts: bytes) -> bytes:
    return msg(1, ld(1, name), *parts)


# --- real kubectl v1.37 bodies --------------------------------------------------------------------------------

REAL = [
    "deployment",  # kubectl create deployment web --image=nginx
    "deployment_zero_replicas",  # ... zero --image=busybox --replicas=0 --port=80 -- sleep 3600
    "namespace",  # kubectl create namespace team-a
    "secret",  # kubectl create secret generic s1 --from-literal=password=s3cr3t
    "configmap",  # kubectl create configmap cfg --from-literal=a=1 --from-literal=b=
    "quota",  # kubectl create quota q1 --hard=cpu=1500m,memory=1Gi,pods=10
    "service",  # kubectl create service clusterip web --tcp=80:8080
    "pdb",  # kubectl create pdb web-pdb --selector=app=web --min-available=0
    "priorityclass",  # kubectl create priorityclass low --value=0 --description=low
    "role",  # kubectl create role reader --verb=get,list --resource=pods
]


@pytest.mark.parametrize("name", REAL, ids=REAL)
def test_real_kubectl_body_decodes_to_kubectls_own_json(name: str) -> None:
    body = (DATA / f"{name}.pb").read_bytes()
    assert body.startswith(MAGIC)
    assert decode_object(body) == json.loads((DATA / f"{name}.json").read_text())


def test_real_deployment_body() -> None:
    """Go's marshaller writes every non-pointer scalar (generateName "", stdin false ...); JSON omits them."""
    assert decode_object((DATA / "deployment.pb").read_bytes()) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
            },
            "strategy": {},
        },
        "status": {},
    }


# --- hand-built objects ----------------------------------------------------------------------------------------


def _deployment(replicas: int) -> bytes:
    container = b"".join(
        [
            ld(1, "app"),
            ld(2, "nginx:1.27"),
            msg(6, ld(1, "http"), num(3, 8080), ld(4, "TCP")),
            msg(
                8,
                entries(1, {"cpu": quantity("1"), "memory": quantity("256Mi")}),
                entries(2, {"cpu": quantity("250m")}),
            ),
            ld(14, "IfNotPresent"),
            num(16, False),  # stdin false: written by Go, omitted in JSON
        ]
    )
    spec = b"".join(
        [
            num(1, replicas),
            msg(2, entries(1, {"app": "web"})),
            msg(3, meta("", entries(11, {"app": "web"})), msg(2, msg(2, container))),
            msg(4, ld(1, "RollingUpdate"), msg(2, msg(1, int_or_string("25%")), msg(2, int_or_string(1)))),
            num(5, 0),  # minReadySeconds 0: omitempty, dropped
        ]
    )
    return envelope("apps/v1", "Deployment", meta("web", ld(3, "default")) + msg(2, spec) + msg(3))


@pytest.mark.parametrize("replicas", [0, 3], ids=["replicas-0-pointer-kept", "replicas-3"])
def test_deployment(replicas: int) -> None:
    """DeploymentSpec.replicas is *int32 upstream: an explicit 0 on the wire stays 0 (defaulting gives 1)."""
    assert decode_object(_deployment(replicas)) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "250m"}},
                            "imagePullPolicy": "IfNotPresent",
                        }
                    ]
                },
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
        },
        "status": {},
    }


def test_pod_with_tolerations_affinity_and_inline_fields() -> None:
    toleration = msg(22, ld(1, "node.kubernetes.io/not-ready"), ld(2, "Exists"), ld(4, "NoExecute"), num(5, 0))
    required = msg(1, msg(1, msg(1, ld(1, "zone"), ld(2, "In"), ld(3, "a"), ld(3, "b"))))
    anti_term = msg(1, msg(1, entries(1, {"app": "web"})), ld(3, "kubernetes.io/hostname"))
    affinity = msg(18, msg(1, required), msg(3, msg(2, num(1, 100), msg(2, anti_term[2:]))))
    probe = msg(10, msg(1, msg(2, ld(1, "/healthz"), msg(2, int_or_string("http")))), num(2, 5))
    env = msg(7, ld(1, "TOKEN"), msg(3, msg(4, msg(1, ld(1, "creds")), ld(2, "token"))))
    container = msg(2, ld(1, "app"), ld(2, "busybox"), env, probe)
    volume = msg(1, ld(1, "cfg"), msg(2, msg(19, msg(1, ld(1, "app-config")), num(3, 420))))
    spec = b"".join(
        [
            volume,
            container,
            num(4, 0),  # terminationGracePeriodSeconds: *int64, explicit 0 kept
            entries(7, {"disk": "ssd"}),
            ld(10, ""),  # nodeName "": omitempty, dropped
            msg(14, num(2, 0), num(3, True)),  # runAsUser 0 (root) and runAsNonRoot are pointers
            affinity,
            toleration,
            num(25, -5),  # priority: negative int32 as a 10-byte varint
        ]
    )
    created = msg(8, num(1, 1_700_000_000))
    owner = msg(13, ld(5, "apps/v1"), ld(1, "ReplicaSet"), ld(3, "web-1"), ld(4, "u-1"), num(6, True))
    body = envelope("v1", "Pod", meta("web-1", ld(3, "default"), created, owner) + msg(2, spec))
    assert decode_object(body) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u-1", "controller": True}
            ],
        },
        "spec": {
            "volumes": [{"name": "cfg", "configMap": {"name": "app-config", "defaultMode": 420}}],
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5},
                }
            ],
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"disk": "ssd"},
            "securityContext": {"runAsUser": 0, "runAsNonRoot": True},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                        ]
                    }
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": "web"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                },
            },
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 0,
                }
            ],
            "priority": -5,
        },
    }


def test_namespace() -> None:
    body = envelope("v1", "Namespace", meta("team-a", entries(11, {"env": "prod"})) + msg(2, ld(1, "kubernetes")))
    assert decode_object(body) == {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "team-a", "labels": {"env": "prod"}},
        "spec": {"finalizers": ["kubernetes"]},
    }


def test_eviction_with_delete_options() -> None:
    """DeleteOptions.gracePeriodSeconds is *int64: 0 means "now" and must survive (kubectl drain --grace-period=0)."""
    options = msg(2, num(1, 0), msg(2, ld(1, "uid-1")), ld(4, "Background"), ld(5, "All"))
    body = envelope("policy/v1", "Eviction", meta("web-1", ld(3, "default")) + options)
    assert decode_object(body) == {
        "kind": "Eviction",
        "apiVersion": "policy/v1",
        "metadata": {"name": "web-1", "namespace": "default"},
        "deleteOptions": {
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "uid-1"},
            "propagationPolicy": "Background",
            "dryRun": ["All"],
        },
    }


def test_binding() -> None:
    body = envelope("v1", "Binding", meta("web-1", ld(3, "default")) + msg(2, ld(1, "Node"), ld(3, "node-1")))
    assert decode_object(body) == {
        "kind": "Binding",
        "apiVersion": "v1",
        "metadata": {"name": "web-1", "namespace": "default"},
        "target": {"kind": "Node", "name": "node-1"},
    }


@pytest.mark.parametrize(
    ("api_version", "kind", "raw", "expected"),
    [
        ("v1", "DeleteOptions", num(1, -1) + num(3, False), {"gracePeriodSeconds": -1, "orphanDependents": False}),
        ("apps/v1", "DeleteOptions", ld(4, "Foreground"), {"propagationPolicy": "Foreground"}),
        (
            "autoscaling/v1",
            "Scale",
            meta("web") + msg(2, num(1, 5)),
            {"metadata": {"name": "web"}, "spec": {"replicas": 5}},
        ),
    ],
    ids=["meta-kind-in-core", "meta-kind-in-apps", "autoscaling-scale"],
)
def test_meta_kinds_resolve_in_every_group_version(
    api_version: str, kind: str, raw: bytes, expected: dict[str, Any]
) -> None:
    assert decode_object(envelope(api_version, kind, raw)) == {"kind": kind, "apiVersion": api_version, **expected}


def test_packed_and_unpacked_repeated_scalars_agree() -> None:
    packed = ld(4, varint(1000) + varint(2000))
    unpacked = num(4, 1000) + num(4, 2000)
    for groups in (packed, unpacked):
        assert decode_message(groups, "k8s.io.api.core.v1.PodSecurityContext") == {"supplementalGroups": [1000, 2000]}


def test_unknown_fields_are_skipped() -> None:
    raw = meta("x") + num(99, 7) + ld(100, b"\x01\x02") + key(101, 5) + b"\0\0\0\0" + key(102, 1) + bytes(8)
    assert decode_object(envelope("v1", "Namespace", raw)) == {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "x"},
    }


def test_special_types() -> None:
    renew = msg(4, num(1, 1_700_000_000), num(2, 123_456_789))
    lease = decode_message(msg(2, num(2, 0), renew, num(5, 0)), "k8s.io.api.coordination.v1.Lease")
    assert lease == {
        "spec": {"leaseDurationSeconds": 0, "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0}
    }
    revision = decode_message(msg(2, ld(1, b'{"spec":{"a":1}}')) + num(3, 2), "k8s.io.api.apps.v1.ControllerRevision")
    assert revision == {"data": {"spec": {"a": 1}}, "revision": 2}
    managed = msg(17, ld(1, "kubectl"), ld(6, "FieldsV1"), msg(7, ld(1, b'{"f:spec":{}}')))
    assert decode_message(managed, "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta") == {
        "managedFields": [{"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
    }
    cm = decode_message(entries(3, {"blob": b"\x00\xff"}) + entries(2, {"empty": ""}), "k8s.io.api.core.v1.ConfigMap")
    assert cm == {"binaryData": {"blob": "AP8="}, "data": {"empty": ""}}
    quota = decode_message(entries(1, {"pods": b""}), "k8s.io.api.core.v1.ResourceQuotaSpec")
    assert quota == {"hard": {"pods": "0"}}  # an empty Quantity is zero


@pytest.mark.parametrize(
    ("ns", "text"),
    [(0, "0s"), (1, "1ns"), (1_500, "1.5µs"), (300_000_000, "300ms"), (1_500_000_000, "1.5s"), (90 * 10**9, "1m30s"),
     (3600 * 10**9, "1h0m0s"), (-2 * 10**9, "-2s")],
    ids=["zero", "ns", "us", "ms", "fraction", "minutes", "hours", "negative"],
)  # fmt: skip
def test_go_duration(ns: int, text: str) -> None:
    """metav1.Duration marshals to JSON as Go's time.Duration.String."""
    assert format_duration(ns) == text


# --- malformed input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b'{"kind":"Pod"}', "magic"),
        (MAGIC + b"\x0a", "truncated varint"),
        (MAGIC + b"\x0a\x05\x0a\x02v1", "declares 5 bytes"),
        (envelope("v1", "Pod", key(1, 2) + b"\xff"), "truncated varint"),
        (envelope("v1", "Pod", key(1, 0) + b"\xff" * 11), "longer than 10 bytes"),
        (envelope("v1", "Pod", key(1, 3)), "unsupported wire type 3"),
        (envelope("v1", "Pod", num(1, 5)), "wire type 0 for a message"),
        (envelope("v1", "Pod", msg(1, num(1, 5))), "wire type 0 for string"),
        (envelope("v1", "Frobnicator", b""), "no protobuf schema for Frobnicator in v1"),
        (MAGIC + ld(2, b""), "names no apiVersion and kind"),
        (envelope("v1", "Pod", b"", extra=ld(3, "gzip")), "contentEncoding"),
        (envelope("apps/v1", "ControllerRevision", msg(2, ld(1, b"{nope"))), "not JSON"),
    ],
    ids=[
        "json-body", "truncated-varint", "truncated-length", "truncated-nested", "overlong-varint", "group-wire-type",
        "wire-type-mismatch", "string-as-varint", "unknown-kind", "no-type-meta", "content-encoding", "bad-raw-json",
    ],
)  # fmt: skip
def test_malformed_input_raises_protobuf_error(body: bytes, needle: str) -> None:
    with pytest.raises(ProtobufError, match=needle):
        decode_object(body)


def test_protobuf_error_is_a_value_error() -> None:
    assert issubclass(ProtobufError, ValueError)


# --- tables ------------------------------------------------------------------------------------------------------


def test_tables_ship_inside_the_package() -> None:
    resource = importlib.resources.files("kubeplane.api").joinpath("proto_tables.json")
    assert resource.is_file()
    tables = load_tables()
    assert tables.message_for("apps/v1", "Deployment") == "k8s.io.api.apps.v1.Deployment"
    assert tables.message_for("policy/v1", "Eviction") == "k8s.io.api.policy.v1.Eviction"
    assert tables.message_for("v1", "Binding") == "k8s.io.api.core.v1.Binding"
    assert tables.message_for("autoscaling/v1", "Scale") == "k8s.io.api.autoscaling.v1.Scale"
    assert tables.message_for("v1", "PodTemplateSpec") is None
    assert CONTENT_TYPE == "application/vnd.kubernetes.protobuf"


def test_scheduling_v1beta1_pod_group() -> None:
    """A scheduling.k8s.io/v1beta1 PodGroup (upstream scheduling/v1beta1/generated.proto, merged into the tables
    with tools/gen_proto_tables.py --add): a zero ``minCount`` (int32, no omitempty) and ``priority`` (*int32)
    are kept, as Go's marshaller writes them."""
    spec = msg(3, msg(2, num(1, 0))) + ld(7, "high") + num(8, 0)
    body = envelope("scheduling.k8s.io/v1beta1", "PodGroup", meta("gang") + msg(2, spec))
    assert decode_object(body) == {
        "kind": "PodGroup",
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "metadata": {"name": "gang"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}, "priorityClassName": "high", "priority": 0},
    }
