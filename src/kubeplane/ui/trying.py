"""The scheduler view: the running configuration, and "try" — what an edited configuration would do to the
Pending pods, side by side with what the running one does, on the same snapshot of the cluster.

Nothing is bound and nothing is written: the cluster is listed once with the session's token (as the pod view
lists it, :func:`.explaining.cluster_state`), then :func:`kubeplane.scheduler.explain.explain` runs each chosen
pod's scheduling cycle twice in a worker thread, once per configuration, on plain copies of those objects. A pod
uses its ``schedulerName``'s profile in each configuration, as the scheduler would; a configuration without that
profile answers with explain's message (the pod would stay Pending: no scheduler of that name).

"Pending" is what ``kubectl get pods`` calls Pending and a scheduler could still place: no ``spec.nodeName``, not
terminal, not being deleted. Gated pods (``schedulingGates``) are included: they are the ones a user holds back
while deciding how to schedule them. At most :data:`MAX_PODS` are evaluated per try (two cycles each over every
node); the answer says how many were pending. The cluster's snapshot is built once per Try
(:func:`~kubeplane.scheduler.explain.cluster_snapshot`) and each configuration's plugin registry once: a cycle only
reads its snapshot, so sharing it changes no answer, and building it dominated a cycle's cost.

An edited ``outOfTreeRegistry`` may only name plugins the running configuration registered, with the same import
paths: resolving profiles imports those modules, and a web request must never make the server import code that
its operator did not configure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.views import name_of, namespace_of
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import (
    ConfigError,
    KubeSchedulerConfiguration,
    ResolvedPlugins,
    parse_config,
    resolve_plugins,
    validate_queue_sort_shared,
)
from kubeplane.scheduler.config.encoding import to_v1
from kubeplane.scheduler.explain import ExplainError, cluster_snapshot, explain
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.plugins.registry import registry_for

from . import loopback, yamltext
from .explaining import cluster_state

MAX_PODS = 50


class TryFailed(Exception):
    """An answer for the browser: ``status`` the HTTP code, ``body`` its JSON (``message``; ``line`` when a YAML
    syntax error has one; ``errors`` one per configuration problem, each naming its field path)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(str(body.get("message")))
        self.status, self.body = status, body


def _resolved(config: KubeSchedulerConfiguration) -> list[ResolvedPlugins]:
    """Each profile's plugins per point, as the scheduler builds its profiles (unknown plugins, points a plugin
    lacks, no binder, queueSort differing between profiles: ConfigError)."""
    available = registry_for(config).available()
    resolved = [resolve_plugins(p, available, profile_index=i) for i, p in enumerate(config.profiles)]
    validate_queue_sort_shared(resolved, plugin_configs=[p.plugin_config for p in config.profiles])
    return resolved


def describe(config: KubeSchedulerConfiguration, *, source: str) -> dict[str, Any]:
    """The configuration for the view: its v1 document as YAML (the editor's starting text) and, per profile,
    the plugins each extension point runs in order with their score weights (upstream ``NewFramework``'s
    expansion of multiPoint, enabled and disabled). ``source`` says where the configuration comes from."""
    resolved = _resolved(config)
    profiles = []
    for profile, plugins in zip(config.profiles, resolved, strict=True):
        percentage = profile.percentage_of_nodes_to_score
        if percentage is None:
            percentage = config.percentage_of_nodes_to_score
        profiles.append(
            {
                "schedulerName": profile.scheduler_name,
                "percentageOfNodesToScore": percentage,  # None: adaptive
                "points": {
                    point: [{"name": name, "weight": weight} for name, weight in entries]
                    for point, entries in plugins.points().items()
                },
            }
        )
    return {"source": source, "yaml": yamltext.to_yaml(to_v1(config)), "profiles": profiles}


def parse_edited(text: str, running: KubeSchedulerConfiguration | None = None) -> KubeSchedulerConfiguration:
    """The edited YAML as a configuration, checked as ``kube-scheduler --config`` checks it (strict decoding,
    defaulting, validation, then each profile's plugins resolved against the registry). Raises TryFailed 400.

    ``outOfTreeRegistry`` entries that ``running`` (None: no configuration) does not have with the same import path
    are refused before anything is imported (403, naming the field)."""
    try:
        data = yamlio.load(text) if text.strip() else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise TryFailed(400, {"message": f"invalid YAML: {exc.problem or exc}", "line": line}) from None
    except yaml.YAMLError as exc:
        raise TryFailed(400, {"message": f"invalid YAML: {exc}"}) from None
    if not isinstance(data, Mapping):
        raise TryFailed(400, {"message": "the configuration must be a KubeSchedulerConfiguration object"})
    try:
        config = parse_config(data)
        _refuse_new_imports(config, running)
        _resolved(config)
    except ConfigError as exc:
        raise TryFailed(400, {"message": str(exc), "errors": list(exc.errors)}) from None
    return config


def _refuse_new_imports(config: KubeSchedulerConfiguration, running: KubeSchedulerConfiguration | None) -> None:
    allowed = running.out_of_tree_registry if running is not None else {}
    for name, path in config.out_of_tree_registry.items():
        if allowed.get(name) != path:
            message = (
                f"outOfTreeRegistry.{name}: Forbidden: {path!r} is not registered by the running scheduler; "
                "the UI only tries plugins the running configuration already loads"
            )
            raise TryFailed(403, {"message": message, "errors": [message]})


def is_pending(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    return (
        not spec.get("nodeName") and status.get("phase", "Pending") == "Pending" and not meta.get("deletionTimestamp")
    )


def _key(pod: Mapping[str, Any]) -> str:
    return f"{namespace_of(pod) or 'default'}/{name_of(pod)}"


def _answer(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    others: Sequence[Mapping[str, Any]],
    config: KubeSchedulerConfiguration,
    registry: Registry,
    snapshot: Snapshot,
) -> dict[str, Any]:
    """One configuration's verdict for one pod: the node it would choose with that node's total score, or why
    it fits nowhere (explain's message), and how many nodes passed every Filter plugin."""
    try:
        result = explain(
            pod, nodes=nodes, pods=pods, objects=others, config=config, registry=registry, snapshot=snapshot
        )
    except ExplainError as exc:
        return {"node": None, "score": None, "feasible": 0, "message": str(exc)}
    selected = result.get("selected")
    entries: Mapping[str, Any] = result.get("nodes") or {}
    feasible = sum(
        1
        for entry in entries.values()
        if entry.get("filters") and all(s.get("code") in ("Success", "Skip") for s in entry["filters"].values())
    )
    score = entries[selected]["total"] if isinstance(selected, str) and selected in entries else None
    return {"node": selected, "score": score, "feasible": feasible, "message": str(result.get("message") or "")}


async def try_config(
    app: loopback.ASGIApp,
    token: str,
    text: str,
    *,
    current: KubeSchedulerConfiguration,
    pods: Sequence[str] = (),
    memo: PodInfoMemo | None = None,
) -> dict[str, Any]:
    """``{"pending": n, "evaluated": [per pod: pod, schedulerName, today, tried, changed], "truncated"}`` for the
    Pending pods (those of ``pods``, ``namespace/name``, when given)."""
    edited = parse_edited(text, current)
    nodes, listed, others = await cluster_state(app, token)
    pending = [p for p in listed if is_pending(p)]
    if pods:
        wanted = set(pods)
        pending = [p for p in pending if _key(p) in wanted]
    chosen = pending[:MAX_PODS]

    def run() -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        if not chosen:
            return rows
        if memo is not None:
            memo.rotate()
        snapshot = cluster_snapshot(nodes, listed, others, memo=memo)  # bound pods only: none of the chosen ones
        registries = {id(c): registry_for(c) for c in (current, edited)}
        for pod in chosen:
            key = _key(pod)
            placed = [p for p in listed if _key(p) != key]
            common: dict[str, Any] = {"nodes": nodes, "pods": placed, "others": others, "snapshot": snapshot}
            today = _answer(pod, config=current, registry=registries[id(current)], **common)
            tried = _answer(pod, config=edited, registry=registries[id(edited)], **common)
            rows.append(
                {
                    "pod": key,
                    "schedulerName": (pod.get("spec") or {}).get("schedulerName") or "default-scheduler",
                    "today": today,
                    "tried": tried,
                    "changed": today["node"] != tried["node"],
                }
            )
        return rows

    return {"pending": len(pending), "evaluated": await asyncio.to_thread(run), "truncated": len(pending) > MAX_PODS}
