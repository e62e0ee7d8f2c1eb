"""``kubeplane explain --what-if``: the smallest single changes that would let a Pending pod fit somewhere.

Every change reported here is **verified**: the cluster (or the pod) is copied, the one change is applied to the
copy, and the pod is evaluated again by the same machinery explain uses (:func:`kubeplane.scheduler.explain.prepare`:
the same profile, PreFilter and Filter plugins, nothing sampled). A candidate the re-run does not confirm is
dropped, so ``verified`` is always true and ``nodes_that_fit`` is what the Filters said on the modified copy,
never a guess. Candidates are only *proposed* from the Filter verdicts of the original cluster; the proposal may
be clever or naive, the verification is what makes it true.

Kinds, in the order results are sorted (smallest change first, then by how much changes):

``free-resources``
    A node failing NodeResourcesFit (and otherwise only plugins that depend on the pods placed there): how much of
    each resource is missing (``request + in use - allocatable``; one pod slot for "Too many pods") and which pods
    would have to go: pods of lower priority than the pod, lowest priority first, the fewest (greedy by priority,
    then by how much of the shortfall each covers, then a reprieve pass that keeps every victim that is not
    needed, as preemption does). Only when lower-priority pods cannot free enough are other pods used, and the
    details say ``preemptible: false``. Verified with those pods removed. A node smaller than the request is
    never a candidate.
``tolerate-taint``
    A node failing only TaintToleration / NodeUnschedulable with exactly one untolerated NoSchedule/NoExecute taint
    (``node.kubernetes.io/unschedulable:NoSchedule`` for a cordoned node): the toleration that tolerates exactly that
    taint (``Equal`` with the taint's value, ``Exists`` when it has none). Verified with the toleration added.
``relax-constraint``
    Drop one ``nodeSelector`` entry, one requirement of a required node-affinity term (the whole required node
    affinity when that is its only requirement of its only term: terms are ORed, so dropping one of several
    never relaxes anything), one required pod-affinity or pod-anti-affinity term, or one ``DoNotSchedule``
    topology spread constraint -- tried only for the constraints whose plugin rejected some node.
``add-node-label``
    A node failing only NodeAffinity on the pod's own selector/affinity: one label ``key=value`` taken from the pod's
    ``nodeSelector`` or from an ``In``/``Exists``/``Gt``/``Lt`` requirement that makes the node match. Verified with the
    node relabelled.
``add-node``
    A copy of an existing node, empty (no pods), named ``<node>-copy``, its hostname label renamed and without
    cordon; one candidate per distinct node shape (labels but hostname, taints, allocatable). Verified: the copy
    must be among the nodes that then fit.

Work is bounded: at most ``limit`` candidates per kind (per constraint type for ``relax-constraint``) are verified,
plus at most ``limit`` extra attempts for candidates whose verification failed; each verification is one
PreFilter + Filter pass over the modified cluster (no scoring, no preemption).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.quantity import Format, Quantity
from kubeplane.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, tolerations_tolerate_taint
from kubeplane.api.views import EMPTY, NodeView, PodView, meta_of, section, spec_of
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import KubeSchedulerConfiguration
from kubeplane.scheduler.explain import ExplainError, ExplainSetup, prepare
from kubeplane.scheduler.framework.diagnosis import SchedulingError
from kubeplane.scheduler.framework.interface import Code, CycleState, Status
from kubeplane.scheduler.framework.recorder import CycleRecorder
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.node_affinity import ERR_REASON_POD
from kubeplane.scheduler.plugins.node_resources_fit import InsufficientResource, fits_request
from kubeplane.scheduler.plugins.node_unschedulable import UNSCHEDULABLE_TAINT
from kubeplane.scheduler.schedule_one import SchedulingCycle

__all__ = ["KINDS", "changes_json", "render_table", "what_if"]

KINDS = ("free-resources", "tolerate-taint", "relax-constraint", "add-node-label", "add-node")
"""The kinds of change, smallest first: the primary sort key of the result."""

_HOSTNAME = "kubernetes.io/hostname"
_POD_DEPENDENT = frozenset(
    {"NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread", "VolumeRestrictions", "NodeVolumeLimits"}
)
"""Filter plugins whose verdict on a node depends on the pods placed there (removing pods or using an empty copy
of the node may turn them); a node failing any other plugin cannot be helped by those two kinds of change."""


@dataclass
class _Evaluation:
    fit: list[str]
    failing: dict[str, dict[str, Status]] = field(default_factory=dict)
    """node -> plugin -> its non-success verdict (only filled by a full evaluation)."""


def _evaluate(setup: ExplainSetup, *, full: bool) -> _Evaluation:
    """PreFilter then Filter on every node, through the scheduler's own cycle in its exhaustive mode (every
    node examined, every feasible one found). ``full`` switches the recorder on to collect every Filter plugin's
    verdict on every node (for proposing changes); without it only the feasible nodes are wanted (verifying)."""
    fwk, pod_info = setup.fwk, setup.pod_info
    node_infos = list(setup.snapshot.list())
    out = _Evaluation(fit=[])
    if not node_infos:
        return out
    cycle = SchedulingCycle(rng=setup.rng, percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score)
    recorder = CycleRecorder() if full else None
    state = CycleState()
    try:
        found, diagnosis = cycle.find_nodes_that_fit_pod(
            fwk, state, pod_info, node_infos, setup.snapshot.node_table, recorder=recorder, exhaustive=True
        )
    except SchedulingError as exc:
        raise ExplainError(exc.status.message()) from None
    position = {ni.name: i for i, ni in enumerate(node_infos)}
    out.fit = sorted((ni.name for ni in found.feasible), key=position.__getitem__)
    if recorder is None:
        return out
    if diagnosis.pre_filter_msg:  # PreFilter rejected the pod on every node
        rejected = sorted(diagnosis.unschedulable_plugins)
        status = diagnosis.absent_nodes_status
        assert status is not None
        for ni in node_infos:
            out.failing[ni.name] = dict.fromkeys(rejected, status)
        return out
    cycle.record_unexamined(fwk, state, pod_info, node_infos, recorder)
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't satisfy plugin(s)",))
    allowed = recorder.pre_filter_nodes
    outside = sorted(diagnosis.unschedulable_plugins)
    for ni in node_infos:
        if allowed is not None and ni.name not in allowed:
            out.failing[ni.name] = dict.fromkeys(outside, absent)
            continue
        verdicts = recorder.nodes[ni.name].filters
        out.failing[ni.name] = {n: st for n, st in verdicts.items() if st is not None and st.code != Code.SKIP}
    return out


def _amount(resource: str, value: int) -> str:
    """A resource amount in its natural units (millicores for cpu, bytes otherwise) as a quantity string."""
    if resource == "cpu":
        return str(Quantity.from_milli(value))
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return str(Quantity.from_int(value, Format.BINARY_SI))
    return str(value)


def _toleration_for(taint: Mapping[str, Any]) -> dict[str, Any]:
    """The narrowest toleration of one taint: its key and effect, and its value (``Exists`` when it has none)."""
    key, value, effect = str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or "")
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value") or ""
    return f"{taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"


@dataclass
class _Change:
    kind: str
    change: str
    nodes: list[str]
    details: dict[str, Any]
    size: tuple[float, ...]
    nodes_that_fit: list[str]

    def sort_key(self) -> tuple[Any, ...]:
        return (KINDS.index(self.kind), self.size, -len(self.nodes_that_fit), self.change)

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "kind": self.kind,
            "nodes": list(self.nodes),
            "details": self.details,
            "verified": True,
            "nodes_that_fit": list(self.nodes_that_fit),
        }


class _WhatIf:
    """One what-if question: the original cluster, its evaluation, and ``verify`` for modified copies."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        objects: Sequence[Mapping[str, Any]],
        config: KubeSchedulerConfiguration | None,
        registry: Registry | None,
        seed: int,
        limit: int,
        memo: PodInfoMemo | None = None,
    ) -> None:
        self.nodes = list(nodes)
        self.objects = list(objects)
        self.config, self.registry, self.seed, self.limit = config, registry, seed, limit
        # every verification builds a snapshot of (mostly) the same pods: their PodInfos are derived once
        self.memo = memo if memo is not None else PodInfoMemo()
        self.setup = prepare(
            pod, nodes=nodes, pods=pods, objects=objects, config=config, registry=registry, seed=seed, memo=self.memo
        )
        self.pod: Mapping[str, Any] = self.setup.pod
        self.placed = self.setup.placed
        self.base = _evaluate(self.setup, full=True)
        self.verifications = 0

    def verify(
        self,
        *,
        pod: Mapping[str, Any] | None = None,
        nodes: Sequence[Mapping[str, Any]] | None = None,
        pods: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """The nodes the pod fits on in a modified copy of the cluster (what is not given stays as it is)."""
        self.verifications += 1
        # The same pods on the same (or relabelled/retainted) nodes: the snapshot is derived from the original's
        # instead of being built again from 50,000 pods; a cycle only reads it (see Snapshot.with_nodes).
        snapshot: Snapshot | None = None
        if pods is None:
            snapshot = self.setup.snapshot if nodes is None else self.setup.snapshot.with_nodes(nodes)
        setup = prepare(
            pod if pod is not None else self.pod,
            nodes=nodes if nodes is not None else self.nodes,
            pods=pods if pods is not None else self.placed,
            objects=self.objects,
            config=self.config,
            registry=self.registry,
            seed=self.seed,
            snapshot=snapshot,
            memo=self.memo,
        )
        return _evaluate(setup, full=False).fit

    def failing_nodes(self, accept: Callable[[set[str]], bool]) -> list[NodeInfo]:
        """Nodes (in snapshot order) whose set of failing plugins ``accept`` takes."""
        out = []
        for ni in self.setup.snapshot.list():
            failing = set(self.base.failing.get(ni.name) or ())
            if failing and accept(failing):
                out.append(ni)
        return out

    def first_verified(
        self, candidates: Iterable[tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]]
    ) -> list[_Change]:
        """Verify candidates in order until ``limit`` are confirmed or ``2 * limit`` were tried."""
        out: list[_Change] = []
        for tried, (run, make) in enumerate(candidates):
            if len(out) >= self.limit or tried >= 2 * self.limit:
                break
            fit = run()
            change = make(fit) if fit else None
            if change is not None:
                out.append(change)
        return out

    # --- free-resources ----------------------------------------------------------------------------------

    def free_resources(self) -> list[_Change]:
        pod_info = self.setup.pod_info
        plans: list[tuple[tuple[float, ...], NodeInfo, list[InsufficientResource], list[PodInfo], bool]] = []
        for ni in self.failing_nodes(lambda f: "NodeResourcesFit" in f and f <= _POD_DEPENDENT):
            reasons = set(self.base.failing[ni.name]["NodeResourcesFit"].reasons)
            short = [r for r in fits_request(pod_info.requests, ni) if r.reason in reasons]
            if not short or any(r.unresolvable for r in short):
                continue
            need = {r.resource_name: r.requested + r.used - r.capacity for r in short}
            victims = _choose_victims(ni.pods, need, lambda p: p.priority < pod_info.priority)
            preemptible = victims is not None
            if victims is None:
                victims = _choose_victims(ni.pods, need, lambda p: True)
            if victims is None:
                continue
            fraction = sum(n / max(r.capacity, 1) for r, n in zip(short, need.values(), strict=True))
            plans.append(((0 if preemptible else 1, len(victims), fraction), ni, short, victims, preemptible))
        plans.sort(key=lambda p: (p[0], p[1].name))

        def candidate(
            size: tuple[float, ...], ni: NodeInfo, short: list[InsufficientResource], victims: list[PodInfo], ok: bool
        ) -> tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]:
            gone = {id(v.pod) for v in victims}

            def run() -> list[str]:
                return self.verify(pods=[p for p in self.placed if id(p) not in gone])

            def make(fit: list[str]) -> _Change | None:
                if ni.name not in fit:
                    return None
                free = {r.resource_name: _amount(r.resource_name, r.requested + r.used - r.capacity) for r in short}
                names = [v.key for v in victims]
                text = f"free {', '.join(f'{v} {k}' for k, v in free.items())} on {ni.name}"
                text += f" by evicting {', '.join(names)}" if names else ""
                details = {"node": ni.name, "free": free, "victims": names, "preemptible": ok}
                return _Change("free-resources", text, [ni.name], details, size, fit)

            return run, make

        return self.first_verified(candidate(*p) for p in plans)

    # --- tolerate-taint ----------------------------------------------------------------------------------

    def tolerate_taint(self) -> list[_Change]:
        tolerations = list(PodView(self.pod).tolerations)
        by_toleration: dict[str, tuple[dict[str, Any], Mapping[str, Any], list[str]]] = {}
        for ni in self.failing_nodes(lambda f: f <= {"TaintToleration", "NodeUnschedulable"}):
            failing = self.base.failing[ni.name]
            untolerated: list[Mapping[str, Any]] = []
            if "TaintToleration" in failing:
                taints = NodeView(ni.node or EMPTY).taints
                untolerated += [
                    t
                    for t in taints
                    if t.get("effect") in (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)
                    and not tolerations_tolerate_taint(tolerations, t)
                ]
            if "NodeUnschedulable" in failing:
                cordon = UNSCHEDULABLE_TAINT.to_dict()
                if not any(_taint_text(t) == _taint_text(cordon) for t in untolerated):
                    untolerated.append(cordon)
            if len(untolerated) != 1:
                continue  # one toleration tolerates one taint; two would be two changes
            toleration = _toleration_for(untolerated[0])
            key = json.dumps(toleration, sort_keys=True)
            by_toleration.setdefault(key, (toleration, untolerated[0], []))[2].append(ni.name)
        ordered = sorted(by_toleration.values(), key=lambda t: (-len(t[2]), _taint_text(t[1])))

        def candidate(
            toleration: dict[str, Any], taint: Mapping[str, Any], nodes: list[str]
        ) -> tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]:
            spec = spec_of(self.pod)
            pod = {**self.pod, "spec": {**spec, "tolerations": [*(spec.get("tolerations") or ()), toleration]}}

            def make(fit: list[str]) -> _Change | None:
                text = f"tolerate taint {_taint_text(taint)} (add toleration {json.dumps(toleration)})"
                details = {"taint": dict(taint), "toleration": toleration}
                return _Change("tolerate-taint", text, sorted(set(nodes) & set(fit)), details, (), fit)

            return (lambda: self.verify(pod=pod)), make

        return self.first_verified(candidate(*t) for t in ordered)

    # --- relax-constraint --------------------------------------------------------------------------------

    def relax_constraint(self) -> list[_Change]:
        failing_plugins: set[str] = set()
        for f in self.base.failing.values():
            failing_plugins |= set(f)
        spec = spec_of(self.pod)
        affinity = spec.get("affinity") or {}
        groups: list[Sequence[tuple[str, dict[str, Any], Mapping[str, Any]]]] = []
        if "NodeAffinity" in failing_plugins:
            selector = spec.get("nodeSelector") or {}
            groups.append(
                [
                    (
                        f"drop nodeSelector {key}={value}",
                        {"field": "spec.nodeSelector", "dropped": {key: value}},
                        _with_spec(self.pod, nodeSelector={k: v for k, v in selector.items() if k != key} or None),
                    )
                    for key, value in selector.items()
                ]
            )
            groups.append(_node_affinity_relaxations(self.pod))
        if "InterPodAffinity" in failing_plugins:
            for kind in ("podAffinity", "podAntiAffinity"):
                terms = section(affinity, kind).get("requiredDuringSchedulingIgnoredDuringExecution") or []
                group = []
                for i, term in enumerate(terms):
                    rest = [t for j, t in enumerate(terms) if j != i]
                    changed = {**(affinity.get(kind) or {}), "requiredDuringSchedulingIgnoredDuringExecution": rest}
                    field_path = f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                    group.append(
                        (
                            f"drop {kind} term {i} ({_pod_term_text(term)})",
                            {"field": field_path, "dropped": term},
                            _with_spec(self.pod, affinity={**affinity, kind: changed}),
                        )
                    )
                groups.append(group)
        if "PodTopologySpread" in failing_plugins:
            constraints = spec.get("topologySpreadConstraints") or []
            group = []
            for i, c in enumerate(constraints):
                if (c.get("whenUnsatisfiable") or "DoNotSchedule") != "DoNotSchedule":
                    continue  # ScheduleAnyway constraints only score
                rest = [x for j, x in enumerate(constraints) if j != i]
                group.append(
                    (
                        f"drop topologySpreadConstraint {i} (topologyKey {c.get('topologyKey')}, "
                        f"maxSkew {c.get('maxSkew')})",
                        {"field": f"spec.topologySpreadConstraints[{i}]", "dropped": c},
                        _with_spec(self.pod, topologySpreadConstraints=rest or None),
                    )
                )
            groups.append(group)
        out: list[_Change] = []
        for candidates in groups:
            out += self.first_verified(self._relax_candidate(*c) for c in candidates)
        return out

    def _relax_candidate(
        self, text: str, details: dict[str, Any], pod: Mapping[str, Any]
    ) -> tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]:
        def make(fit: list[str]) -> _Change | None:
            return _Change("relax-constraint", text, list(fit), details, (), fit)

        return (lambda: self.verify(pod=pod)), make

    # --- add-node-label ----------------------------------------------------------------------------------

    def add_node_label(self) -> list[_Change]:
        required = self.setup.pod_info.required_node_affinity
        wanted = _wanted_labels(self.pod)
        plans: list[tuple[NodeInfo, str, str]] = []
        for ni in self.failing_nodes(lambda f: f == {"NodeAffinity"}):
            if ERR_REASON_POD not in self.base.failing[ni.name]["NodeAffinity"].reasons:
                continue  # scheduler-enforced affinity (addedAffinity) is not the pod's to satisfy
            for key, value in wanted:
                if ni.labels.get(key) == value:
                    continue
                matched, _err = required.match_parts({**ni.labels, key: value}, ni.name)
                if matched:
                    plans.append((ni, key, value))
                    break

        def candidate(
            ni: NodeInfo, key: str, value: str
        ) -> tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]:
            node = ni.node or {}
            meta = meta_of(node)
            relabelled = {**node, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), key: value}}}
            nodes = [relabelled if n is node else n for n in self.nodes]

            def make(fit: list[str]) -> _Change | None:
                if ni.name not in fit:
                    return None
                old = ni.labels.get(key)
                text = f"label node {ni.name} {key}={value}" + (f" (now {key}={old})" if old is not None else "")
                details = {"node": ni.name, "label": {key: value}, "previous": old}
                return _Change("add-node-label", text, [ni.name], details, (), fit)

            return (lambda: self.verify(nodes=nodes)), make

        return self.first_verified(candidate(*p) for p in plans)

    # --- add-node ----------------------------------------------------------------------------------------

    def add_node(self) -> list[_Change]:
        pod_info = self.setup.pod_info
        names = {ni.name for ni in self.setup.snapshot.list()}
        shapes: set[str] = set()
        plans: list[NodeInfo] = []
        for ni in self.setup.snapshot.list():
            failing = set(self.base.failing.get(ni.name) or ())
            if not failing <= _POD_DEPENDENT | {"NodeUnschedulable"}:
                continue
            if any(r.unresolvable for r in fits_request(pod_info.requests, NodeInfo(ni.node))):
                continue  # the pod does not fit even an empty node of this shape
            shape = json.dumps(
                [
                    {k: v for k, v in ni.labels.items() if k != _HOSTNAME},
                    list(NodeView(ni.node or EMPTY).taints),
                    dict(NodeView(ni.node or EMPTY).allocatable),
                ],
                sort_keys=True,
            )
            if shape not in shapes:
                shapes.add(shape)
                plans.append(ni)

        def candidate(ni: NodeInfo) -> tuple[Callable[[], list[str]], Callable[[list[str]], _Change | None]]:
            new = _copy_node(ni.node or {}, _fresh_name(f"{ni.name}-copy", names))
            new_name = new["metadata"]["name"]

            def make(fit: list[str]) -> _Change | None:
                if new_name not in fit:
                    return None
                text = f"add a node like {ni.name} (empty, as {new_name})"
                return _Change("add-node", text, [ni.name], {"like": ni.name, "node": new}, (), fit)

            return (lambda: self.verify(nodes=[*self.nodes, new])), make

        return self.first_verified(candidate(ni) for ni in plans)


def _choose_victims(
    pods: Sequence[PodInfo], need: Mapping[str, int], eligible: Callable[[PodInfo], bool]
) -> list[PodInfo] | None:
    """The fewest, least important ``eligible`` pods whose removal frees ``need`` (resource -> natural units;
    ``pods`` counts slots), or None when all of them together do not free enough.

    Greedy by priority (lowest first), then by the share of the remaining shortfall a pod covers; then, most
    important first, every victim whose removal is not needed is reprieved (upstream preemption's order).
    """

    def freed(victims: Iterable[PodInfo]) -> dict[str, int]:
        out = dict.fromkeys(need, 0)
        for v in victims:
            for name in need:
                out[name] += 1 if name == "pods" else v.requests.get(name)
        return out

    def enough(victims: Iterable[PodInfo]) -> bool:
        got = freed(victims)
        return all(got[n] >= amount for n, amount in need.items())

    pool = [p for p in pods if eligible(p)]
    if not enough(pool):
        return None
    chosen: list[PodInfo] = []
    while not enough(chosen):
        got = freed(chosen)
        remaining = {n: a - got[n] for n, a in need.items() if a > got[n]}

        def cover(p: PodInfo, remaining: Mapping[str, int] = remaining) -> float:
            return sum(min(1 if n == "pods" else p.requests.get(n), r) / r for n, r in remaining.items())

        rest = [p for p in pool if p not in chosen and cover(p) > 0]
        best = min(rest, key=lambda p: (p.priority, -cover(p), p.key))
        chosen.append(best)
    for v in sorted(chosen, key=lambda p: (-p.priority, p.key)):
        trial = [c for c in chosen if c is not v]
        if enough(trial):
            chosen = trial
    return sorted(chosen, key=lambda p: (p.priority, p.key))


def _with_spec(pod: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """A copy of ``pod`` with spec fields replaced (a None value removes the field)."""
    spec = dict(spec_of(pod))
    for key, value in fields.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {**pod, "spec": spec}


def _requirement_text(req: Mapping[str, Any]) -> str:
    values = req.get("values") or []
    return f"{req.get('key')} {req.get('operator')}" + (f" {','.join(map(str, values))}" if values else "")


def _pod_term_text(term: Mapping[str, Any]) -> str:
    selector = term.get("labelSelector") or {}
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    parts += [_requirement_text(r) for r in selector.get("matchExpressions") or ()]
    return f"topologyKey {term.get('topologyKey')}" + (f", {' '.join(parts)}" if parts else "")


def _node_affinity_relaxations(pod: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Mapping[str, Any]]]:
    """One candidate per requirement of each required node-affinity term (a term's requirements are ANDed, so
    dropping one relaxes it); a term's only requirement is dropped with the term only when it is the only term
    (then the pod has no required node affinity left)."""
    affinity = section(pod, "spec", "affinity")
    node_affinity = section(affinity, "nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = list(required.get("nodeSelectorTerms") or [])
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    out: list[tuple[str, dict[str, Any], Mapping[str, Any]]] = []
    for i, term in enumerate(terms):
        reqs = [(f, j, r) for f in ("matchExpressions", "matchFields") for j, r in enumerate(term.get(f) or [])]
        for f, j, r in reqs:
            path = f"{base}.nodeSelectorTerms[{i}].{f}[{j}]"
            if len(reqs) == 1:
                if len(terms) != 1:
                    continue  # dropping one of several ORed terms only narrows the pod's choice
                na = {k: v for k, v in node_affinity.items() if k != "requiredDuringSchedulingIgnoredDuringExecution"}
                new_affinity = {**affinity, "nodeAffinity": na}
                text = f"drop required node affinity ({_requirement_text(r)})"
            else:
                new_term = copy.deepcopy(dict(term))
                del new_term[f][j]
                if not new_term[f]:
                    del new_term[f]
                new_terms = [new_term if k == i else t for k, t in enumerate(terms)]
                na = {
                    **node_affinity,
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": new_terms},
                }
                new_affinity = {**affinity, "nodeAffinity": na}
                text = f"drop requirement {_requirement_text(r)} from node affinity term {i}"
            out.append((text, {"field": path, "dropped": r}, _with_spec(pod, affinity=new_affinity)))
    return out


def _wanted_labels(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Labels that could satisfy the pod's node selector or one requirement of its required node affinity."""
    view = PodView(pod)
    out: list[tuple[str, str]] = [(str(k), str(v)) for k, v in view.node_selector.items()]
    required = (
        section(view.spec, "affinity", "nodeAffinity").get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    )
    for term in required.get("nodeSelectorTerms") or ():
        for req in term.get("matchExpressions") or ():
            key, op, values = str(req.get("key") or ""), req.get("operator"), [str(v) for v in req.get("values") or ()]
            if op == "In" and values:
                out.append((key, values[0]))
            elif op == "Exists":
                out.append((key, ""))
            elif op in ("Gt", "Lt") and len(values) == 1:
                try:
                    bound = int(values[0])
                except ValueError:
                    continue
                out.append((key, str(bound + 1 if op == "Gt" else bound - 1)))
    return out


def _fresh_name(name: str, taken: set[str]) -> str:
    candidate, i = name, 2
    while candidate in taken:
        candidate, i = f"{name}-{i}", i + 1
    return candidate


def _copy_node(node: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A new node like ``node``: same labels (hostname renamed), taints and status, not cordoned."""
    meta = meta_of(node)
    labels = dict(meta.get("labels") or {})
    if _HOSTNAME in labels:
        labels[_HOSTNAME] = name
    new_meta: dict[str, Any] = {"name": name, "labels": labels}
    if meta.get("annotations"):
        new_meta["annotations"] = dict(meta["annotations"])
    spec = {k: v for k, v in spec_of(node).items() if k not in ("unschedulable", "providerID", "podCIDR")}
    taints = [t for t in spec.get("taints") or () if t.get("key") != UNSCHEDULABLE_TAINT.key]
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": new_meta, "spec": spec}
    if node.get("status") is not None:
        out["status"] = copy.deepcopy(dict(node["status"]))
    return out


def what_if(
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    config: KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    seed: int = 0,
    limit: int = 5,
    memo: PodInfoMemo | None = None,
) -> dict[str, Any]:
    """The smallest single verified changes that would let ``pod`` fit (arguments as
    :func:`kubeplane.scheduler.explain.explain`; ``limit`` bounds the candidates verified per kind; ``memo``
    shares PodInfos with other snapshots of the same pods, one is made per question otherwise).

    Returns ``{"pod", "fits": [nodes it fits on now], "changes": [...], "verifications"}``: ``changes`` is empty
    when the pod already fits, else sorted by kind (:data:`KINDS`) and then by how much changes; each is
    ``{change, kind, nodes, details, verified: true, nodes_that_fit}``.
    """
    q = _WhatIf(pod, nodes, pods, objects, config, registry, seed, limit, memo)
    out: dict[str, Any] = {"pod": q.setup.pod_info.key, "fits": list(q.base.fit), "changes": []}
    if not q.base.fit:
        changes = [*q.free_resources(), *q.tolerate_taint(), *q.relax_constraint(), *q.add_node_label(), *q.add_node()]
        out["changes"] = [c.to_json() for c in sorted(changes, key=_Change.sort_key)]
    out["verifications"] = q.verifications
    return out


def changes_json(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What ``-o json`` prints: the list of changes; for a pod that already fits, one entry of kind ``none``
    naming the nodes it fits on (so the output says so and keeps its shape)."""
    if result.get("fits"):
        fits = list(result["fits"])
        return [
            {
                "change": f"none: the pod already fits on {len(fits)} node(s)",
                "kind": "none",
                "nodes": fits,
                "details": {},
                "verified": True,
                "nodes_that_fit": fits,
            }
        ]
    return [dict(c) for c in result.get("changes") or ()]


def render_table(result: Mapping[str, Any]) -> Any:
    """A rich Table: one row per change, smallest first, with the nodes the pod then fits on."""
    from rich.table import Table

    fits = list(result.get("fits") or ())
    changes = list(result.get("changes") or ())
    if fits:
        title = f"pod {result.get('pod')}: already fits on {len(fits)} node(s); no change needed"
    elif changes:
        title = f"pod {result.get('pod')}: fits nowhere; {len(changes)} single change(s) would let it fit"
    else:
        title = f"pod {result.get('pod')}: fits nowhere; no single change found that would let it fit"
    table = Table(title=title, caption="each change verified by re-running the filters on a modified copy")
    table.add_column("#", justify="right")
    table.add_column("KIND")
    table.add_column("CHANGE")
    table.add_column("NODES THAT FIT")
    if fits:
        table.add_row("", "none", "the pod already fits", _nodes_text(fits))
    for i, c in enumerate(changes, 1):
        table.add_row(str(i), c["kind"], c["change"], _nodes_text(c.get("nodes_that_fit") or []))
    return table


def _nodes_text(nodes: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(nodes[:most])
    return shown + (f" (+{len(nodes) - most} more)" if len(nodes) > most else "")
