"""Copy-on-write status writes through ``Registry.guaranteed_update`` against the path that copies the stored
object whole (``subresources.COPY_ON_WRITE`` off).

Upstream's ``GuaranteedUpdate`` hands the patcher a fresh decode of the stored object; kubeplane's status writes
hand the strategic merge the stored object itself and share what the patch does not reach with the result. For
random pods (labels, annotations, containers, managed fields from a create and an earlier status write) and random
status patches (conditions, IPs, container statuses, phase, labels, nulls, directives), two registries with the
same clock and randomness must answer the same (object or error) and store the same bytes -- managedFields
included -- on either path.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver import subresources
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

TYPES = st.sampled_from(["Ready", "Initialized", "ContainersReady", "PodScheduled", "example.com/Gate"])
SCALARS = st.one_of(st.none(), st.sampled_from(["True", "False", "", "x"]))
LABELS = st.dictionaries(st.sampled_from(["app", "tier", "x"]), st.sampled_from(["a", "b", ""]), max_size=3)
CONTAINERS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)


def _pod(names: list[str], labels: dict[str, str], annotations: dict[str, str], node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": n, "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
            for n in names
        ]
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "labels": labels, "annotations": annotations}, "spec": spec}


PODS = st.builds(_pod, CONTAINERS, LABELS, LABELS, st.sampled_from([None, "n1"]))


@st.composite
def status_patches(draw: st.DrawFn) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if draw(st.booleans()):
        status["phase"] = draw(st.sampled_from(["Pending", "Running", "Succeeded", None]))
    if draw(st.booleans()):
        conditions = [
            {"type": t, "status": draw(st.sampled_from(["True", "False"])), "reason": draw(SCALARS)}
            for t in draw(st.lists(TYPES, unique=True, max_size=4))
        ]
        if draw(st.booleans()) and conditions:
            conditions.append({"$patch": "delete", "type": conditions[0]["type"]})
        status["conditions"] = conditions
    if draw(st.booleans()):
        ip = draw(st.sampled_from(["10.0.0.2", "10.0.0.3", None]))
        status["podIP"] = ip
        status["podIPs"] = None if ip is None else [{"ip": ip}]
    if draw(st.booleans()):
        status["containerStatuses"] = [
            {"name": n, "ready": draw(st.booleans()), "restartCount": 0, "image": "i", "imageID": ""}
            for n in draw(st.lists(st.sampled_from(["a", "b"]), unique=True, max_size=2))
        ]
    patch: dict[str, Any] = {"status": status}
    if draw(st.booleans()):
        patch["metadata"] = {"labels": draw(st.dictionaries(st.sampled_from(["app", "y"]), SCALARS, max_size=2))}
    if draw(st.booleans()):
        patch["spec"] = {"nodeName": "ignored"}  # a status write keeps the stored spec
    return patch


async def _run(pod: dict[str, Any], patches: list[dict[str, Any]], *, cow: bool) -> list[Any]:
    """Every answer (object or error) and the stored bytes after each write, on one path."""
    subresources.COPY_ON_WRITE = cow
    ticks = iter(range(1_800_000_000, 1_900_000_000, 7))
    registry = Registry(store=MemoryStore(), now=lambda: float(next(ticks)), rng=random.Random(7))
    await registry.start()
    out: list[Any] = []
    try:
        pods = registry.resource("", "pods")
        await registry.create(pods, "default", orjson.loads(orjson.dumps(pod)), manager="creator")
        for i, patch in enumerate(patches):
            try:
                answer: Any = await subresources.patch_object(
                    registry,
                    pods,
                    "default",
                    "p",
                    content_type=subresources.STRATEGIC_PATCH,
                    patch=orjson.loads(orjson.dumps(patch)),
                    subresource="status",
                    manager=f"writer-{i % 2}",
                )
            except APIError as exc:
                answer = ("error", exc.status)
            stored = await registry.store.get(pods.key("p", "default"))
            out.append((answer, stored.value if stored is not None else None))
        return out
    finally:
        subresources.COPY_ON_WRITE = True
        await registry.stop()


@settings(max_examples=60, deadline=None)
@given(PODS, st.lists(status_patches(), min_size=1, max_size=4))
def test_copy_on_write_status_writes_are_the_copying_path(pod: dict[str, Any], patches: list[dict[str, Any]]) -> None:
    cow = asyncio.run(_run(pod, patches, cow=True))
    copying = asyncio.run(_run(pod, patches, cow=False))
    assert orjson.dumps(cow, default=repr) == orjson.dumps(copying, default=repr)


def test_a_status_write_shares_the_spec_and_stores_the_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path engages for a strategic merge patch of pods/status: the stored pod carries the new status and
    the kubelet's managedFields entry, and the transform saw the stored object itself (no whole copy)."""
    from kubeplane.apiserver import registry as registry_module

    copies: list[object] = []
    real = registry_module.deep_copy

    def counted(obj: dict[str, Any]) -> dict[str, Any]:
        copies.append(obj)
        return real(obj)

    monkeypatch.setattr(registry_module, "deep_copy", counted)
    patch = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    answers = asyncio.run(_run(_pod(["a"], {}, {}, "n1"), [patch], cow=True))
    assert copies == []
    stored = orjson.loads(answers[0][1])
    assert stored["status"]["phase"] == "Running"
    assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["creator", "writer-0"]
    assert asyncio.run(_run(_pod(["a"], {}, {}, "n1"), [patch], cow=False)) == answers
    assert copies  # the copying path copies
