"""The pod view's answer: :func:`kubeplane.scheduler.explain.explain` and ``what_if`` on the cluster as it is now.

The cluster's state (nodes, pods and the objects plugins read) is listed through the API with the session's
token (:mod:`.loopback`), exactly as ``kubeplane explain --pod NS/NAME`` lists it with a kubeconfig, so the UI
and the CLI give the same answer for the same cluster. The cycle runs in a worker thread on plain copies of the
objects: it binds nothing and never touches the API server's state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.views import name_of, namespace_of
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.config import KubeSchedulerConfiguration
from kubeplane.scheduler.explain import ExplainError, explain
from kubeplane.scheduler.whatif import what_if

from . import loopback

OTHER_KINDS = (
    ("/api/v1/namespaces", "Namespace"),
    ("/api/v1/services", "Service"),
    ("/apis/apps/v1/replicasets", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "StatefulSet"),
    ("/api/v1/replicationcontrollers", "ReplicationController"),
    ("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget"),
    ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass"),
    ("/apis/scheduling.k8s.io/v1beta1/podgroups", "PodGroup"),
    ("/api/v1/persistentvolumes", "PersistentVolume"),
    ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim"),
    ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass"),
    ("/apis/storage.k8s.io/v1/csinodes", "CSINode"),
    ("/apis/storage.k8s.io/v1/csidrivers", "CSIDriver"),
    ("/apis/storage.k8s.io/v1/csistoragecapacities", "CSIStorageCapacity"),
    ("/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"),
    ("/apis/resource.k8s.io/v1/resourceclaims", "ResourceClaim"),
    ("/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice"),
    ("/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass"),
)
"""What ``kubeplane explain`` lists besides nodes and pods (cli/scheduling.py's ``_OTHER_KINDS``)."""


@dataclass(frozen=True, slots=True)
class ExplainPart:
    """A part another component adds to the pod view's answer under ``key`` (the CLI composes them: the UI must
    not import those components, tests/test_layering.py). ``paths(namespace)`` are ``(API path, kind)`` to read
    for the pod of that namespace with the session's token (a List's items or one object, each given its
    ``kind``; a path answering 404 gives nothing); ``compute(pod, answer, nodes, other pods, objects + what the
    paths gave)`` returns the part, or None for no part (the answer then has no ``key``). It runs in the worker
    thread, after explain."""

    key: str
    paths: Callable[[str], Sequence[tuple[str, str]]]
    compute: Callable[
        [
            Mapping[str, Any],
            Mapping[str, Any],
            Sequence[Mapping[str, Any]],
            Sequence[Mapping[str, Any]],
            Sequence[Mapping[str, Any]],
        ],
        dict[str, Any] | None,
    ]


async def _part_objects(app: loopback.ASGIApp, token: str, part: ExplainPart, namespace: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path, kind in part.paths(namespace):
        response = await loopback.call(app, "GET", path, token=token)
        if response.status == 404:
            continue
        if response.status != 200:
            raise ExplainFailed(response.status, response.json())
        doc = response.json()
        items = doc.get("items") if isinstance(doc.get("items"), list) else [doc]
        out += [{**o, "kind": kind} for o in items]
    return out


class ExplainFailed(Exception):
    """An answer for the browser: ``status`` is the HTTP code, ``body`` the JSON (a Status from the API, or
    ``{"message"}``)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(str(body))
        self.status, self.body = status, body


async def _get(app: loopback.ASGIApp, path: str, token: str) -> Any:
    response = await loopback.call(app, "GET", path, token=token)
    if response.status != 200:
        raise ExplainFailed(response.status, response.json())
    return response.json()


async def cluster_state(
    app: loopback.ASGIApp, token: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, pods, every other object plugins read, each with its ``kind``), listed with the session's token."""
    nodes = (await _get(app, "/api/v1/nodes", token))["items"]
    pods = (await _get(app, "/api/v1/pods", token))["items"]
    others: list[dict[str, Any]] = []
    for path, kind in OTHER_KINDS:
        others += [{**o, "kind": kind} for o in (await _get(app, path, token))["items"]]
    return nodes, pods, others


async def explain_pod(
    app: loopback.ASGIApp,
    token: str,
    namespace: str,
    name: str,
    *,
    config: KubeSchedulerConfiguration | None = None,
    with_what_if: bool = True,
    memo: PodInfoMemo | None = None,
    parts: Sequence[ExplainPart] = (),
) -> dict[str, Any]:
    """``{"pod": the pod, "explain": explain's JSON, "whatIf": what_if's JSON or None}``; what_if only for a pod
    that fits nowhere (for a pod that fits it has nothing to suggest). ``memo`` keeps the PodInfos of the pods
    from one request to the next (a new generation per request: what the cluster no longer has is forgotten).
    Each of ``parts`` may add its key to explain's JSON (:class:`ExplainPart`)."""
    pod = await _get(app, f"/api/v1/namespaces/{namespace}/pods/{name}", token)
    nodes, pods, others = await cluster_state(app, token)
    part_objects = [await _part_objects(app, token, part, namespace) for part in parts]
    key = (namespace_of(pod) or "default", name_of(pod))
    placed = [p for p in pods if (namespace_of(p) or "default", name_of(p)) != key]

    if memo is not None:
        memo.rotate()

    def run() -> dict[str, Any]:
        result = explain(pod, nodes=nodes, pods=placed, objects=others, config=config, memo=memo)
        for part, extra in zip(parts, part_objects, strict=True):
            value = part.compute(pod, result, nodes, placed, others + extra)
            if value is not None:
                result[part.key] = value
        suggestions = None
        if result.get("selected") is None and with_what_if:
            suggestions = what_if(pod, nodes=nodes, pods=placed, objects=others, config=config, memo=memo)
        return {"pod": pod, "explain": result, "whatIf": suggestions}

    try:
        return await asyncio.to_thread(run)
    except ExplainError as exc:
        raise ExplainFailed(422, {"message": str(exc)}) from None
