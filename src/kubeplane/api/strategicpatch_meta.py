"""Patch metadata for strategic merge patch: which lists merge, by which key, and which maps are atomic.

Upstream reads this from the ``patchStrategy`` / ``patchMergeKey`` struct tags of ``k8s.io/api`` through
reflection (``strategicpatch/meta.go``, ``PatchMetaFromStruct``). kubeplane keeps plain JSON dicts, so the tags
are transcribed here as a table: type name -> JSON field -> :class:`Field` (strategy, merge key, type of the
field's value or, for a list, of its elements). Only fields that carry a tag, or lead to a type that has one,
are listed.

Invariant: a field that is not in the table behaves exactly as an untagged field upstream -- objects merge
key by key (as a JSON merge patch would) and lists are replaced whole. That is also how unknown fields and
kinds without an entry are treated, where upstream's struct lookup would fail with "unable to find api field".

Tags that surprise (checked against ``core/v1/types.go``): ``NodeSpec.taints`` and ``PodSpec.tolerations``
have no tag, so they are replaced atomically; ``NodeStatus.addresses`` merges by ``type``; ``PodSpec.volumes``
and ``resourceClaims`` are ``merge,retainKeys``; ``DeploymentSpec.strategy`` is ``retainKeys``;
``PodDisruptionBudgetSpec.selector`` is ``replace``; ``Container.envFrom``/``resizePolicy`` are atomic.

The second half of the module holds what the apply and diff halves of :mod:`kubeplane.api.strategicpatch` share:
Go's value model (upstream compares decoded JSON with ``==``, so int64 ``1`` differs from float64 ``1.0``, and
sorts by ``fmt``'s ``%v``) and the list primitives -- partitioning, ``normalizeElementOrder``,
``mergeSortedSlice``, ``deduplicateScalars`` -- whose exact behaviour fixes element order in patched lists.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final, NamedTuple

import orjson

from kubeplane.api.patch import PatchError

__all__ = ["BUILTIN_SCHEMA", "Field", "Schema"]

DIRECTIVE: Final = "$patch"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_PREFIX: Final = "$deleteFromPrimitiveList"
ORDER_PREFIX: Final = "$setElementOrder"


class Field(NamedTuple):
    """The patch metadata of one JSON field.

    ``strategy`` is the tag verbatim: ``""``, ``"merge"``, ``"replace"``, ``"retainKeys"`` or
    ``"merge,retainKeys"``; ``merge_key`` is ``patchMergeKey`` (``""`` for lists of primitives); ``type`` names
    the table entry of the field's value, or of a list's elements, ``None`` when nothing below is tagged."""

    strategy: str = ""
    merge_key: str = ""
    type: str | None = None


UNKNOWN: Final = Field()


@dataclass(frozen=True, slots=True)
class Schema:
    """A type table plus the (API group, kind) -> root type map. Tests build their own (upstream's
    ``MergeItem``); the server uses :data:`BUILTIN_SCHEMA`."""

    types: Mapping[str, Mapping[str, Field]]
    kinds: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def root(self, kind: tuple[str, str]) -> str | None:
        """The root type of ``kind``; ``None`` (everything untagged) for a kind the table does not know."""
        return self.kinds.get(kind)

    def field(self, type_name: str | None, key: str) -> Field:
        if type_name is None:
            return UNKNOWN
        return self.types.get(type_name, {}).get(key, UNKNOWN)


def _merge(key: str = "", type_name: str | None = None) -> Field:
    return Field("merge", key, type_name)


def _of(type_name: str) -> Field:
    return Field("", "", type_name)


_META: Final = {"metadata": _of("ObjectMeta")}
_CONDITIONS: Final = {"conditions": _merge("type")}
_WORKLOAD_SPEC: Final = {"template": _of("PodTemplateSpec")}


def _workload(spec: str, status: str) -> dict[str, Field]:
    return {"metadata": _of("ObjectMeta"), "spec": _of(spec), "status": _of(status)}


_TYPES: Final[dict[str, dict[str, Field]]] = {
    "Object": _META,
    # meta/v1
    "ObjectMeta": {"finalizers": _merge(), "ownerReferences": _merge("uid")},
    "Conditions": _CONDITIONS,
    # core/v1
    "Pod": _workload("PodSpec", "PodStatus"),
    "PodTemplate": {"metadata": _of("ObjectMeta"), "template": _of("PodTemplateSpec")},
    "PodTemplateSpec": {"metadata": _of("ObjectMeta"), "spec": _of("PodSpec")},
    "PodSpec": {
        "volumes": Field("merge,retainKeys", "name"),
        "initContainers": _merge("name", "Container"),
        "containers": _merge("name", "Container"),
        "ephemeralContainers": _merge("name", "Container"),
        "imagePullSecrets": _merge("name"),
        "hostAliases": _merge("ip"),
        "topologySpreadConstraints": _merge("topologyKey"),
        "resourceClaims": Field("merge,retainKeys", "name"),
        "schedulingGates": _merge("name"),
    },
    "Container": {
        "ports": _merge("containerPort"),
        "env": _merge("name"),
        "volumeMounts": _merge("mountPath"),
        "volumeDevices": _merge("devicePath"),
    },
    "PodStatus": {
        "conditions": _merge("type"),
        "podIPs": _merge("ip"),
        "hostIPs": _merge("ip"),
        "resourceClaimStatuses": Field("merge,retainKeys", "name"),
    },
    "Node": _workload("NodeSpec", "NodeStatus"),
    "NodeSpec": {"podCIDRs": _merge()},
    "NodeStatus": {"conditions": _merge("type"), "addresses": _merge("type")},
    "Service": _workload("ServiceSpec", "Conditions"),
    "ServiceSpec": {"ports": _merge("port")},
    "ServiceAccount": {"metadata": _of("ObjectMeta"), "secrets": _merge("name")},
    "StatusConditions": {"metadata": _of("ObjectMeta"), "status": _of("Conditions")},
    "ReplicationController": _workload("WorkloadSpec", "Conditions"),
    "WorkloadSpec": _WORKLOAD_SPEC,
    # apps/v1: Deployment, StatefulSet, DaemonSet, ReplicaSet
    "Deployment": _workload("DeploymentSpec", "Conditions"),
    "DeploymentSpec": {"template": _of("PodTemplateSpec"), "strategy": Field("retainKeys")},
    "Workload": _workload("WorkloadSpec", "Conditions"),
    # batch/v1
    "CronJob": {"metadata": _of("ObjectMeta"), "spec": _of("CronJobSpec")},
    "CronJobSpec": {"jobTemplate": _of("JobTemplateSpec")},
    "JobTemplateSpec": {"metadata": _of("ObjectMeta"), "spec": _of("WorkloadSpec")},
    # policy/v1
    "PodDisruptionBudget": _workload("PodDisruptionBudgetSpec", "Conditions"),
    "PodDisruptionBudgetSpec": {"selector": Field("replace")},
    # storage/v1
    "CSINode": {"metadata": _of("ObjectMeta"), "spec": _of("CSINodeSpec")},
    "CSINodeSpec": {"drivers": _merge("name")},
}

_METADATA_ONLY: Final = (
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Endpoints"),
    ("", "Event"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("", "PersistentVolume"),
    ("", "Binding"),
    ("apps", "ControllerRevision"),
    ("policy", "Eviction"),
    ("coordination.k8s.io", "Lease"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)

_KINDS: Final[dict[tuple[str, str], str]] = {
    ("", "Pod"): "Pod",
    ("", "PodTemplate"): "PodTemplate",
    ("", "Node"): "Node",
    ("", "Service"): "Service",
    ("", "ServiceAccount"): "ServiceAccount",
    ("", "Namespace"): "StatusConditions",
    ("", "PersistentVolumeClaim"): "StatusConditions",
    ("", "ReplicationController"): "ReplicationController",
    ("apps", "Deployment"): "Deployment",
    ("apps", "StatefulSet"): "Workload",
    ("apps", "DaemonSet"): "Workload",
    ("apps", "ReplicaSet"): "Workload",
    ("batch", "Job"): "Workload",
    ("batch", "CronJob"): "CronJob",
    ("policy", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("storage.k8s.io", "CSINode"): "CSINode",
    **dict.fromkeys(_METADATA_ONLY, "Object"),
}

BUILTIN_SCHEMA: Final = Schema(_TYPES, _KINDS)
"""Patch metadata of the built-in kinds kubeplane serves (k8s.io/api core, apps, batch, policy, coordination,
scheduling, storage, rbac v1)."""


# --- Go value model: types, equality and fmt's %v -----------------------------------------------------------
# Upstream compares decoded JSON with Go's ``==`` (int64 1 != float64 1.0, true != 1) and sorts by ``%v``.


_GO_TYPES: Final[dict[type, str]] = {
    str: "string",
    bool: "bool",
    int: "int64",
    float: "float64",
    type(None): "<nil>",
    list: "[]interface {}",
    dict: "map[string]interface {}",
}
""":func:`go_type` of the exact types a decoded JSON document holds (one lookup; other types take the checks)."""


def go_type(value: Any) -> str:
    found = _GO_TYPES.get(type(value))
    if found is not None:
        return found
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def ident(value: Any) -> Any:
    """A hashable identity with Go's ``==`` semantics for scalars (containers compare by content)."""
    if type(value) is str:  # merge keys are strings: the common case first
        return ("string", value)
    if isinstance(value, dict | list):
        return ("json", go_str(value))
    return (go_type(value), value)


_SCALARS = (str, int, float, bool)


def same(a: Any, b: Any) -> bool:
    kind = type(a)
    if kind is type(b) and kind in _SCALARS:  # the common case (merge keys are strings): no identity to build
        return bool(a == b)
    return bool(ident(a) == ident(b))


def deep_equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` over decoded JSON: types must match exactly."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(deep_equal, a, b))
    return same(a, b)


def go_float(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    parts = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    point = len(digits) + int(parts.exponent)  # the decimal point sits after this many digits
    exponent = point - 1
    if exponent < -4 or exponent >= 6:  # strconv 'g' with shortest precision
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_str(value: Any) -> str:
    """Go's ``fmt.Sprintf("%v", value)`` for decoded JSON (maps print with sorted keys)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_str(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(map(go_str, value)) + "]"
    return str(value)


def copy(value: Any) -> Any:
    """A deep copy of a decoded JSON document (the patch functions mutate their working copies).

    An orjson round trip when the document is plain JSON (C speed: a pod's status patch copies the whole pod, and
    the recursion was a tenth of a simulation's time), else the recursion (values orjson cannot encode, such as
    ``Decimal`` or integers beyond 64 bits).
    """
    if isinstance(value, dict | list):
        try:
            return orjson.loads(orjson.dumps(value))
        except (TypeError, orjson.JSONEncodeError):
            return _copy(value)
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


# --- shared list helpers -------------------------------------------------------------------------------------


def no_merge_key(item: Any, key: str) -> PatchError:
    return PatchError(f"map: {go_str(item)} does not contain declared merge key: {key}")


def bad_arg_type(expected: str, actual: Any) -> PatchError:
    return PatchError(f"expected a {expected}, but received a {go_type(actual)}")


def element_kind(*lists: Sequence[Any]) -> str:
    """``sliceElementType``: every element of every list must have one Go type, and not be a list."""
    kind: str | None = None
    for items in lists:
        for item in items:
            current = go_type(item)
            if kind is None:
                if isinstance(item, list):
                    raise PatchError("lists of lists are not supported")
                kind = current
            elif kind != current:
                rendered = "[" + " ".join(map(go_str, lists)) + "]"
                raise PatchError(f"list element types are not identical: {rendered}")
    if kind is None:
        raise PatchError("no elements in any of the given slices")
    return "map" if kind.startswith("map") else kind


def _order_key(item: Any, merge_key: str, kind: str) -> Any:
    """What element order compares: the merge key's identity for map elements, the element's for primitives."""
    if kind == "map":
        return ident(item.get(merge_key)) if isinstance(item, dict) else ident(None)
    return ident(item)


def positions(order: Sequence[Any], merge_key: str, kind: str) -> dict[Any, int]:
    """Each element's first position in ``order``, keyed by :func:`_order_key`: built once per sort or merge
    (looking every element up in ``order`` was quadratic in identity computations)."""
    out: dict[Any, int] = {}
    for i, item in enumerate(order):
        out.setdefault(_order_key(item, merge_key, kind), i)
    return out


def split_deletes(items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    keep: list[Any] = []
    delete: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise bad_arg_type("map[string]interface {}", item)
        (delete if item.get(DIRECTIVE) == "delete" else keep).append(item)
    return keep, delete


def normalize_slice_order(items: list[Any], order: Sequence[Any], merge_key: str, kind: str) -> list[Any]:
    """Stable-sort ``items`` by their position in ``order``; ``$patch: delete`` elements go last."""
    deletes: list[Any] = []
    if kind == "map":
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
        items, deletes = split_deletes(items)
    where = positions(order, merge_key, kind)
    found = [where.get(_order_key(item, merge_key, kind), -1) for item in items]
    ranked = sorted(range(len(items)), key=lambda i: found[i] if found[i] >= 0 else len(order))
    return [items[i] for i in ranked] + deletes


def merge_sorted(left: list[Any], right: list[Any], order: Sequence[Any], merge_key: str, kind: str) -> list[Any]:
    """``mergeSortedSlice``: interleave two sorted lists, taking ``left`` first only when ``order`` places it
    before the ``right`` element (both must be found there)."""
    result: list[Any] = []
    where = positions(order, merge_key, kind)
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            take_left = False
        elif j >= len(right):
            take_left = True
        else:
            li = where.get(_order_key(left[i], merge_key, kind), -1)
            ri = where.get(_order_key(right[j], merge_key, kind), -1)
            take_left = 0 <= li < ri and ri >= 0
        if take_left:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    return result


def normalize_element_order(
    patch: list[Any], server_only: list[Any], *, patch_order: Sequence[Any], server_order: Sequence[Any],
    merge_key: str, kind: str,
) -> list[Any]:  # fmt: skip
    patch = normalize_slice_order(patch, patch_order, merge_key, kind)
    server_only = normalize_slice_order(server_only, server_order, merge_key, kind)
    return merge_sorted(server_only, patch, server_order, merge_key, kind)


def partition(items: list[Any], by: Sequence[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Split ``items`` into those present in ``by`` (by merge key, or by value for primitives) and the rest."""
    inside: list[Any] = []
    outside: list[Any] = []
    if not merge_key:
        present = {ident(v) for v in by}
        for item in items:
            (inside if ident(item) in present else outside).append(item)
        return inside, outside
    index = KeyIndex(by, merge_key)
    for item in items:
        if not isinstance(item, dict):
            raise bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        (inside if index.find(item[merge_key]) >= 0 else outside).append(item)
    return inside, outside


def find_by_key(items: Sequence[Any], merge_key: str, value: Any) -> int:
    """``findMapInSliceBasedOnKeyValue``: the first map whose merge key is ``value``; a non-map met first fails.
    Linear: a caller looking up many values uses :class:`KeyIndex` (one lookup each was quadratic)."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {i} is not a map")
        if merge_key in item and same(item[merge_key], value):
            return i
    return -1


class KeyIndex:
    """:func:`find_by_key` over a list in O(1) a lookup, kept exact while the list's maps change.

    ``_at`` maps each merge-key identity (:func:`ident`, Go's ``==``) to the ascending positions of the maps that
    carry it, before ``_stop``, the first non-map (which :func:`find_by_key` fails on when it reaches it).
    The owner reports every change to an indexed map's key (:meth:`rekey`) and every append (:meth:`add`)."""

    __slots__ = ("_at", "_merge_key", "_size", "_stop")

    def __init__(self, items: Sequence[Any], merge_key: str) -> None:
        self._merge_key = merge_key
        self._at: dict[Any, list[int]] = {}
        self._size = self._stop = len(items)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                self._stop = i
                break
            if merge_key in item:
                self._at.setdefault(ident(item[merge_key]), []).append(i)

    def find(self, value: Any) -> int:
        found = self._at.get(ident(value))
        if found:
            return found[0]
        if self._stop < self._size:
            raise PatchError(f"value for key {self._stop} is not a map")
        return -1

    def add(self, item: Any) -> None:
        """``item`` was appended to the indexed list."""
        at = self._size
        self._size += 1
        if self._stop < at:  # a non-map comes first: lookups fail there before reaching ``item``
            return
        if isinstance(item, dict):
            self._stop = self._size
            if self._merge_key in item:
                self._at.setdefault(ident(item[self._merge_key]), []).append(at)

    def rekey(self, at: int, value: Any, after: Any) -> None:
        """The map at ``at``, found under the merge-key ``value``, is now ``after``: re-file it if its key changed
        (a merge can drop the key: a ``null`` merge key in the patch deletes it)."""
        key = self._merge_key
        old = ident(value)
        new = ident(after[key]) if isinstance(after, dict) and key in after else None
        if new == old:
            return
        positions = self._at[old]
        positions.remove(at)
        if not positions:
            del self._at[old]
        if new is not None:
            insort(self._at.setdefault(new, []), at)


def dedup(items: list[Any]) -> list[Any]:
    """``deduplicateScalars``, including its order: scanning from the left, each later duplicate of ``s[i]`` is
    overwritten by the last element and the list shortened (the moved element is compared again).

    Go's loop compares every pair (quadratic: a 3 MiB list of distinct values would hold the server for minutes).
    This replays the same moves from an index of each value's positions, so it costs O(n) plus the moves."""
    s = list(items)
    where: dict[Any, list[int]] = {}
    for i, item in enumerate(s):
        where.setdefault(ident(item), []).append(i)
    if len(where) == len(s):
        return s  # no duplicates: Go's loop moves nothing
    i = 0
    while i < len(s) - 1:
        # invariant: every other occurrence of s[i] lies after i (earlier values have no duplicates left)
        positions = where[ident(s[i])]
        while len(positions) > 1:
            j, last = positions[1], len(s) - 1
            if positions[-1] == last:  # the last element is a duplicate too: it goes, s[j] is compared again
                positions.pop()
                s.pop()
                continue
            moved = s.pop()
            s[j] = moved
            del positions[1]
            others = where[ident(moved)]
            others.pop()  # ``last`` was the moved value's greatest position
            insort(others, j)
        i += 1
    return s


def sort_scalars(items: Sequence[Any]) -> list[Any]:
    return sorted(items, key=go_str)


def split_strategy(found: Field) -> tuple[bool, str]:
    """``extractRetainKeysPatchStrategy``: (has retainKeys, the other strategy)."""
    return _split_strategy(found.strategy)


@lru_cache(maxsize=256)
def _split_strategy(strategy: str) -> tuple[bool, str]:
    """:func:`split_strategy` of a tag (memoised: a pure function of a string; a failure raises, is not kept)."""
    parts = [part for part in strategy.split(",") if part]
    retain = "retainKeys" in parts
    others = [part for part in parts if part != "retainKeys"]
    if len(parts) > 2 or len(others) > 1:
        raise PatchError(f"unexpected patch strategy: {parts}")
    return retain, others[0] if others else ""


def key_equal(left: Any, right: Any, merge_key: str) -> bool:
    """``mergeKeyValueEqual``: primitives compare by value, objects by their merge key (which must exist)."""
    if not merge_key:
        return same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
    return same(left[merge_key], right[merge_key])


def discard_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: discard_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [discard_nulls(item) for item in value]
    return value


def remove_directives(value: Any) -> tuple[bool, Any]:
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return False, None
        kept = {key: remove_directives(item) for key, item in value.items()}
        return True, {key: item for key, (keep, item) in kept.items() if keep}
    if isinstance(value, list):
        return True, [item for keep, item in map(remove_directives, value) if keep]
    return True, value


def validate_order(items: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list's elements (deletions aside) must appear in ``$setElementOrder`` in the same order."""
    if not order or not items:
        return
    kept = split_deletes(items)[0] if merge_key else items
    i = j = 0
    while i < len(kept) and j < len(order):
        if isinstance(kept[i], dict) and DIRECTIVE in kept[i]:
            i += 1
            continue
        if key_equal(kept[i], order[j], merge_key):
            i += 1
        j += 1
    if i < len(kept) and j >= len(order):
        raise PatchError(
            f"the order in patch list:\n{go_str(items)}\n doesn't match {ORDER_PREFIX} list:\n{go_str(order)}"
        )


def diff_scalars(
    original: list[Any], modified: list[Any], *, additions_too: bool, deletions_too: bool
) -> tuple[list[Any], list[Any]]:
    """``diffListsOfScalars``: walk both lists sorted by ``%v``; returns (additions, de-duplicated deletions)."""
    old, new = sort_scalars(original), sort_scalars(modified)
    additions: list[Any] = []
    deletions: list[Any] = []
    i = j = 0
    while i < len(old) or j < len(new):
        a = go_str(old[i]) if i < len(old) else None
        b = go_str(new[j]) if j < len(new) else None
        if a is not None and b is not None and a == b:
            i, j = i + 1, j + 1
        elif a is None or (b is not None and a > b):
            if additions_too:
                additions.append(new[j])
            j += 1
        else:
            if deletions_too:
                deletions.append(old[i])
            i += 1
    return additions, dedup(deletions)
