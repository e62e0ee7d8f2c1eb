"""The DefaultEvictor plugin: which pods may be evicted at all (``Filter``) and which should be, given the
cluster (``PreEvictionFilter``: ``nodeFit``, ``namespaceLabelSelector``). Upstream
``pkg/framework/plugins/defaultevictor``, v0.36.

Every profile has it first in its filter and preEvictionFilter lists (upstream ``setDefaultEvictor``), with
default arguments when the policy gives none. Pod protections decide most of ``Filter``: the default set
(``PodsWithLocalStorage``, ``SystemCriticalPods``, ``FailedBarePods``, ``DaemonSetPods``) minus
``podProtections.defaultDisabled`` plus ``extraEnabled`` (``PodsWithPVC``, ``PodsWithoutPDB``,
``PodsWithResourceClaims``); or, when neither list is given, the deprecated booleans (``evictLocalStoragePods``,
``evictSystemCriticalPods``, ``evictDaemonSetPods``, ``evictFailedBarePods``, ``ignorePvcPods``,
``ignorePodsWithoutPDB``). Then ``labelSelector``, ``minReplicas`` (pods of the same owner) and ``minPodAge``.
The ``descheduler.alpha.kubernetes.io/evict`` annotation passes ``Filter`` whatever else holds; mirror, static
and terminating pods never do; ``noEvictionPolicy: Mandatory`` refuses pods annotated
``descheduler.alpha.kubernetes.io/prefer-no-eviction``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.labels import label_selector_as_selector
from kubeplane.api.meta import parse_time
from kubeplane.api.views import labels_of, meta_of, spec_of, status_of

from . import podutil
from .args import ArgsError, Fields, PriorityThreshold
from .nodefit import PodsOnNode, pod_fits_any_other_node

Obj = Mapping[str, Any]
Constraint = Callable[[Obj], str | None]

PLUGIN_NAME: Final = "DefaultEvictor"
DEFAULT_PROTECTIONS: Final = ("PodsWithLocalStorage", "SystemCriticalPods", "FailedBarePods", "DaemonSetPods")
EXTRA_PROTECTIONS: Final = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")

__all__ = ["PLUGIN_NAME", "DefaultEvictor", "DefaultEvictorArgs", "EvictorContext", "parse_args", "validate_args"]


@dataclass(frozen=True, slots=True)
class DefaultEvictorArgs:
    """``DefaultEvictorArgs`` (v0.36); seconds for ``minPodAge``."""

    node_selector: str = ""
    label_selector: Mapping[str, Any] | None = None
    namespace_label_selector: Mapping[str, Any] | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = False
    min_replicas: int = 0
    min_pod_age: float | None = None
    no_eviction_policy: str = ""
    extra_enabled: tuple[str, ...] = ()
    default_disabled: tuple[str, ...] = ()
    evict_local_storage_pods: bool = False
    evict_daemonset_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = False
    evict_failed_bare_pods: bool = False

    def protections(self) -> tuple[str, ...]:
        """Upstream ``getEffectivePodProtections``."""
        if self.extra_enabled or self.default_disabled:
            kept = [p for p in DEFAULT_PROTECTIONS if p not in self.default_disabled]
            return (*kept, *self.extra_enabled)
        out = []
        if not self.evict_local_storage_pods:
            out.append("PodsWithLocalStorage")
        if not self.evict_daemonset_pods:
            out.append("DaemonSetPods")
        if not self.evict_system_critical_pods:
            out.append("SystemCriticalPods")
        if not self.evict_failed_bare_pods:
            out.append("FailedBarePods")
        if self.ignore_pvc_pods:
            out.append("PodsWithPVC")
        if self.ignore_pods_without_pdb:
            out.append("PodsWithoutPDB")
        return tuple(out)


def parse_args(raw: Any) -> DefaultEvictorArgs:
    f = Fields(raw, "DefaultEvictorArgs")
    threshold = None
    raw_threshold = f.mapping("priorityThreshold", "api.PriorityThreshold")
    if raw_threshold is not None:
        sub = Fields(raw_threshold, "PriorityThreshold", errors=f.errors, path="priorityThreshold.")
        threshold = PriorityThreshold(sub.integer("value"), sub.string("name"))
        sub.done(raise_errors=False)
    protections = f.mapping("podProtections", "defaultevictor.PodProtections") or {}
    pp = Fields(protections, "PodProtections", errors=f.errors, path="podProtections.")
    extra, disabled = pp.strings("extraEnabled") or (), pp.strings("defaultDisabled") or ()
    pp.mapping("config", "defaultevictor.PodProtectionsConfig")
    pp.done(raise_errors=False)
    args = DefaultEvictorArgs(
        node_selector=f.string("nodeSelector"),
        label_selector=f.label_selector(),
        namespace_label_selector=f.label_selector("namespaceLabelSelector"),
        priority_threshold=threshold,
        node_fit=f.boolean("nodeFit"),
        min_replicas=f.uint("minReplicas") or 0,
        min_pod_age=f.duration("minPodAge"),
        no_eviction_policy=f.string("noEvictionPolicy"),
        extra_enabled=extra,
        default_disabled=disabled,
        evict_local_storage_pods=f.boolean("evictLocalStoragePods"),
        evict_daemonset_pods=f.boolean("evictDaemonSetPods"),
        evict_system_critical_pods=f.boolean("evictSystemCriticalPods"),
        ignore_pvc_pods=f.boolean("ignorePvcPods"),
        ignore_pods_without_pdb=f.boolean("ignorePodsWithoutPDB"),
        evict_failed_bare_pods=f.boolean("evictFailedBarePods"),
    )
    f.done()
    return args


def validate_args(args: DefaultEvictorArgs) -> list[str]:
    """Upstream ``ValidateDefaultEvictorArgs``."""
    errs = []
    t = args.priority_threshold
    if t is not None and t.value is not None and t.name:
        errs.append("priority threshold misconfigured, only one of priorityThreshold fields can be set")
    if args.no_eviction_policy and args.no_eviction_policy not in ("Preferred", "Mandatory"):
        errs.append('noEvictionPolicy accepts only ["Preferred" "Mandatory"] values')
    deprecated = (
        args.evict_local_storage_pods or args.evict_daemonset_pods or args.evict_system_critical_pods
        or args.ignore_pvc_pods or args.evict_failed_bare_pods or args.ignore_pods_without_pdb
    )  # fmt: skip
    if deprecated and (args.extra_enabled or args.default_disabled):
        errs.append(
            "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or PodProtections.DefaultDisabled"
        )
    if args.extra_enabled or args.default_disabled:
        for p in args.extra_enabled:
            if p not in EXTRA_PROTECTIONS:
                errs.append(
                    f'invalid pod protection policy in ExtraEnabled: "{p}". '
                    f"Valid options are: [{' '.join(EXTRA_PROTECTIONS)}]"
                )
        for p in args.default_disabled:
            if p not in DEFAULT_PROTECTIONS:
                errs.append(
                    f'invalid pod protection policy in DefaultDisabled: "{p}". '
                    f"Valid options are: [{' '.join(DEFAULT_PROTECTIONS)}]"
                )
        if len(set(args.default_disabled)) != len(args.default_disabled):
            errs.append("PodProtections.DefaultDisabled contains duplicate entries")
        if len(set(args.extra_enabled)) != len(args.extra_enabled):
            errs.append("PodProtections.ExtraEnabled contains duplicate entries")
    return errs


@dataclass(frozen=True, slots=True)
class EvictorContext:
    """What the DefaultEvictor reads of the cluster during a pass: ready nodes, pods by node, pods by owner
    UID, PDBs and namespaces (lists of the informers' objects), the resolved priority threshold and now."""

    nodes: Sequence[Obj]
    pods_on_node: PodsOnNode
    pods_of_owner: Callable[[str], int]
    pdbs: Sequence[Obj]
    namespaces: Mapping[str, Obj]
    threshold: int
    now: float


class DefaultEvictor:
    """One profile's DefaultEvictor. ``threshold``: the priority threshold as resolved at load
    (``priorityThreshold.value``, the named class's value, or SystemCriticalPriority)."""

    name = PLUGIN_NAME

    def __init__(self, args: DefaultEvictorArgs) -> None:
        self.args = args
        self.protections = frozenset(args.protections())
        self._selector = label_selector_as_selector(args.label_selector) if args.label_selector is not None else None
        self._ns_selector = (
            label_selector_as_selector(args.namespace_label_selector)
            if args.namespace_label_selector
            and (
                args.namespace_label_selector.get("matchLabels")
                or args.namespace_label_selector.get("matchExpressions")
            )
            else None
        )

    def failures(self, pod: Obj, ctx: EvictorContext) -> list[str]:
        """Every check the pod fails, in upstream's order (empty: evictable)."""
        errs = []
        if podutil.is_mirror_pod(pod):
            errs.append("pod is a mirror pod")
        if podutil.is_static_pod(pod):
            errs.append("pod is a static pod")
        if podutil.is_terminating(pod):
            errs.append("pod is terminating")
        p = self.protections
        if "SystemCriticalPods" in p:
            if podutil.is_critical_priority(pod):
                errs.append("pod has system critical priority and is protected against eviction")
            value = podutil.priority(pod)
            t = self.args.priority_threshold
            if t is not None and (t.value is not None or t.name) and value is not None and value >= ctx.threshold:
                errs.append("pod has higher priority than specified priority class threshold")
        owners = podutil.owner_refs(pod)
        if "FailedBarePods" not in p:
            if not owners and podutil.phase(pod) != "Failed":
                errs.append("pod does not have any ownerRefs and is not in failed phase")
        elif not owners:
            errs.append("pod does not have any ownerRefs")
        if "PodsWithLocalStorage" in p and podutil.has_local_storage(pod):
            errs.append("pod has local storage and is protected against eviction")
        if "DaemonSetPods" in p and podutil.is_daemonset_pod(pod):
            errs.append("daemonset pods are protected against eviction")
        if "PodsWithPVC" in p and podutil.has_pvc(pod):
            errs.append("pod with PVC is protected against eviction")
        if "PodsWithoutPDB" in p and not _covered_by_pdb(pod, ctx.pdbs):
            errs.append("pod does not have a PodDisruptionBudget and is protected against eviction")
        if "PodsWithResourceClaims" in p and podutil.has_resource_claims(pod):
            errs.append("pod has ResourceClaims and descheduler is configured to protect ResourceClaims pods")
        if self._selector is not None and not self._selector.empty() and not self._selector.matches(labels_of(pod)):
            errs.append("pod labels do not match the labelSelector filter in the policy parameter")
        if self.args.min_replicas > 1 and len(owners) == 1:
            count = ctx.pods_of_owner(str(owners[0].get("uid") or ""))
            if count < self.args.min_replicas:
                errs.append(f"owner has {count} replicas which is less than minReplicas of {self.args.min_replicas}")
        if self.args.min_pod_age is not None:
            started = status_of(pod).get("startTime")
            if not started or ctx.now - parse_time(str(started)).timestamp() < self.args.min_pod_age:
                errs.append(f"pod age is not older than MinPodAge: {_go_duration(self.args.min_pod_age)} seconds")
        return errs

    def filter(self, pod: Obj, ctx: EvictorContext) -> bool:
        """Upstream ``DefaultEvictor.Filter``."""
        if podutil.has_evict_annotation(pod):
            return True
        if self.args.no_eviction_policy == "Mandatory" and podutil.has_no_eviction_annotation(pod):
            return False
        return not self.failures(pod, ctx)

    def pre_eviction_filter(self, pod: Obj, ctx: EvictorContext) -> bool:
        """Upstream ``DefaultEvictor.PreEvictionFilter``: ``nodeFit`` over the ready nodes matching the
        evictor's ``nodeSelector``, then ``namespaceLabelSelector``."""
        if self.args.node_fit:
            nodes = ctx.nodes
            if self.args.node_selector:
                from kubeplane.api.labels import parse

                selector = parse(self.args.node_selector)
                nodes = [n for n in nodes if selector.matches(labels_of(n))]
            if not pod_fits_any_other_node(pod, nodes, pods_on_node=ctx.pods_on_node):
                return False
        if self._ns_selector is None:
            return True
        namespace = ctx.namespaces.get(str(meta_of(pod).get("namespace") or ""))
        return namespace is not None and self._ns_selector.matches(labels_of(namespace))


def _covered_by_pdb(pod: Obj, pdbs: Sequence[Obj]) -> bool:
    namespace = meta_of(pod).get("namespace")
    for pdb in pdbs:
        if meta_of(pdb).get("namespace") != namespace:
            continue
        selector = spec_of(pdb).get("selector")
        if selector is None:
            continue
        compiled = label_selector_as_selector(selector)
        if not compiled.empty() and compiled.matches(labels_of(pod)):
            return True
    return False


def _go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for whole and fractional seconds (``1m0s``, ``1h0m0s``, ``1.5s``)."""
    from kubeplane.api.durations import format_duration

    return format_duration(round(seconds * 1e9))


def check_args(raw: Any) -> DefaultEvictorArgs:
    """Decode and validate; raises :class:`ArgsError`."""
    args = parse_args(raw)
    errs = validate_args(args)
    if errs:
        raise ArgsError(errs)
    return args
