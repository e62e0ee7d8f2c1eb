"""``kubeplane explain``: why a pod lands where it lands, or why it stays Pending.

Explain runs the scheduler's own :class:`~kubeplane.scheduler.schedule_one.SchedulingCycle` with a recorder
switched on, so its decision is the scheduler's decision (same PreFilter, same rotation and sampling of nodes,
same vector paths, same seeded tie-break) and its table shows what each plugin said on the way:

* ``selected`` is the node the scheduler would bind the pod to (None when it fits nowhere).
* ``message`` is the FailedScheduling message the scheduler would record (empty when the pod fits).
* ``nodes``: for each node every Filter plugin's own verdict (not only the first failing one), the raw,
  normalised and weighted score of each Score plugin and the total, for the nodes the cycle scored.
  ``examined`` is false for nodes the cycle did not reach (it stops once it has found numFeasibleNodesToFind
  feasible nodes, and at the first feasible node when the profile has no Score plugin); their filter verdicts
  are computed for the record only. ``details`` (plugin -> text) names what upstream's reason keeps generic:
  the untolerated taint of a node TaintToleration rejects (the message keeps upstream's wording).
* ``preFilter``: each PreFilter plugin's status, for the plugins the framework ran.
* ``preemption`` (only when the pod fits nowhere and the profile has PostFilter plugins): what preemption would
  do -- ``nominatedNode`` (or null), ``candidates`` (node -> ``victims`` as namespace/name, most important
  first, and ``pdbViolations``) and ``message``. Nothing is evicted: explain's handle has no client.
* ``boundTo``: for a pod already bound (``spec.nodeName`` with PodScheduled=True), the node it is bound to;
  the rest of the answer is where the scheduler would place it now among all nodes.

Pods' priorities come from ``spec.priority`` or, when absent, from the PriorityClass objects given (as the API
server's Priority admission would). The result is a plain JSON-able dict (``-o json`` prints it);
:func:`render_table` renders it for people. The dict is open: callers add parts other components know under
their own keys (``autoscaler``: :mod:`kubeplane.cli.explain_parts`, which this layer must not import) and render
them after the table; :func:`render_table` ignores keys it does not know.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.priority import global_default_class
from kubeplane.api.views import PodView, meta_of, name_of, namespace_of, section, spec_of, status_of
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config
from kubeplane.scheduler.explain_gang import gang_state
from kubeplane.scheduler.framework.diagnosis import FitError, NoNodesAvailableError, SchedulingError
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.recorder import CycleRecorder
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.default_preemption import OUTCOME_KEY, PreemptionOutcome
from kubeplane.scheduler.plugins.taint_toleration import find_untolerated_do_not_schedule_taint
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import SchedulingCycle

__all__ = ["ExplainError", "ExplainSetup", "cluster_snapshot", "explain", "is_bound", "prepare", "render_table"]

_PLURALS = {
    "Namespace": "namespaces",
    "Service": "services",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "ReplicationController": "replicationcontrollers",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "PodGroup": "podgroups",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
    "CSIStorageCapacity": "csistoragecapacities",
    "VolumeAttachment": "volumeattachments",
    "ResourceClaim": "resourceclaims",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
}
_CLUSTER_SCOPED = frozenset(
    {
        "namespaces",
        "persistentvolumes",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "volumeattachments",
        "resourceslices",
        "deviceclasses",
    }
)
"""Plurals listed with namespace "" (the cluster file's namespace of such objects is ignored)."""


class ExplainError(Exception):
    """Input explain cannot work with (one line for the CLI)."""


def _status_json(status: Status | None) -> dict[str, Any]:
    if status is None:
        return {"code": "Success"}
    out: dict[str, Any] = {"code": status.code.label}
    if status.reasons:
        out["reasons"] = list(status.reasons)
    return out


def _with_priority(pod: Mapping[str, Any], classes: Mapping[str, int], default: int) -> Mapping[str, Any]:
    """The pod with ``spec.priority`` filled from its PriorityClass (or the global default) when unset."""
    spec = spec_of(pod)
    if spec.get("priority") is not None:
        return pod
    name = spec.get("priorityClassName")
    priority = classes.get(name, default) if name else default
    return {**pod, "spec": {**spec, "priority": priority}}


@dataclass
class ExplainSetup:
    """What explain (and :mod:`kubeplane.scheduler.whatif`) evaluate a pod with: built from plain objects by
    :func:`prepare`, so a modified copy of the cluster gets exactly the same treatment as the original.

    ``pod`` has ``metadata.namespace`` defaulted and ``spec.priority`` filled; ``placed`` are the pods bound to a
    node (``spec.nodeName`` set), priorities filled the same way; ``snapshot`` holds ``nodes`` with ``placed``.
    """

    pod: Mapping[str, Any]
    pod_info: PodInfo
    placed: list[Mapping[str, Any]]
    snapshot: Snapshot
    fwk: Framework
    rng: random.Random
    percentage_of_nodes_to_score: int | None = None
    """The configuration's global percentageOfNodesToScore (a profile's own wins, as in the scheduler)."""


def prepare(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    config: KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    seed: int = 0,
    snapshot: Snapshot | None = None,
    memo: PodInfoMemo | None = None,
) -> ExplainSetup:
    """Snapshot, handle and the pod's profile for ``pod`` in the cluster of ``nodes``/``pods``/``objects``.

    ``snapshot``, when given, is :func:`cluster_snapshot` of the same ``nodes``/``pods``/``objects`` (built once
    for several pods: building it dominates a cycle's cost); ``pod`` must not be one of its placed pods. ``memo``
    reuses the PodInfos of earlier snapshots of the same pods (:mod:`kubeplane.scheduler.backend.podinfo_memo`)."""
    config = config if config is not None else default_config()
    pod = {**pod, "metadata": {"namespace": "default", **meta_of(pod)}}
    priority_of = _priorities(objects)
    pod = priority_of(pod)
    pod_info = PodInfo(pod)
    placed = [priority_of(p) for p in pods if PodView(p).node_name]
    if snapshot is None:
        snapshot = Snapshot.from_objects(list(nodes), placed, memo=memo)
    rng = random.Random(seed)
    by_kind: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for obj in objects:
        plural = _PLURALS.get(str(obj.get("kind") or ""))
        if plural is not None:
            ns = "" if plural in _CLUSTER_SCOPED else namespace_of(obj) or "default"
            by_kind.setdefault((plural, ns), []).append(obj)

    def list_objects(resource: str, namespace: str) -> list[Mapping[str, Any]]:
        if namespace:
            return list(by_kind.get((resource, namespace), ()))
        return [o for (plural, _ns), objs in by_kind.items() if plural == resource for o in objs]

    handle = Handle(client=None, rng=rng, snapshot_lister=snapshot, list_objects=list_objects)
    profiles = build_profiles(config, handle, registry)
    fwk = profiles.get(pod_info.scheduler_name)
    if fwk is None:
        raise ExplainError(
            f"no profile for schedulerName {pod_info.scheduler_name!r}; the configuration has "
            + ", ".join(repr(n) for n in profiles)
        )
    return ExplainSetup(pod, pod_info, placed, snapshot, fwk, rng, config.percentage_of_nodes_to_score)


def cluster_snapshot(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]] = (),
    *,
    memo: PodInfoMemo | None = None,
) -> Snapshot:
    """The snapshot :func:`prepare` builds for this cluster (the bound pods, priorities filled the same way), to
    give to several :func:`explain` calls for unbound pods of it. A cycle only reads its snapshot (nominated pods
    and preemption's dry runs work on clones, as upstream's), so sharing it changes no answer."""
    priority_of = _priorities(objects)
    return Snapshot.from_objects(list(nodes), [priority_of(p) for p in pods if PodView(p).node_name], memo=memo)


def _priorities(objects: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """The pod with ``spec.priority`` filled as the Priority admission plugin would from ``objects``'
    PriorityClasses (the global default when it names none)."""
    priority_classes = [o for o in objects if o.get("kind") == "PriorityClass"]
    classes = {name_of(c): int(c.get("value") or 0) for c in priority_classes}
    default_class = global_default_class(priority_classes)
    default_priority = int(default_class.get("value") or 0) if default_class is not None else 0
    return lambda pod: _with_priority(pod, classes, default_priority)


def is_bound(pod: Mapping[str, Any]) -> bool:
    """The pod was bound by a scheduler (or by hand): ``spec.nodeName`` set and PodScheduled=True (the binding
    subresource sets both). A pod file that merely names a node is not bound: NodeName decides on it."""
    view = PodView(pod)
    return bool(view.node_name) and view.condition_is_true("PodScheduled")


def _unbound(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as it was before binding: no nodeName, no PodScheduled condition."""
    spec = {k: v for k, v in spec_of(pod).items() if k != "nodeName"}
    status = dict(status_of(pod))
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    return {**pod, "spec": spec, "status": status}


def _taint_detail(pod: PodInfo, node: NodeInfo) -> str:
    taint = find_untolerated_do_not_schedule_taint(node.taints, pod.tolerations)
    return str(taint) if taint is not None else ""


_DETAILS: dict[str, Callable[[PodInfo, NodeInfo], str]] = {"TaintToleration": _taint_detail}
"""Per-node details for the table where upstream's reason is deliberately generic."""


def explain(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    config: KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    seed: int = 0,
    snapshot: Snapshot | None = None,
    memo: PodInfoMemo | None = None,
) -> dict[str, Any]:
    """Evaluate ``pod`` against ``nodes`` (with ``pods`` already placed by spec.nodeName); ``objects`` are the
    other objects of the cluster (Namespaces, Services, ReplicaSets, ...) plugins may read. ``snapshot`` and
    ``memo``: see :func:`prepare` (``snapshot`` only for a pod that is not bound)."""
    bound_to = str(pod["spec"]["nodeName"]) if is_bound(pod) else None
    if bound_to is not None:
        pod = _unbound(pod)
    if bound_to is not None:
        snapshot = None  # the shared snapshot holds the pod itself where it is bound
    setup = prepare(
        pod,
        nodes=nodes,
        pods=pods,
        objects=objects,
        config=config,
        registry=registry,
        seed=seed,
        snapshot=snapshot,
        memo=memo,
    )
    pod_info, snapshot, fwk = setup.pod_info, setup.snapshot, setup.fwk
    node_infos = list(snapshot.list())
    out: dict[str, Any] = {"pod": pod_info.key, "selected": None, "preFilter": {}, "nodes": {}, "message": ""}
    if bound_to is not None:
        out["boundTo"] = bound_to
    gang = gang_state(pod, pods, objects)
    if gang is not None:
        # whether the profile runs GangScheduling (a profile naming it, or the GenericWorkload and GangScheduling
        # feature gates adding it to the defaults): without it the group is not all-or-nothing
        gang["enforced"] = "GangScheduling" in fwk.plugins
        out["gang"] = gang
    cycle = SchedulingCycle(rng=setup.rng, percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score)
    recorder = CycleRecorder()
    state = CycleState()
    try:
        cycle.schedule(fwk, state, pod_info, node_infos, snapshot.node_table, recorder=recorder)
    except NoNodesAvailableError as exc:
        out["message"] = str(exc)
        return out
    except FitError as exc:
        out["message"] = str(exc)
        if recorder.post_filter_ran:
            out["preemption"] = _preemption(state, recorder, exc.diagnosis.post_filter_msg)
    except SchedulingError as exc:
        # A plugin's Error ends the cycle (the pod would be retried with backoff): report what was recorded up
        # to it, the erroring node's status included, as upstream's cycle reports the error for the pod.
        out["error"] = out["message"] = exc.status.message()
    if "error" not in out:
        cycle.record_unexamined(fwk, state, pod_info, node_infos, recorder)
    out["selected"] = recorder.selected
    out["preFilter"] = {name: _status_json(s) for name, s in recorder.pre_filter.items()}
    if recorder.mismatches:
        out["mismatches"] = list(recorder.mismatches)
    for ni in node_infos:
        record = recorder.nodes.get(ni.name)
        if record is None:  # PreFilter rejected the pod: no node was filtered
            out["nodes"][ni.name] = {"filters": {}, "scores": {}, "total": 0, "examined": False}
            continue
        filters = {name: _status_json(status) for name, status in record.filters.items()}
        details = {}
        for name, status in record.filters.items():
            detail = _DETAILS.get(name)
            text = detail(pod_info, ni) if detail is not None and status is not None and status.is_rejected() else ""
            if text:
                details[name] = text
        scores = {
            name: {
                "raw": r.raw,
                "normalized": r.normalized,
                "weight": r.weight,
                **({"skipped": True} if r.skipped else {}),
            }
            for name, r in record.scores.items()
        }
        out["nodes"][ni.name] = {
            "filters": filters,
            "scores": scores,
            "total": record.total or 0,
            "examined": record.examined,
        }
        if details:
            out["nodes"][ni.name]["details"] = details
    out["scorePlugins"] = [{"name": n, "weight": w} for n, w in recorder.score_plugins]
    return out


def _preemption(state: CycleState, recorder: CycleRecorder, message: str) -> dict[str, Any]:
    """What the PostFilter plugins would do (dry: explain's handle has no client)."""
    outcome = state.get(OUTCOME_KEY)
    candidates: dict[str, Any] = {}
    if isinstance(outcome, PreemptionOutcome):
        for c in outcome.candidates:
            candidates[c.name] = {"victims": [v.key for v in c.victims], "pdbViolations": c.num_pdb_violations}
    result = recorder.post_filter_result
    nominated = result.nominated_node_name if result is not None else None
    return {"nominatedNode": nominated or None, "candidates": candidates, "message": message}


def render_table(result: Mapping[str, Any]) -> Any:
    """A rich Table: one row per node (the selected one marked ``*``), its verdict (each failing Filter plugin
    with its reasons, or the per-node detail where upstream's reason is generic), every Score plugin's
    ``normalised×weight`` and the total; a last row counts the nodes that fit. Nodes the cycle did not examine
    are marked ``-`` in the first column."""
    from rich.table import Table

    nodes: Mapping[str, Any] = result.get("nodes") or {}
    score_plugins = [str(p["name"]) for p in result.get("scorePlugins") or ()]
    for entry in nodes.values():
        for name in entry.get("scores") or {}:
            if name not in score_plugins:
                score_plugins.append(name)
    bound = result.get("boundTo")
    verdict = f"selected {result['selected']}" if result.get("selected") else "unschedulable"
    title = f"pod {result.get('pod')}: " + (f"bound to {bound}; the scheduler now: {verdict}" if bound else verdict)
    caption = str(result.get("message") or "")
    preemption = result.get("preemption") or {}
    nominated = preemption.get("nominatedNode")
    if nominated:
        victims = section(preemption, "candidates", nominated).get("victims") or []
        caption += f"\npreemption would nominate {nominated}, evicting {', '.join(victims)}"
    gang = result.get("gang")
    if gang:
        caption += f"\ngang {gang['podGroup']}: {gang['message']}"
        if gang.get("enforced") is False:
            caption += " (GangScheduling is not enabled: the pods are scheduled one by one)"
    if any(not entry.get("examined", True) for entry in nodes.values()):
        caption += "\n- : not examined by the scheduler (it had found enough feasible nodes); verdicts for the record"
    table = Table(title=title, caption=caption.strip() or None)
    table.add_column("")
    table.add_column("NODE")
    table.add_column("FILTERS")
    for name in score_plugins:
        table.add_column(name, justify="right")
    table.add_column("TOTAL", justify="right")
    for prefilter, status in (result.get("preFilter") or {}).items():
        if status.get("code") not in ("Success", "Skip"):
            table.add_row("", "(all)", f"PreFilter {prefilter}: {', '.join(status.get('reasons') or [])}")
    fit = 0
    for node, entry in sorted(nodes.items(), key=lambda kv: (-int(kv[1].get("total") or 0), kv[0])):
        details = entry.get("details") or {}
        failing = [
            f"{plugin}: {', '.join(s.get('reasons') or [s['code']])}"
            + (f" ({details[plugin]})" if plugin in details else "")
            for plugin, s in (entry.get("filters") or {}).items()
            if s.get("code") not in ("Success", "Skip")
        ]
        fit += 0 if failing else 1
        scores = entry.get("scores") or {}
        cells = []
        for name in score_plugins:
            s = scores.get(name)
            cells.append("-" if s is None else f"{s['normalized']}×{s['weight']}")
        mark = "*" if node == result.get("selected") else ("" if entry.get("examined", True) else "-")
        total = str(entry.get("total", 0)) if scores else "-"
        table.add_row(mark, node, "; ".join(failing) if failing else "fits", *cells, total)
    table.add_row("", "TOTAL", f"{fit} of {len(nodes)} node(s) fit", *([""] * len(score_plugins)), "")
    return table
