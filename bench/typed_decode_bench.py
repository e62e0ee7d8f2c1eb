"""Microbenchmark: the cost of decoding a create body into the Go types (issue 22) against what it replaced.

Before, a create body over HTTP went through field validation (``schema.strict_field_errors``, a walk of the raw
JSON, in every mode but Ignore) and was then pruned of unknown fields (``schema.prune_unknown``). After,
``FieldValidation.check_body`` decodes it into the Go types (``typed.decode``: one walk that checks every field's
type and keeps what Go's decoder keeps) and runs the strict walk only when the body may hold an unknown or
duplicate field (``after_not_compact``: a body orjson does not write back byte for byte, e.g. with whitespace).
Cases: the small pod the apiserver bench creates, and a Deployment with a full pod template (probes, env,
resources, affinity). Prints one JSON object per line: ``{"bench": "typed_decode", "metric": "<case>.<step>",
"value": <us per body>, "unit": "us/op", "case", "step", "quick"}``. Run: ``.venv/bin/python bench/typed_decode_bench.py
[--quick]``.
"""

from __future__ import annotations

import argparse
import json
import timeit
from typing import Any

import orjson

from kubeplane.api import schema
from kubeplane.api.resources import default_table
from kubeplane.apiserver.http.negotiation import FieldValidation

SMALL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "bench-1", "labels": {"app": "bench"}},
    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "10m"}}}]},
}
CONTAINER: dict[str, Any] = {
    "name": "web",
    "image": "nginx:1.25",
    "args": ["--port", "8080"],
    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
    "env": [{"name": f"E{i}", "value": str(i)} for i in range(10)],
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
    "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5},
    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    "securityContext": {"runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "b"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [CONTAINER, {**CONTAINER, "name": "sidecar"}],
                "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                            ]
                        }
                    }
                },
            },
        },
    },
}
CASES = {"small_pod": ("", "v1", "Pod", SMALL_POD), "deployment": ("apps", "v1", "Deployment", DEPLOYMENT)}


def measure(fn: Any, number: int) -> float:
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number * 1e6


def steps(group: str, version: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The callables timed for one case (bound here, not in main's loop)."""
    raw = orjson.dumps(body)
    info = next(i for i in default_table() if (i.group, i.version, i.kind) == (group, version, kind))
    loose = raw + b" "  # not written back byte for byte: the strict walk runs

    def before() -> object:  # what check_body did: strict field walk over the raw JSON, then the prune
        schema.strict_field_errors(raw, group=group, version=version, kind=kind)
        return schema.prune_unknown(body, group=group, version=version, kind=kind)

    return {
        "before": before,
        "after": lambda: FieldValidation("Warn").check_body(info, raw, body, "application/json"),
        "after_not_compact": lambda: FieldValidation("Warn").check_body(info, loose, body, "application/json"),
        "orjson_loads": lambda: orjson.loads(raw),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    number = 300 if args.quick else 3000
    for case, (group, version, kind, body) in CASES.items():
        for step, fn in steps(group, version, kind, body).items():
            value = measure(fn, number)
            line = {"bench": "typed_decode", "metric": f"{case}.{step}", "value": round(value, 2), "unit": "us/op"}
            print(json.dumps({**line, "case": case, "step": step, "quick": args.quick}))


if __name__ == "__main__":
    main()
