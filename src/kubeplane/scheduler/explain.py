"""``kubeplane explain``: why a pod lands where it lands, or why it stays Pending.

Unlike the scheduler, explain evaluates **every** node (no percentageOfNodesToScore sampling) and runs
**every** Filter plugin on each node without stopping at the first failure, then scores every node that
passes. What it reports is still exactly the scheduler's decision procedure:

* ``message`` is the FailedScheduling message the scheduler would record: for each node the *first* failing
  Filter plugin in profile order counts (:func:`kubeplane.scheduler.schedule_one.fit_error_message`); a
  PreFilter rejection is reported under ``preFilter`` and in the message; nodes outside a PreFilterResult
  count with upstream's "node(s) didn't satisfy plugin(s) [...]" status. Empty when the pod fits.
* ``preemption`` (only when the pod fits nowhere and the profile has PostFilter plugins) is what preemption
  would do: ``nominatedNode`` (or null), ``candidates`` (node -> ``victims`` as namespace/name, most important
  first, and ``pdbViolations``) and ``message`` (the ``preemption: ...`` suffix of the FailedScheduling message,
  empty when preemption would succeed). Nothing is evicted; pods' priorities come from ``spec.priority`` or,
  when absent, from the PriorityClass objects given (as the API server's Priority admission would).
* ``selected`` is the feasible node with the highest total (Σ weight × normalized score), ties broken by the
  seeded RNG as the scheduler does. Because explain scores all feasible nodes, on clusters of 100+ nodes the
  scheduler (which scores a sample) may pick another node of equal standing.

The result is a plain JSON-able dict (``-o json`` prints it); :func:`render_table` renders it for people.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.priority import global_default_class
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, NodeScore, NodeToStatus, Status
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.default_preemption import OUTCOME_KEY, PreemptionOutcome
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import NO_NODES_AVAILABLE, Diagnosis, fit_error_message

__all__ = ["ExplainError", "ExplainSetup", "explain", "prepare", "render_table"]

_PLURALS = {
    "Namespace": "namespaces",
    "Service": "services",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "ReplicationController": "replicationcontrollers",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


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
    spec = pod.get("spec") or {}
    if spec.get("priority") is not None:
        return pod
    name = spec.get("priorityClassName")
    priority = classes.get(name, default) if name else default
    return {**pod, "spec": {**spec, "priority": priority}}


def _preemption(fwk: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> dict[str, Any]:
    """Run the PostFilter plugins (dry: the handle has no client) and report what preemption would do."""
    statuses = NodeToStatus(diagnosis.node_to_status, diagnosis.absent_nodes_status)
    result, status = fwk.run_post_filter_plugins(state, pod, statuses)
    if status is not None and status.code == Code.ERROR:
        raise ExplainError(status.message())
    diagnosis.post_filter_msg = status.message() if status is not None else ""
    outcome = state.get(OUTCOME_KEY)
    candidates: dict[str, Any] = {}
    if isinstance(outcome, PreemptionOutcome):
        for c in outcome.candidates:
            candidates[c.name] = {"victims": [v.key for v in c.victims], "pdbViolations": c.num_pdb_violations}
    nominated = result.nominated_node_name if result is not None else None
    return {"nominatedNode": nominated or None, "candidates": candidates, "message": diagnosis.post_filter_msg}


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


def prepare(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    config: KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    seed: int = 0,
) -> ExplainSetup:
    """Snapshot, handle and the pod's profile for ``pod`` in the cluster of ``nodes``/``pods``/``objects``."""
    config = config if config is not None else default_config()
    meta = pod.get("metadata") or {}
    pod = {**pod, "metadata": {"namespace": "default", **meta}}
    priority_classes = [o for o in objects if o.get("kind") == "PriorityClass"]
    classes = {str((c.get("metadata") or {}).get("name") or ""): int(c.get("value") or 0) for c in priority_classes}
    default_class = global_default_class(priority_classes)
    default_priority = int(default_class.get("value") or 0) if default_class is not None else 0
    pod = _with_priority(pod, classes, default_priority)
    pod_info = PodInfo(pod)
    placed = [_with_priority(p, classes, default_priority) for p in pods if (p.get("spec") or {}).get("nodeName")]
    snapshot = Snapshot.from_objects(list(nodes), placed)
    rng = random.Random(seed)
    by_kind: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for obj in objects:
        plural = _PLURALS.get(str(obj.get("kind") or ""))
        if plural is not None:
            ns = "" if plural == "namespaces" else str((obj.get("metadata") or {}).get("namespace") or "default")
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
    return ExplainSetup(pod, pod_info, placed, snapshot, fwk, rng)


def explain(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    config: KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Evaluate ``pod`` against ``nodes`` (with ``pods`` already placed by spec.nodeName); ``objects`` are the
    other objects of the cluster (Namespaces, Services, ReplicaSets, ...) plugins may read."""
    setup = prepare(pod, nodes=nodes, pods=pods, objects=objects, config=config, registry=registry, seed=seed)
    pod_info, snapshot, fwk, rng = setup.pod_info, setup.snapshot, setup.fwk, setup.rng
    node_infos = list(snapshot.list())
    out: dict[str, Any] = {"pod": pod_info.key, "selected": None, "preFilter": {}, "nodes": {}, "message": ""}
    if not node_infos:
        out["message"] = NO_NODES_AVAILABLE
        return out

    state = CycleState()
    for plugin in fwk.pre_filter_plugins:  # each plugin's own verdict, on a scratch state
        _r, s = plugin.pre_filter(CycleState(), pod_info, node_infos)
        out["preFilter"][plugin.name()] = _status_json(s if s is None or s.code != Code.SUCCESS else None)
    result, status, rejected = fwk.run_pre_filter_plugins(state, pod_info, node_infos)
    diagnosis = Diagnosis(unschedulable_plugins=set(rejected))
    if status is not None and status.code != Code.SUCCESS:
        if not status.is_rejected():
            raise ExplainError(status.message())
        diagnosis.pre_filter_msg = status.message()
        diagnosis.absent_nodes_status = status
        if fwk.has_post_filter_plugins():
            out["preemption"] = _preemption(fwk, state, pod_info, diagnosis)
        out["message"] = fit_error_message(len(node_infos), diagnosis)
        for ni in node_infos:
            out["nodes"][ni.name] = {"filters": {}, "scores": {}, "total": 0}
        return out
    allowed = result.node_names if result is not None else None
    if allowed is not None:
        diagnosis.absent_nodes_status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejected))}]",)
        )

    feasible = []
    for ni in node_infos:
        verdicts = fwk.run_all_filter_plugins(state, pod_info, ni)
        entry: dict[str, Any] = {"filters": {name: _status_json(s) for name, s in verdicts.items()}}
        out["nodes"][ni.name] = entry
        if allowed is not None and ni.name not in allowed:
            continue
        first = next((s for s in verdicts.values() if s is not None and s.code != Code.SKIP), None)
        if first is None:
            feasible.append(ni)
        else:
            if first.code == Code.ERROR:
                raise ExplainError(first.message())
            diagnosis.node_to_status[ni.name] = first
            diagnosis.add_plugin_status(first)

    if not feasible:
        if fwk.has_post_filter_plugins():
            out["preemption"] = _preemption(fwk, state, pod_info, diagnosis)
        out["message"] = fit_error_message(len(node_infos), diagnosis)
        for ni in node_infos:
            out["nodes"][ni.name].update(scores={}, total=0)
        return out

    pre_score = fwk.run_pre_score_plugins(state, pod_info, feasible)
    if pre_score is not None:
        raise ExplainError(pre_score.message())
    totals = {ni.name: 0 for ni in feasible}
    scores_out: dict[str, dict[str, Any]] = {ni.name: {} for ni in feasible}
    for scorer in fwk.score_plugins:
        name = scorer.name()
        weight = fwk.score_weights.get(name, 1)
        if name in state.skip_score_plugins:
            for ni in feasible:
                scores_out[ni.name][name] = {"raw": 0, "normalized": 0, "weight": weight, "skipped": True}
            continue
        raw = fwk.raw_scores(state, pod_info, scorer, feasible)
        if isinstance(raw, Status):
            raise ExplainError(raw.message())
        normalized = [NodeScore(s.name, s.score) for s in raw]
        bad = fwk.normalize(state, pod_info, scorer, normalized)
        if bad is not None:
            raise ExplainError(bad.message())
        for r, n in zip(raw, normalized, strict=True):
            scores_out[r.name][name] = {"raw": r.score, "normalized": n.score, "weight": weight}
            totals[r.name] += weight * n.score
    for ni in node_infos:
        entry = out["nodes"][ni.name]
        entry["scores"] = scores_out.get(ni.name, {})
        entry["total"] = totals.get(ni.name, 0)
    best = max(totals.values())
    tied = [ni.name for ni in feasible if totals[ni.name] == best]
    out["selected"] = tied[0] if len(tied) == 1 else tied[rng.randrange(len(tied))]
    return out


def render_table(result: Mapping[str, Any]) -> Any:
    """A rich Table: one row per node, its verdict (failing plugins and reasons), score columns, the total."""
    from rich.table import Table

    nodes: Mapping[str, Any] = result.get("nodes") or {}
    score_plugins: list[str] = []
    for entry in nodes.values():
        for name in entry.get("scores") or {}:
            if name not in score_plugins:
                score_plugins.append(name)
    title = f"pod {result.get('pod')}: " + (
        f"selected {result['selected']}" if result.get("selected") else "unschedulable"
    )
    caption = str(result.get("message") or "")
    preemption = result.get("preemption") or {}
    nominated = preemption.get("nominatedNode")
    if nominated:
        victims = (preemption.get("candidates") or {}).get(nominated, {}).get("victims") or []
        caption += f"\npreemption would nominate {nominated}, evicting {', '.join(victims)}"
    table = Table(title=title, caption=caption or None)
    table.add_column("")
    table.add_column("NODE")
    table.add_column("FILTERS")
    for name in score_plugins:
        table.add_column(name, justify="right")
    table.add_column("TOTAL", justify="right")
    for prefilter, status in (result.get("preFilter") or {}).items():
        if status.get("code") not in ("Success", "Skip"):
            table.add_row("", "(all)", f"PreFilter {prefilter}: {', '.join(status.get('reasons') or [])}")
    for node, entry in sorted(nodes.items(), key=lambda kv: (-int(kv[1].get("total") or 0), kv[0])):
        failing = [
            f"{plugin}: {', '.join(s.get('reasons') or [s['code']])}"
            for plugin, s in (entry.get("filters") or {}).items()
            if s.get("code") not in ("Success", "Skip")
        ]
        verdict = "; ".join(failing) if failing else "fits"
        scores = entry.get("scores") or {}
        cells = []
        for name in score_plugins:
            s = scores.get(name)
            cells.append("" if s is None else f"{s['normalized']}×{s['weight']}")
        mark = "*" if node == result.get("selected") else ""
        table.add_row(mark, node, verdict, *cells, str(entry.get("total", 0)) if not failing else "")
    return table
