"""Args of the in-tree plugins: strict decoding, v1 defaults and validation (``validation_pluginargs.go``).

Each in-tree plugin with an args type (:data:`ARGS_PLUGINS`) gets its ``pluginConfig[].args`` decoded strictly
(unknown members are errors, as upstream's strict decoder), defaulted as ``pkg/scheduler/apis/config/v1``'s
``SetDefaults_<Plugin>Args`` with v1.37's default feature gates, and validated with upstream's rules and
messages. The result is a v1 camelCase dict, the form the plugins read:

* list-valued fields are always present (``[]`` when unset), so a plugin never has to tell absent from empty;
* optional objects (``addedAffinity``, ``requestedToCapacityRatio``, a constraint's ``labelSelector``) are
  present only when given;
* durations are Go duration strings as upstream encodes them (``"10s"``, ``"10m0s"``);
* ``apiVersion``/``kind`` inside args are accepted (they must name ``kubescheduler.config.k8s.io/v1`` and
  ``<Plugin>Args``) and dropped.

Gate-dependent behaviour is fixed at v1.37's defaults: StorageCapacityScoring (beta, on) gives VolumeBinding
its default ``shape`` and allows it; DRASchedulerFilterTimeout (beta, on) and DRADeviceBindingConditions
(beta, on) with DRAResourceClaimDeviceStatus (GA) give DynamicResources both timeouts.

Deviation: upstream's config validation looks NodeResourcesFit up under a misspelt key, so its args are only
checked when the plugin is built; here they are checked with the configuration, like every other plugin's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubeplane.api import nodeaffinity
from kubeplane.api.durations import format_duration, parse_duration
from kubeplane.api.labels import SelectorError
from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import OMIT_VALUE, Path
from kubeplane.api.validation.names import is_qualified_name
from kubeplane.scheduler.config.types import API_VERSION, Fields

__all__ = ["ARGS_PLUGINS", "decode_args", "default_args", "validate_args"]

_DEFAULT_RESOURCES: Final = (("cpu", 1), ("memory", 1))
_STRATEGIES: Final = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
_MAX_CUSTOM_PRIORITY_SCORE: Final = 10
_FILTER_TIMEOUT_NS: Final = 10 * 1_000_000_000
_BINDING_TIMEOUT_NS: Final = 600 * 1_000_000_000


def _resources_default() -> list[dict[str, Any]]:
    return [{"name": n, "weight": w} for n, w in _DEFAULT_RESOURCES]


# --- decoding + defaulting ----------------------------------------------------------------------------------


def _resources(items: list[Fields] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in items or ():
        weight = r.integer("weight", bits=64) or 0
        out.append({"name": r.string("name") or "", "weight": weight or 1})  # 0 or unset: weight 1
        r.finish()
    return out


def _shape(items: list[Fields] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in items or ():
        out.append({"utilization": p.integer("utilization") or 0, "score": p.integer("score") or 0})
        p.finish()
    return out


def _default_preemption(f: Fields) -> dict[str, Any]:
    pct = f.integer("minCandidateNodesPercentage")
    absolute = f.integer("minCandidateNodesAbsolute")
    return {
        "minCandidateNodesPercentage": 10 if pct is None else pct,
        "minCandidateNodesAbsolute": 100 if absolute is None else absolute,
    }


def _inter_pod_affinity(f: Fields) -> dict[str, Any]:
    weight = f.integer("hardPodAffinityWeight")
    return {
        "hardPodAffinityWeight": 1 if weight is None else weight,
        "ignorePreferredTermsOfExistingPods": bool(f.boolean("ignorePreferredTermsOfExistingPods")),
    }


def _selector_term(t: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("matchExpressions", "matchFields"):
        reqs = t.objects(key)
        if reqs is None:
            continue
        decoded = []
        for r in reqs:
            req: dict[str, Any] = {"key": r.string("key") or "", "operator": r.string("operator") or ""}
            values = r.string_list("values")
            if values is not None:
                req["values"] = values
            decoded.append(req)
            r.finish()
        out[key] = decoded
    t.finish()
    return out


def _node_affinity(f: Fields) -> dict[str, Any]:
    added = f.obj("addedAffinity")
    if added is None:
        return {}
    affinity: dict[str, Any] = {}
    required = added.obj("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_selector_term(t) for t in required.objects("nodeSelectorTerms") or ()]
        }
        required.finish()
    preferred = added.objects("preferredDuringSchedulingIgnoredDuringExecution")
    if preferred is not None:
        terms = []
        for p in preferred:
            pref = p.obj("preference")
            terms.append(
                {"weight": p.integer("weight") or 0, "preference": _selector_term(pref) if pref is not None else {}}
            )
            p.finish()
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = terms
    added.finish()
    return {"addedAffinity": affinity}


def _balanced_allocation(f: Fields) -> dict[str, Any]:
    return {"resources": _resources(f.objects("resources")) or _resources_default()}


def _node_resources_fit(f: Fields) -> dict[str, Any]:
    strategy: dict[str, Any]
    s = f.obj("scoringStrategy")
    if s is None:
        strategy = {"type": "LeastAllocated", "resources": _resources_default()}
    else:
        strategy = {"type": s.string("type") or "", "resources": _resources(s.objects("resources"))}
        strategy["resources"] = strategy["resources"] or _resources_default()
        rtc = s.obj("requestedToCapacityRatio")
        if rtc is not None:
            strategy["requestedToCapacityRatio"] = {"shape": _shape(rtc.objects("shape"))}
            rtc.finish()
        s.finish()
    return {
        "scoringStrategy": strategy,
        "ignoredResources": f.string_list("ignoredResources") or [],
        "ignoredResourceGroups": f.string_list("ignoredResourceGroups") or [],
    }


def _topology_spread(f: Fields) -> dict[str, Any]:
    constraints = []
    for c in f.objects("defaultConstraints") or ():
        out: dict[str, Any] = {
            "maxSkew": c.integer("maxSkew") or 0,
            "topologyKey": c.string("topologyKey") or "",
            "whenUnsatisfiable": c.string("whenUnsatisfiable") or "",
        }
        selector = c.obj("labelSelector")
        if selector is not None:
            out["labelSelector"] = dict(selector.data)
        for key, read in (
            ("minDomains", c.integer),
            ("nodeAffinityPolicy", c.string),
            ("nodeTaintsPolicy", c.string),
            ("matchLabelKeys", c.string_list),
        ):
            value = read(key)
            if value is not None:
                out[key] = value
        c.finish()
        constraints.append(out)
    return {"defaultConstraints": constraints, "defaultingType": f.string("defaultingType") or "System"}


def _volume_binding(f: Fields) -> dict[str, Any]:
    timeout = f.integer("bindTimeoutSeconds", bits=64)
    shape = _shape(f.objects("shape")) or [
        {"utilization": 0, "score": _MAX_CUSTOM_PRIORITY_SCORE},
        {"utilization": 100, "score": 0},
    ]
    return {"bindTimeoutSeconds": 600 if timeout is None else timeout, "shape": shape}


def _dynamic_resources(f: Fields) -> dict[str, Any]:
    filter_ns = f.duration("filterTimeout")
    binding_ns = f.duration("bindingTimeout")
    return {
        "filterTimeout": format_duration(_FILTER_TIMEOUT_NS if filter_ns is None else filter_ns),
        "bindingTimeout": format_duration(_BINDING_TIMEOUT_NS if binding_ns is None else binding_ns),
    }


# --- validation ---------------------------------------------------------------------------------------------


def _invalid(path: Path, value: object, detail: str) -> str:
    return str(fielderr.invalid(path, value, detail=detail))


def _label_name(path: Path, value: str) -> list[str]:
    """Upstream ``metav1validation.ValidateLabelName``."""
    return [_invalid(path, value, msg) for msg in is_qualified_name(value)]


def _function_shape(shape: list[dict[str, Any]], path: Path) -> list[str]:
    """Upstream ``validateFunctionShape``."""
    if not shape:
        return [str(fielderr.required(path, "at least one point must be specified"))]
    errs: list[str] = []
    for i in range(1, len(shape)):
        if shape[i - 1]["utilization"] >= shape[i]["utilization"]:
            p = path.index(i).child("utilization")
            errs.append(_invalid(p, shape[i]["utilization"], "values must be sorted in increasing order"))
            break
    for i, point in enumerate(shape):
        if not 0 <= point["utilization"] <= 100:
            errs.append(
                _invalid(path.index(i).child("utilization"), point["utilization"], "not in valid range [0, 100]")
            )
        if not 0 <= point["score"] <= _MAX_CUSTOM_PRIORITY_SCORE:
            msg = f"not in valid range [0, {_MAX_CUSTOM_PRIORITY_SCORE}]"
            errs.append(_invalid(path.index(i).child("score"), point["score"], msg))
    return errs


def _v_default_preemption(a: Mapping[str, Any], path: Path) -> list[str]:
    pct_path, abs_path = path.child("minCandidateNodesPercentage"), path.child("minCandidateNodesAbsolute")
    pct, absolute = a["minCandidateNodesPercentage"], a["minCandidateNodesAbsolute"]
    errs: list[str] = []
    if not 0 <= pct <= 100:
        errs.append(_invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(_invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(_invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errs.append(_invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"))
    return errs


def _v_inter_pod_affinity(a: Mapping[str, Any], path: Path) -> list[str]:
    w = a["hardPodAffinityWeight"]
    return [] if 0 <= w <= 100 else [_invalid(path.child("hardPodAffinityWeight"), w, "not in valid range [0, 100]")]


def _v_node_affinity(a: Mapping[str, Any], path: Path) -> list[str]:
    affinity = a.get("addedAffinity")
    if affinity is None:
        return []
    errs: list[str] = []
    base = path.child("addedAffinity")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    checks: list[Callable[[], object]] = []
    if required is not None:
        p = base.child("requiredDuringSchedulingIgnoredDuringExecution")
        checks.append(lambda: nodeaffinity.new_node_selector(required, path=p))
    if preferred:
        q = base.child("preferredDuringSchedulingIgnoredDuringExecution")
        checks.append(lambda: nodeaffinity.new_preferred_scheduling_terms(preferred, path=q))
    for check in checks:
        try:
            check()
        except SelectorError as exc:
            errs.extend([str(e) for e in exc.errors] or [str(exc)])
    return errs


def _v_balanced_allocation(a: Mapping[str, Any], path: Path) -> list[str]:
    errs: list[str] = []
    seen: set[str] = set()
    for i, r in enumerate(a["resources"]):
        p = path.child("resources").index(i)
        if r["name"] in seen:
            errs.append(str(fielderr.duplicate(p.child("name"), r["name"])))
        seen.add(r["name"])
        if r["weight"] != 1:
            errs.append(_invalid(p.child("weight"), r["weight"], "must be 1"))
    return errs


def _v_node_resources_fit(a: Mapping[str, Any], path: Path) -> list[str]:
    errs: list[str] = []
    for i, res in enumerate(a["ignoredResources"]):
        errs.extend(_label_name(path.child("ignoredResources").index(i), res))
    for i, group in enumerate(a["ignoredResourceGroups"]):
        p = path.child("ignoredResourceGroups").index(i)
        if "/" in group:
            errs.append(_invalid(p, group, "resource group name can't contain '/'"))
        errs.extend(_label_name(p, group))
    s, sp = a["scoringStrategy"], path.child("scoringStrategy")
    if s["type"] not in _STRATEGIES:
        errs.append(str(fielderr.not_supported(sp.child("type"), s["type"], supported=_STRATEGIES)))
    for i, r in enumerate(s["resources"]):
        if not 0 < r["weight"] <= 100:
            msg = f"resource weight of {r['name']} not in valid range (0, 100]"
            errs.append(_invalid(sp.child("resources").index(i).child("weight"), r["weight"], msg))
    rtc = s.get("requestedToCapacityRatio")
    rtc_path = sp.child("requestedToCapacityRatio")
    if s["type"] == "RequestedToCapacityRatio":
        if rtc is None:
            errs.append(str(fielderr.required(rtc_path, "must be specified when type is RequestedToCapacityRatio")))
        else:
            errs.extend(_function_shape(rtc["shape"], rtc_path.child("shape")))
    elif rtc is not None:
        errs.append(str(fielderr.forbidden(rtc_path, "must be nil when type is not RequestedToCapacityRatio")))
    return errs


def _v_topology_spread(a: Mapping[str, Any], path: Path) -> list[str]:
    errs: list[str] = []
    constraints, kind = a["defaultConstraints"], a["defaultingType"]
    if kind not in ("System", "List"):
        errs.append(str(fielderr.not_supported(path.child("defaultingType"), kind, supported=("System", "List"))))
    elif kind == "System" and constraints:
        errs.append(_invalid(path.child("defaultingType"), kind, "when .defaultConstraints are not empty"))
    cpath = path.child("defaultConstraints")
    for i, c in enumerate(constraints):
        p = cpath.index(i)
        if c["maxSkew"] <= 0:
            errs.append(_invalid(p.child("maxSkew"), c["maxSkew"], "not in valid range (0, inf)"))
        if not c["topologyKey"]:
            errs.append(str(fielderr.required(p.child("topologyKey"), "can not be empty")))
        else:
            errs.extend(_label_name(p.child("topologyKey"), c["topologyKey"]))
        when = c["whenUnsatisfiable"]
        if not when:
            errs.append(str(fielderr.required(p.child("whenUnsatisfiable"), "can not be empty")))
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            supported = ("DoNotSchedule", "ScheduleAnyway")
            errs.append(str(fielderr.not_supported(p.child("whenUnsatisfiable"), when, supported=supported)))
        if "labelSelector" in c:
            detail = "constraint must not define a selector, as they deduced for each pod"
            errs.append(str(fielderr.forbidden(p.child("labelSelector"), detail)))
        for other in constraints[:i]:
            if (other["topologyKey"], other["whenUnsatisfiable"]) == (c["topologyKey"], when):
                errs.append(str(fielderr.duplicate(p, f"{{{c['topologyKey']}, {when}}}")))
                break
    return errs


def _v_volume_binding(a: Mapping[str, Any], path: Path) -> list[str]:
    errs: list[str] = []
    if a["bindTimeoutSeconds"] < 0:
        detail = "invalid BindTimeoutSeconds, should not be a negative value"
        errs.append(_invalid(path.child("bindTimeoutSeconds"), a["bindTimeoutSeconds"], detail))
    errs.extend(_function_shape(a["shape"], path.child("shape")))
    return errs


def _v_dynamic_resources(a: Mapping[str, Any], path: Path) -> list[str]:
    # A metav1.Duration bad value prints through its String() method, unquoted (hence OMIT_VALUE + detail).
    errs: list[str] = []
    if parse_duration(a["filterTimeout"]) < 0:
        detail = f"{a['filterTimeout']}: must be zero or positive"
        errs.append(str(fielderr.invalid(path.child("filterTimeout"), OMIT_VALUE, detail=detail)))
    if parse_duration(a["bindingTimeout"]) < 1_000_000_000:
        detail = f"{a['bindingTimeout']}: must be at least 1 second"
        errs.append(str(fielderr.invalid(path.child("bindingTimeout"), OMIT_VALUE, detail=detail)))
    return errs


_Decoder = Callable[[Fields], dict[str, Any]]
_Validator = Callable[[Mapping[str, Any], Path], list[str]]

_TABLE: Final[Mapping[str, tuple[_Decoder, _Validator]]] = {
    "DefaultPreemption": (_default_preemption, _v_default_preemption),
    "DynamicResources": (_dynamic_resources, _v_dynamic_resources),
    "InterPodAffinity": (_inter_pod_affinity, _v_inter_pod_affinity),
    "NodeAffinity": (_node_affinity, _v_node_affinity),
    "NodeResourcesBalancedAllocation": (_balanced_allocation, _v_balanced_allocation),
    "NodeResourcesFit": (_node_resources_fit, _v_node_resources_fit),
    "PodTopologySpread": (_topology_spread, _v_topology_spread),
    "VolumeBinding": (_volume_binding, _v_volume_binding),
}

ARGS_PLUGINS: Final[frozenset[str]] = frozenset(_TABLE)
"""The in-tree plugins with a v1 args type (``<Plugin>Args``) that kubeplane decodes, defaults and validates."""


def decode_args(name: str, raw: object, path: Path, errs: list[str]) -> dict[str, Any]:
    """Decode and default the args of in-tree plugin ``name`` (one of :data:`ARGS_PLUGINS`).

    ``raw`` is the ``args`` member as read from the file (None when absent); decoding problems are appended
    to ``errs`` and the defaults stand in for whatever could not be read.
    """
    decoder, _ = _TABLE[name]
    if raw is not None and not isinstance(raw, Mapping):
        errs.append(str(fielderr.type_invalid(path, raw, detail="must be of type object")))
        raw = None
    f = Fields(raw or {}, path, errs)
    api_version, kind = f.string("apiVersion"), f.string("kind")
    if api_version and api_version != API_VERSION:
        errs.append(str(fielderr.not_supported(path.child("apiVersion"), api_version, supported=(API_VERSION,))))
    if kind and kind != f"{name}Args":
        errs.append(str(fielderr.not_supported(path.child("kind"), kind, supported=(f"{name}Args",))))
    out = decoder(f)
    f.finish()
    return out


def default_args(name: str) -> dict[str, Any]:
    """The v1 default args of in-tree plugin ``name`` (what an absent ``pluginConfig`` entry means)."""
    errs: list[str] = []
    out = decode_args(name, None, fielderr.new_path("args"), errs)
    assert not errs
    return out


def validate_args(name: str, args: Mapping[str, Any], path: Path) -> list[str]:
    """Upstream's validation of decoded ``args`` of in-tree plugin ``name``; one message per problem."""
    _, validator = _TABLE[name]
    return validator(args, path)
