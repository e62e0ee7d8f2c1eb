"""What a pod update and a pod status update may change, as upstream's ``ValidatePodUpdate`` (the update-only
part) and ``ValidatePodStatusUpdate``.

An update may change container and init-container images, lower ``activeDeadlineSeconds``, add tolerations (or
change their ``tolerationSeconds``), remove scheduling gates, set ``terminationGracePeriodSeconds`` to 1 when it
was negative, and -- while the pod is still gated -- add ``nodeSelector`` entries. Anything else is refused with
upstream's ``pod updates may not change fields other than ...`` followed by a diff (:func:`.common.spec_diff`;
upstream prints ``cmp.Diff`` of the Go structs).

The check works as upstream's: the new spec has every field an update may change put back to its old value
("munged"), and what remains must equal the old spec under core/v1 semantic equality
(:func:`.common.normalize`). The create rules on the new spec are run by :func:`.pods.validate_pod_update`,
which calls :func:`check_pod_spec_update`; a status update (:func:`validate_pod_status_update`) looks at the
status alone and never at the spec rules. The stored object's own problems are never reported as the update's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    MAX_INT32,
    invalid_each,
    is_ipv6,
    normalize,
    spec_diff,
    validate_immutable_field,
)
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import CORE_V1, Reader, finish

__all__ = ["check_pod_spec_update", "check_pod_status_update", "plainly_valid", "validate_pod_status_update"]

_SYSTEM_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})
_UPDATABLE: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _updates_allowed(spec: Reader, old: Reader) -> bool:
    """The per-field update rules of ``ValidatePodUpdate``; False when upstream stops at the first error."""
    errs = spec.errs
    for key in ("containers", "initContainers"):
        new_list, old_list = spec.items(key), old.items(key)
        if len(new_list) != len(old_list):
            errs.append(field.forbidden(spec.at(key), "pod updates may not add or remove containers"))
            return False
        for c in new_list:
            if not c.string("image"):
                errs.append(field.required(c.at("image")))
    deadline, old_deadline = spec.integer("activeDeadlineSeconds", None), old.integer("activeDeadlineSeconds", None)
    path = spec.at("activeDeadlineSeconds")
    if deadline is not None:
        if not 0 <= deadline <= MAX_INT32:
            errs.append(field.invalid(path, deadline, detail=names.inclusive_range_error(0, MAX_INT32)))
            return False
        if old_deadline is not None and old_deadline < deadline:
            errs.append(field.invalid(path, deadline, detail="must be less than or equal to previous value"))
            return False
    elif old_deadline is not None and not spec.has("activeDeadlineSeconds"):
        errs.append(field.invalid(path, None, detail="must not update from a positive integer to nil value"))
    new_tolerations = [normalize(t.data) for t in spec.items("tolerations")]
    for t in old.items("tolerations"):
        old_t = normalize(t.data)
        if not any(
            {**old_t, "tolerationSeconds": n.get("tolerationSeconds")}
            == {**n, "tolerationSeconds": n.get("tolerationSeconds")}
            for n in new_tolerations
        ):
            errs.append(
                field.forbidden(
                    spec.at("tolerations"), "existing toleration can not be modified except its tolerationSeconds"
                )
            )
            break
    old_gates = {g.string("name") for g in old.items("schedulingGates")}
    added = {g.string("name"): g for g in spec.items("schedulingGates") if g.string("name") not in old_gates}
    for name, gate in added.items():
        detail = f"only deletion is allowed, but found new scheduling gate '{name}'"
        errs.append(field.forbidden(gate.at("name"), detail))
    return True


def _munge(spec: Reader, old: Reader) -> dict[str, Any]:
    """The new spec with every field an update may change put back to its old value (upstream's munging)."""
    munged = copy.deepcopy(dict(spec.data))
    for key in ("containers", "initContainers"):
        new_list, old_list = munged.get(key), old.data.get(key)
        if isinstance(new_list, list) and isinstance(old_list, list) and len(new_list) == len(old_list):
            for i, (c, o) in enumerate(zip(new_list, old_list, strict=True)):
                if isinstance(c, dict) and isinstance(o, Mapping):
                    new_list[i] = {**c, "image": o.get("image")}
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations", "schedulingGroup"):
        munged[key] = old.data.get(key)
    old_grace = old.data.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old.array("schedulingGates"):  # a gated pod may gain node selector entries
        old_selector = old.string_map("nodeSelector")
        new_selector = munged.get("nodeSelector")
        if normalize(new_selector) != normalize(old_selector):
            new_map = new_selector if isinstance(new_selector, Mapping) else {}
            if any(new_map.get(k) != v for k, v in old_selector.items()):
                detail = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
                spec.errs.append(field.invalid(spec.at("nodeSelector"), dict(new_map), detail=detail))
            munged["nodeSelector"] = old.data.get("nodeSelector")
    return munged


def check_scheduling_group_update(spec: Reader, old: Reader) -> None:
    """``spec.schedulingGroup`` never changes, set or unset (core/v1 PodSpec: "This field is immutable"): the
    scheduler keys a pod's gang by it once. Kept out of the generic munged-spec diff so the error names it."""
    new_group, old_group = spec.data.get("schedulingGroup"), old.data.get("schedulingGroup")
    spec.errs.extend(validate_immutable_field(new_group, old_group, spec.at("schedulingGroup")))


def check_pod_spec_update(spec: Reader, old: Reader) -> None:
    """The update-only rules of upstream ``ValidatePodUpdate`` on the new ``spec`` against the ``old`` one."""
    if not _updates_allowed(spec, old):
        return
    check_scheduling_group_update(spec, old)
    munged, old_norm = normalize(_munge(spec, old)), normalize(old.data)
    if munged != old_norm:
        detail = f"pod updates may not change fields other than {','.join(_UPDATABLE)}\n"
        spec.errs.append(field.forbidden(field.new_path("spec"), detail + spec_diff(old_norm, munged, "spec")))


def _state_transitions(new: Reader, old: Reader, key: str, *, policy: str, restartable: frozenset[str]) -> None:
    """Upstream ``ValidateContainerStateTransition``: a terminated container that may not restart stays so."""
    if policy == "Always":
        return
    new_statuses = new.items(key)
    for i, status in enumerate(old.items(key)):
        terminated = status.child("state").child("terminated")
        if not terminated.data or (terminated.integer("exitCode") != 0 and policy == "OnFailure"):
            continue
        name = status.string("name")
        if name in restartable:
            continue
        if any(n.string("name") == name and not n.child("state").has("terminated") for n in new_statuses):
            detail = "may not be transitioned to non-terminated state"
            new.errs.append(field.forbidden(new.at(key).index(i).child("state"), detail))


def _ips(status: Reader, key: str, *, host_ip: str | None) -> None:
    """Upstream ``validatePodIPs`` / ``validateHostIPs``: valid, at most one per family, no duplicates."""
    entries = status.items(key)
    ips = [e.string("ip") for e in entries]
    path = status.at(key)
    if host_ip is not None and entries and host_ip != ips[0]:
        status.errs.append(field.invalid(path.index(0).child("ip"), ips[0], detail="must be equal to `hostIP`"))
    bad = False
    for i, ip in enumerate(ips):
        ip_errs = names.is_valid_ip(path.index(i), ip)
        bad = bad or bool(ip_errs)
        status.errs.extend(ip_errs)
    if len(ips) > 1:
        v6 = [is_ipv6(ip) for ip in ips]
        if len(ips) > 2 or all(v6) or not any(v6) or bad:
            shown = [dict(e.data) for e in entries]
            detail = "may specify no more than one IP for each IP family"
            status.errs.append(field.invalid(path, shown, detail=detail))
        seen: set[str] = set()
        for i, (e, ip) in enumerate(zip(entries, ips, strict=True)):
            if ip in seen:
                status.errs.append(field.duplicate(path.index(i), dict(e.data)))
            seen.add(ip)


def validate_pod_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodStatusUpdate`` (container user and allocated-resource health checks skipped).

    A status that :func:`plainly_valid` accepts has no error and is answered at once (the kubelet's writes, every
    pod a few times); anything else takes the full check, which builds the messages."""
    if plainly_valid(new, old):
        return []
    return check_pod_status_update(new, old)


def check_pod_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """:func:`validate_pod_status_update` without the shortcut: every rule through :class:`Reader`, errors built
    with their paths."""
    errs: ErrorList = []
    root, old_root = CORE_V1.root(new, errs), CORE_V1.root(old, [])
    status, old_status = root.child("status"), old_root.child("status")
    spec, old_spec = root.child("spec"), old_root.child("spec")
    for i, condition in enumerate(status.items("conditions")):
        kind = condition.string("type")
        if kind not in _SYSTEM_CONDITIONS:  # upstream's path: metadata.conditions[i].Type
            at = field.new_path("metadata", "conditions").index(i).child("Type")
            errs.extend(invalid_each(at, kind, names.is_qualified_name(kind)))
    if spec.string("nodeName") != old_spec.string("nodeName"):
        errs.append(field.forbidden(status.at("nodeName"), "may not be changed directly"))
    nominated = status.string("nominatedNodeName")
    if nominated and nominated != old_status.string("nominatedNodeName"):
        errs.extend(invalid_each(status.at("nominatedNodeName"), nominated, names.is_dns1123_subdomain(nominated)))
    qos = status.string("qosClass")
    if qos != old_status.string("qosClass"):
        errs.append(field.invalid(status.at("qosClass"), qos, detail=IMMUTABLE_MSG))
    policy = old_spec.string("restartPolicy")
    sidecars = frozenset(
        c.string("name") for c in old_spec.items("initContainers") if c.string("restartPolicy") == "Always"
    )
    _state_transitions(status, old_status, "containerStatuses", policy=policy, restartable=frozenset())
    _state_transitions(status, old_status, "initContainerStatuses", policy=policy, restartable=sidecars)
    _state_transitions(status, old_status, "ephemeralContainerStatuses", policy="Never", restartable=frozenset())
    _ips(status, "podIPs", host_ip=None)
    if status.array("hostIPs"):
        _ips(status, "hostIPs", host_ip=status.string("hostIP"))
    return finish(errs)


# --- the shortcut ------------------------------------------------------------------------------------------------

_OK_CONDITION_TYPES: set[str] = set()
_OK_IPS: set[str] = set()
_OK_MEMO_SIZE: Final = 4096
"""Strings a check accepted (``is_qualified_name``, ``is_valid_ip``: pure functions of the string), kept until
a memo holds this many. The system conditions, which the full check does not look at, are qualified names."""


def _accepted(memo: set[str], value: str, check: Any) -> bool:
    if value in memo:
        return True
    if check(value):
        return False
    if len(memo) >= _OK_MEMO_SIZE:
        memo.clear()
    memo.add(value)
    return True


def _map(value: Any) -> Mapping[str, Any] | None:
    """A member the :class:`Reader` reads as an object without a report: absent/null (empty) or a mapping; None
    for anything else."""
    if value is None:
        return {}
    return value if isinstance(value, Mapping) else None


def _objects(value: Any) -> list[Mapping[str, Any]] | None:
    """A list member whose every element is an object (absent/null: empty); None otherwise (a report)."""
    if value is None:
        return []
    if type(value) is not list or not all(isinstance(item, Mapping) for item in value):
        return None
    return value


def _text(value: Any) -> str | None:
    """A string member as :meth:`Reader.string` reads it without a report (absent: ``""``); None otherwise."""
    if value is None:
        return ""
    return value if type(value) is str else None


def _one_valid_ip(entries: list[Mapping[str, Any]], *, host_ip: str | None) -> bool:
    """:func:`_ips` finds nothing: at most one entry, a valid IP (the ``hostIP`` when given)."""
    if not entries:
        return True
    if len(entries) > 1:
        return False
    ip = _text(entries[0].get("ip"))
    if ip is None or (host_ip is not None and ip != host_ip):
        return False
    return _accepted(_OK_IPS, ip, lambda v: names.is_valid_ip(None, v))


def plainly_valid(new: object, old: object) -> bool:
    """True only when :func:`check_pod_status_update` answers no error; False when in doubt (the full check
    decides). Reads what the full check reads, each member of the new object with the type its :class:`Reader`
    demands (a member of another type is a report) and the old one's as its quiet reader sees them; the rules
    that need more than a glance -- a terminated container of a pod that may not restart it, two IPs of a list,
    a changed nominated node -- are left to the full check."""
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return False
    status, spec = _map(new.get("status")), _map(new.get("spec"))
    old_status, old_spec = _map(old.get("status")), _map(old.get("spec"))
    if status is None or spec is None or old_status is None or old_spec is None:
        return False
    conditions = _objects(status.get("conditions"))
    if conditions is None:
        return False
    for condition in conditions:
        kind = _text(condition.get("type"))
        if kind is None or not _accepted(_OK_CONDITION_TYPES, kind, names.is_qualified_name):
            return False
    node, old_node = _text(spec.get("nodeName")), _text(old_spec.get("nodeName"))
    nominated, old_nominated = _text(status.get("nominatedNodeName")), _text(old_status.get("nominatedNodeName"))
    qos, old_qos = _text(status.get("qosClass")), _text(old_status.get("qosClass"))
    if node is None or node != old_node or nominated is None or (nominated and nominated != old_nominated):
        return False
    if qos is None or qos != old_qos:
        return False
    policy = _text(old_spec.get("restartPolicy"))
    if policy is None:
        return False
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        if policy == "Always" and key != "ephemeralContainerStatuses":
            continue
        old_statuses = _objects(old_status.get(key))
        if old_statuses is None or _objects(status.get(key)) is None:
            return False
        for entry in old_statuses:
            state = _map(entry.get("state"))
            if state is None or state.get("terminated"):  # a terminated container: the full check's transitions
                return False
    pod_ips = _objects(status.get("podIPs"))
    if pod_ips is None or not _one_valid_ip(pod_ips, host_ip=None):
        return False
    host_ips = status.get("hostIPs")
    if host_ips is None or host_ips == []:
        return True
    host_entries, host_ip = _objects(host_ips), _text(status.get("hostIP"))
    return host_entries is not None and host_ip is not None and _one_valid_ip(host_entries, host_ip=host_ip)
