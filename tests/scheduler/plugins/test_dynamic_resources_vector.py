"""DynamicResources' vector Score path (DESIGN decision 6) agrees with its per-node Score: explain runs both on
upstream's DynamicResources score cases (firstAvailable ranks) and on a pod without claims, and reports any
disagreement as ``mismatches``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.explain import explain
from tests.scheduler.conformance import run

CASES = Path(__file__).resolve().parents[1] / "conformance" / "upstream" / "dynamic_resources.json"


def _score_cases() -> list[Any]:
    cases = json.loads(CASES.read_text())["cases"]
    return [pytest.param(c, id=c["id"]) for c in cases if c["kind"] == "score"]


@pytest.mark.parametrize("case", _score_cases())
def test_vector_scores_agree_with_score_on_upstreams_score_cases(case: dict[str, Any]) -> None:
    objects = list(case.get("namespaces") or []) + list(case.get("objects") or [])
    out = explain(
        case["pod"],
        nodes=case["nodes"],
        pods=case["existingPods"],
        objects=objects,
        config=parse_config(run.config_for(case)),
    )
    assert not out.get("mismatches")
    ok, why = run.check(case, out)
    assert ok, why


def test_a_pod_without_claims_scores_zero_everywhere() -> None:
    """Upstream's Score is 0 on every node for a pod without claims; the vector path says the same."""
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(3)]  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "pause"}]}}  # fmt: skip
    out = explain(pod, nodes=nodes)
    assert not out.get("mismatches")
    assert {n: e["scores"]["DynamicResources"]["normalized"] for n, e in out["nodes"].items()} == {
        "n0": 0,
        "n1": 0,
        "n2": 0,
    }
