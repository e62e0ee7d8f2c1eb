"""kube-scheduler's feature gates: the v1.37 gates that change what kubeplane's scheduler does, and ``--feature-gates``.

A :class:`FeatureGates` is an immutable map of every known gate to its value. :data:`DEFAULT_GATES` holds v1.37's
defaults; :func:`parse_feature_gates` reads the flag's ``key=value,key2=value2`` text on top of them, as
component-base's ``featuregate.featureGate.Set`` / ``SetFromMap`` / ``unsafeSetFromMap`` do, with their messages:

* a pair without ``=``: ``missing bool value for X``;
* a value ``strconv.ParseBool`` refuses: ``invalid value of X=Y, err: strconv.ParseBool: parsing "Y": invalid
  syntax`` (Go's accepted spellings: 1 t T TRUE true True, 0 f F FALSE false False; surrounding blanks trimmed);
* an unknown gate: ``unrecognized feature gate: X`` (reported alone: upstream returns at the first unknown key);
* a locked gate set to the other value: ``cannot set feature gate X to false, feature is locked to true``;
* after the values are set, every enabled gate whose prerequisites are not all enabled:
  ``GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]``.

Several problems are reported together as upstream's ``utilerrors.NewAggregate`` prints them (one: the message;
more: ``[a, b]``); the order is the flag's, where Go's is its map order. The special ``AllAlpha`` / ``AllBeta``
gates set every alpha (beta) gate the flag does not name itself.

Sources (the newest versions the search tools hold): the v1.37 scheduler-specific gate table
(``defaultVersionedKubernetesFeatureGates`` beside ``SetupCurrentKubernetesSpecificFeatureGates`` and its
``TestSchedulerFeatureGateDependencies`` at emulation version 1.37) for GenericWorkload (beta 1.37, off),
DynamicResourceAllocation (GA, locked on since 1.35), NodeDeclaredFeatures (GA, locked on in 1.37),
TopologyAwareWorkloadScheduling (alpha 1.36), InPlacePodVerticalScalingSchedulerPreemption (alpha 1.37) and
CompositePodGroup (alpha 1.37, needs GenericWorkload and TopologyAwareWorkloadScheduling);
``pkg/features/kube_features.go`` (v1.35, the newest stored) for GangScheduling and its prerequisite
``GangScheduling: {GenericWorkload}``; GangScheduling's v1.37 stage (beta, off by default) is the issue's.

kubeplane knows only these gates: a real Kubernetes gate kubeplane does not model is "unrecognized" here,
where kube-scheduler would accept it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kubeplane.api.validation.field import aggregate_text

__all__ = [
    "ALL_ALPHA",
    "ALL_BETA",
    "COMPOSITE_POD_GROUP",
    "DEFAULT_GATES",
    "DRA_EXTENDED_RESOURCE",
    "DYNAMIC_RESOURCE_ALLOCATION",
    "GANG_SCHEDULING",
    "GENERIC_WORKLOAD",
    "IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION",
    "KNOWN_GATES",
    "NODE_DECLARED_FEATURES",
    "NOMINATED_NODE_NAME_FOR_EXPECTATION",
    "OPPORTUNISTIC_BATCHING",
    "SCHEDULER_POP_FROM_BACKOFF_Q",
    "STORAGE_CAPACITY_SCORING",
    "TOPOLOGY_AWARE_WORKLOAD_SCHEDULING",
    "FeatureGateError",
    "FeatureGates",
    "FeatureSpec",
    "parse_feature_gates",
]

ALL_ALPHA: Final = "AllAlpha"
ALL_BETA: Final = "AllBeta"
COMPOSITE_POD_GROUP: Final = "CompositePodGroup"
DYNAMIC_RESOURCE_ALLOCATION: Final = "DynamicResourceAllocation"
DRA_EXTENDED_RESOURCE: Final = "DRAExtendedResource"
"""Extended resources backed by DRA (KEP-5004): GA and locked on in v1.37."""
GANG_SCHEDULING: Final = "GangScheduling"
GENERIC_WORKLOAD: Final = "GenericWorkload"
IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: Final = "InPlacePodVerticalScalingSchedulerPreemption"
NODE_DECLARED_FEATURES: Final = "NodeDeclaredFeatures"
NOMINATED_NODE_NAME_FOR_EXPECTATION: Final = "NominatedNodeNameForExpectation"
"""The binding cycle sets ``status.nominatedNodeName`` to the chosen node before PreBind has work to do or Permit
makes the pod wait (KEP-5278): alpha in v1.34, beta and on since v1.35 (kubernetes/kubernetes#135103)."""
OPPORTUNISTIC_BATCHING: Final = "OpportunisticBatching"
"""Consecutive pods with the same scheduling signature reuse the previous cycle's scored nodes (KEP-5598): beta and
on since v1.35, unchanged in the v1.37 scheduler gate table (``defaultVersionedKubernetesFeatureGates``)."""
SCHEDULER_POP_FROM_BACKOFF_Q: Final = "SchedulerPopFromBackoffQ"
"""An empty activeQ pops the backoffQ head; backoff expiry aligned to one-second windows (KEP-5142): beta and on
since v1.33 (``scheduler/backend/backoff_queue.py``)."""
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: Final = "TopologyAwareWorkloadScheduling"
STORAGE_CAPACITY_SCORING: Final = "StorageCapacityScoring"
"""VolumeBinding scores nodes by the free capacity of CSIStorageCapacity objects (KEP-4049; beta, on in v1.37)."""


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """A gate's v1.37 state: default value, stage (``ALPHA``, ``BETA``, ``GA``), lock and prerequisites."""

    default: bool
    pre_release: str
    lock_to_default: bool = False
    depends_on: tuple[str, ...] = ()


KNOWN_GATES: Final[Mapping[str, FeatureSpec]] = MappingProxyType(
    {
        COMPOSITE_POD_GROUP: FeatureSpec(
            False, "ALPHA", depends_on=(GENERIC_WORKLOAD, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
        ),
        DRA_EXTENDED_RESOURCE: FeatureSpec(True, "GA", lock_to_default=True),
        DYNAMIC_RESOURCE_ALLOCATION: FeatureSpec(True, "GA", lock_to_default=True),
        GANG_SCHEDULING: FeatureSpec(False, "BETA", depends_on=(GENERIC_WORKLOAD,)),
        GENERIC_WORKLOAD: FeatureSpec(False, "BETA"),
        IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: FeatureSpec(False, "ALPHA"),
        NODE_DECLARED_FEATURES: FeatureSpec(True, "GA", lock_to_default=True),
        NOMINATED_NODE_NAME_FOR_EXPECTATION: FeatureSpec(True, "BETA"),
        OPPORTUNISTIC_BATCHING: FeatureSpec(True, "BETA"),
        SCHEDULER_POP_FROM_BACKOFF_Q: FeatureSpec(True, "BETA"),
        STORAGE_CAPACITY_SCORING: FeatureSpec(True, "BETA"),
        TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: FeatureSpec(False, "ALPHA"),
    }
)
"""The v1.37 gates kubeplane's scheduler knows (the module docstring names the sources)."""

_SPECIAL: Final = {ALL_ALPHA: "ALPHA", ALL_BETA: "BETA"}
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value kube-scheduler refuses; ``str()`` is upstream's message, one line."""


@dataclass(frozen=True, slots=True)
class FeatureGates(Mapping[str, bool]):
    """Every known gate -> its value (a read-only mapping); build one with :func:`parse_feature_gates`.

    ``explicit`` holds what the flag set (after ``AllAlpha``/``AllBeta`` expansion), so the flag can be shown
    back (:meth:`flag`) and passed on to a child process unchanged in meaning.
    """

    state: Mapping[str, bool]
    explicit: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))

    def __getitem__(self, name: str) -> bool:
        return self.state[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.state)

    def __len__(self) -> int:
        return len(self.state)

    def enabled(self, name: str) -> bool:
        """The gate's value; an unknown name is a programming error (upstream panics)."""
        if name not in self.state:
            raise KeyError(f"feature {name!r} is not registered in FeatureGate")
        return self.state[name]

    def flag(self) -> str:
        """The explicitly set gates as a ``--feature-gates`` value, sorted (upstream's ``String`` form)."""
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.explicit.items()))


DEFAULT_GATES: Final = FeatureGates(MappingProxyType({k: s.default for k, s in KNOWN_GATES.items()}))
"""v1.37's defaults: what kube-scheduler runs with no ``--feature-gates``."""


def _parse_bool(text: str) -> bool | None:
    return True if text in _TRUE else False if text in _FALSE else None


def _pairs(value: str) -> dict[str, bool]:
    """component-base ``featureGate.Set``: split ``k=v`` pairs (empty pieces skipped), ``strconv.ParseBool``."""
    out: dict[str, bool] = {}
    for piece in value.split(","):
        if not piece:
            continue
        key, sep, raw = piece.partition("=")
        key = key.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {key}")
        raw = raw.strip()
        parsed = _parse_bool(raw)
        if parsed is None:
            raise FeatureGateError(
                f'invalid value of {key}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax'
            )
        out[key] = parsed
    return out


def parse_feature_gates(value: str | Mapping[str, bool] | None) -> FeatureGates:
    """The gates of a ``--feature-gates`` value (text, or an already split name -> bool map) over v1.37's defaults.

    Raises :class:`FeatureGateError` with upstream's message (module docstring). ``None`` or ``""`` give
    :data:`DEFAULT_GATES`.
    """
    if not value:
        return DEFAULT_GATES
    requested = _pairs(value) if isinstance(value, str) else dict(value)
    enabled: dict[str, bool] = {}
    errors: list[str] = []
    for key, v in requested.items():
        if key not in KNOWN_GATES and key not in _SPECIAL:
            raise FeatureGateError(f"unrecognized feature gate: {key}")  # upstream returns at the first one
        spec = KNOWN_GATES.get(key)
        if spec is not None and spec.lock_to_default and spec.default != v:
            errors.append(
                f"cannot set feature gate {key} to {str(v).lower()}, feature is locked to {str(spec.default).lower()}"
            )
            continue
        if key in _SPECIAL:
            stage = _SPECIAL[key]
            for name, s in KNOWN_GATES.items():
                if s.pre_release == stage and name not in requested:
                    enabled.setdefault(name, v)
            continue
        enabled[key] = v
    if errors:
        raise FeatureGateError(aggregate_text(errors))
    values = {k: enabled.get(k, s.default) for k, s in KNOWN_GATES.items()}
    for name, spec in KNOWN_GATES.items():
        if not values[name]:
            continue
        missing = [d for d in spec.depends_on if not values[d]]
        if missing:
            errors.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(missing)}]")
    if errors:
        raise FeatureGateError(aggregate_text(errors))
    return FeatureGates(MappingProxyType(values), MappingProxyType(dict(sorted(enabled.items()))))
