"""kubeplane.api.volumes: upstream's component-helpers ``storage/volume`` (pv_helpers.go, helpers.go) and
``storage/ephemeral``, shared by the PV controller, VolumeBinding and the kubelet.

Upstream cases are named after their test: ``pv_helpers_test.go`` ``TestFindMatchVolumeWithNode`` and
``ephemeral_test.go`` ``TestVolumeIsForPod``. The ``resolved_*`` tests pin the places where the two former copies
(the PV controller's and VolumeBinding's) disagreed, with upstream's behaviour; each fails on one of the old copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubeplane.api.volumes import (
    ANN_BOUND_BY_CONTROLLER,
    BETA_STORAGE_CLASS_ANNOTATION,
    NodeAffinityCache,
    check_access_modes,
    check_node_affinity,
    check_volume_mode_mismatches,
    claim_class,
    claim_has_class,
    find_matching_volume,
    get_bind_volume_to_claim,
    is_volume_bound_to_claim,
    pod_claim_names,
    requested_storage,
    volume_capacity,
    volume_class,
    volume_is_for_pod,
)

Obj = dict[str, Any]


def _affinity(key: str, value: str) -> Obj:
    """pv_helpers_test.go ``makeNodeAffinity``."""
    return {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}
    }


def _volume(uid: str, name: str, capacity: str, available: bool, mod: Callable[[Obj], None] | None = None) -> Obj:
    """pv_helpers_test.go ``makeTestVolume``."""
    pv: Obj = {
        "metadata": {"uid": uid, "name": name},
        "spec": {
            "capacity": {"storage": capacity},
            "local": {},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Available"} if available else {},
    }
    if mod is not None:
        mod(pv)
    return pv


def _claim(name: str, size: str, modes: list[str], mod: Callable[[Obj], None] | None = None) -> Obj:
    """pv_helpers_test.go ``makeTestPersistentVolumeClaim``."""
    pvc: Obj = {
        "metadata": {"name": name, "namespace": "myns"},
        "spec": {
            "accessModes": modes,
            "resources": {"requests": {"storage": size}},
            "storageClassName": "wait",
            "volumeMode": "Filesystem",
        },
    }
    if mod is not None:
        mod(pvc)
    return pvc


def _spec(**fields: Any) -> Callable[[Obj], None]:
    def mod(obj: Obj) -> None:
        obj["spec"].update(fields)

    return mod


_VOLUMES = [
    _volume("local-small", "local001", "5G", True),
    _volume("local-pd-very-large", "local002", "200E", True, _spec(storageClassName="large")),
    _volume(
        "affinity-pv",
        "affinity001",
        "100G",
        True,
        _spec(storageClassName="wait", nodeAffinity=_affinity("key1", "value1")),
    ),
    _volume(
        "affinity-pv2",
        "affinity002",
        "150G",
        True,
        _spec(storageClassName="wait", nodeAffinity=_affinity("key1", "value1")),
    ),
    _volume(
        "affinity-prebound",
        "affinity003",
        "100G",
        True,
        _spec(
            storageClassName="wait",
            claimRef={"name": "claim02", "namespace": "myns"},
            nodeAffinity=_affinity("key1", "value1"),
        ),
    ),
    _volume(
        "affinity-pv3",
        "affinity003",
        "200G",
        True,
        _spec(storageClassName="wait", nodeAffinity=_affinity("key1", "value3")),
    ),
    _volume(
        "affinity-pv4",
        "affinity004",
        "200G",
        False,
        _spec(storageClassName="wait", nodeAffinity=_affinity("key1", "value4")),
    ),
]
_RWO, _RWX = ["ReadWriteOnce"], ["ReadWriteMany"]


@pytest.mark.parametrize(
    ("name", "expected", "claim", "node_value", "excluded"),
    [
        ("success-match", "affinity-pv", _claim("claim01", "100G", _RWO), "value1", None),
        ("success-prebound", "affinity-prebound", _claim("claim02", "100G", _RWO), "value1", None),
        ("success-exclusion", "affinity-pv2", _claim("claim01", "100G", _RWO), "value1", {"affinity001": None}),
        ("fail-exclusion", "", _claim("claim01", "100G", _RWO), "value1", {"affinity001": None, "affinity002": None}),
        ("fail-accessmode", "", _claim("claim01", "100G", _RWX), "value1", None),
        ("fail-nodeaffinity", "", _claim("claim01", "100G", _RWO), "value2", None),
        ("fail-prebound-node-affinity", "", _claim("claim02", "100G", _RWO), "value3", None),
        ("fail-nonavaliable", "", _claim("claim04", "100G", _RWO), "value4", None),
        ("success-bad-and-good-node-affinity", "affinity-pv3", _claim("claim03", "100G", _RWO), "value3", None),
    ],
)
@pytest.mark.parametrize("cached", [False, True])
def test_find_match_volume_with_node(
    name: str, expected: str, claim: Obj, node_value: str, excluded: dict[str, Any] | None, cached: bool
) -> None:
    """pv_helpers_test.go ``TestFindMatchVolumeWithNode`` (delayBinding true), with and without VolumeBinding's
    compiled-affinity cache: the cache never changes the answer."""
    found = find_matching_volume(
        claim,
        _VOLUMES,
        node_labels={"key1": node_value},
        excluded=excluded,
        delay_binding=True,
        affinity=NodeAffinityCache() if cached else None,
    )
    assert (found["metadata"]["uid"] if found is not None else "") == expected, name


def test_controller_path_with_delay_binding_returns_only_a_prebound_volume() -> None:
    """FindMatchingVolume with node nil and delayBinding: "PV controller does not bind this claim"; the pre-bound
    volume is still returned (and node affinity and access modes are not checked on this path)."""
    assert find_matching_volume(_claim("claim01", "100G", _RWX), _VOLUMES, delay_binding=True) is None
    prebound = find_matching_volume(_claim("claim02", "100G", _RWX), _VOLUMES, delay_binding=True)
    assert prebound is not None
    assert prebound["metadata"]["uid"] == "affinity-prebound"
    smallest = find_matching_volume(_claim("claim01", "100G", _RWX), _VOLUMES)
    assert smallest is not None
    assert smallest["metadata"]["uid"] == "affinity-pv"


def test_a_bad_claim_selector_is_upstreams_error() -> None:
    claim = _claim("c", "1G", _RWO, _spec(selector={"matchLabels": {"bad key": "x"}}))
    with pytest.raises(ValueError, match=r"^error creating internal label selector for claim: myns/c: "):
        find_matching_volume(claim, _VOLUMES)


def test_resolved_attributes_class_is_checked_before_the_prebound_return() -> None:
    """FindMatchingVolume filters mismatching volumeAttributesClassName right after volumeMode, before
    ``IsVolumeBoundToClaim`` returns the pre-bound volume: a pre-bound PV of another attributes class is no match
    (VolumeBinding's old copy checked it after the class, so returned the pre-bound PV)."""
    pv = _volume("pre", "pre", "1G", True, _spec(storageClassName="wait", claimRef={"name": "c", "namespace": "myns"}))
    pv["spec"]["volumeAttributesClassName"] = "gold"
    claim = _claim("c", "1G", _RWO)
    assert find_matching_volume(claim, [pv], node_labels={}) is None
    assert find_matching_volume(claim, [pv]) is None
    claim["spec"]["volumeAttributesClassName"] = "gold"
    assert find_matching_volume(claim, [pv], node_labels={}) is pv


def test_resolved_capacity_compares_quantities_exactly() -> None:
    """``volumeQty.Cmp(requestedQty) < 0`` compares exact quantities, not whole bytes: 1.2 does not hold 1.5
    (VolumeBinding's old copy compared ``Value()``, both 2), and the smaller of 1.2 and 1.4 is chosen."""
    claim = _claim("c", "1.1", _RWO)
    small, smaller = (_volume(n, n, q, True, _spec(storageClassName="wait")) for n, q in (("a", "1.4"), ("b", "1.2")))
    assert find_matching_volume(_claim("c", "1.5", _RWO), [smaller], node_labels={}) is None
    assert find_matching_volume(claim, [small, smaller], node_labels={}) is smaller
    assert requested_storage(claim).cmp(volume_capacity(smaller)) < 0
    assert volume_capacity({}).is_zero()
    assert requested_storage({"spec": {"resources": {"requests": {"storage": "x"}}}}).is_zero()


def test_resolved_check_node_affinity_returns_match_node_selector_terms_errors() -> None:
    """``CheckNodeAffinity`` returns ``corev1.MatchNodeSelectorTerms``'s error: a term that does not parse is
    reported when no valid term matches (the PV controller's old copy said "no matching NodeSelectorTerms", and
    VolumeBinding's binder wrote that text into its checkBindings error), and ignored when another term
    matches."""
    bad = {"key": "key1", "operator": "In", "values": []}
    good = {"key": "key1", "operator": "In", "values": ["value1"]}

    def pv(*expressions: Obj) -> Obj:
        """Named after its terms: the cache keys compiled selectors by (name, resourceVersion)."""
        terms = [{"matchExpressions": [e]} for e in expressions]
        name = "-".join(str(e["values"]) for e in expressions)
        return {
            "metadata": {"name": name, "resourceVersion": "1"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": terms}}},
        }

    cache = NodeAffinityCache()
    for check in (check_node_affinity, cache.check):
        error = check(pv(bad), {"key1": "value1"})
        assert error is not None
        assert "values set can't be empty" in error
        assert check(pv(bad, good), {"key1": "value1"}) is None
        assert check(pv(good), {"key1": "value2"}) == "no matching NodeSelectorTerms"
        assert check({"metadata": {"name": "free"}, "spec": {}}, {}) is None


def test_node_affinity_cache_compiles_once_per_resource_version() -> None:
    pv: Obj = {"metadata": {"name": "pv", "resourceVersion": "1"}, "spec": {"nodeAffinity": _affinity("k", "a")}}
    cache = NodeAffinityCache()
    assert cache.check(pv, {"k": "a"}) is None
    pv["spec"]["nodeAffinity"] = _affinity("k", "b")  # same version: the compiled selector is reused
    assert cache.check(pv, {"k": "a"}) is None
    pv["metadata"]["resourceVersion"] = "2"
    assert cache.check(pv, {"k": "a"}) == "no matching NodeSelectorTerms"


_POD_OWNER = {"metadata": {"namespace": "kube-system", "name": "podOwner", "uid": "2"}}
_POD_NOT_OWNER = {"metadata": {"namespace": "kube-system", "name": "podNotOwner", "uid": "1"}}
_PVC_NO_OWNER = {"metadata": {"namespace": "kube-system", "name": "pvcNoOwner", "uid": "3"}}
_PVC_WITH_OWNER = {
    "metadata": {
        "namespace": "kube-system",
        "name": "pvcNoOwner",
        "uid": "4",
        "ownerReferences": [{"uid": "2", "controller": True}],
    }
}
_USER_PVC_WITH_OWNER = {
    "metadata": {
        "namespace": "user-namespace",
        "name": "userPVCWithOwner",
        "uid": "5",
        "ownerReferences": [{"uid": "2", "controller": True}],
    }
}


@pytest.mark.parametrize(
    ("name", "pod", "pvc", "expected"),
    [
        ("owned", _POD_OWNER, _PVC_WITH_OWNER, None),
        (
            "other-pod",
            _POD_NOT_OWNER,
            _PVC_WITH_OWNER,
            "PVC kube-system/pvcNoOwner was not created for pod kube-system/podNotOwner (pod is not owner)",
        ),
        (
            "no-owner",
            _POD_OWNER,
            _PVC_NO_OWNER,
            "PVC kube-system/pvcNoOwner was not created for pod kube-system/podOwner (pod is not owner)",
        ),
        (
            "different-namespace",
            _POD_OWNER,
            _USER_PVC_WITH_OWNER,
            "PVC user-namespace/userPVCWithOwner was not created for pod kube-system/podOwner (pod is not owner)",
        ),
    ],
)
def test_volume_is_for_pod(name: str, pod: Obj, pvc: Obj, expected: str | None) -> None:
    """ephemeral_test.go ``TestVolumeIsForPod``; "different-namespace" is the case VolumeBinding's old copy
    passed."""
    assert volume_is_for_pod(pod, pvc) == expected, name


def test_volume_is_for_pod_needs_a_controller_reference() -> None:
    """``metav1.IsControlledBy``: an owner reference without ``controller: true`` does not count."""
    pvc = {"metadata": {**_PVC_WITH_OWNER["metadata"], "ownerReferences": [{"uid": "2"}]}}
    assert volume_is_for_pod(_POD_OWNER, pvc) is not None


def test_pod_claim_names_in_volume_order_with_ephemeral_names() -> None:
    """``ephemeral.VolumeClaimName`` is ``<pod>-<volume>``; a volume with both sources counts as the claim."""
    pod = {
        "metadata": {"name": "web"},
        "spec": {
            "volumes": [
                {"name": "cache", "emptyDir": {}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                {"name": "both", "persistentVolumeClaim": {"claimName": "named"}, "ephemeral": {}},
            ]
        },
    }
    assert pod_claim_names(pod) == [("web-scratch", True), ("data-0", False), ("named", False)]


def test_classes_prefer_the_beta_annotation() -> None:
    """helpers.go ``GetPersistentVolumeClaimClass``, ``GetPersistentVolumeClass``,
    ``PersistentVolumeClaimHasClass``."""
    beta = {"metadata": {"annotations": {BETA_STORAGE_CLASS_ANNOTATION: "old"}}, "spec": {"storageClassName": "new"}}
    assert claim_class(beta) == "old"
    assert volume_class(beta) == "old"
    assert claim_class({"spec": {"storageClassName": "new"}}) == "new"
    assert claim_class({}) == ""
    assert volume_class({}) == ""
    assert claim_has_class({"spec": {"storageClassName": ""}})
    assert not claim_has_class({"spec": {}})


def test_get_bind_volume_to_claim() -> None:
    """pv_helpers.go ``GetBindVolumeToClaim``: a copy with a full claimRef (``reference.GetReference``) and
    bound-by-controller unless the volume was pre-bound; nothing to do when already bound."""
    claim = {"metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "7"}}
    pv: Obj = {"metadata": {"name": "pv"}, "spec": {}}
    bound, dirty = get_bind_volume_to_claim(pv, claim)
    assert dirty
    assert pv == {"metadata": {"name": "pv"}, "spec": {}}
    assert bound["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "c",
        "uid": "u",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert bound["metadata"]["annotations"] == {ANN_BOUND_BY_CONTROLLER: "yes"}
    assert get_bind_volume_to_claim(bound, claim) == (bound, False)
    prebound = {"metadata": {"name": "pv"}, "spec": {"claimRef": {"name": "c", "namespace": "ns"}}}
    assert is_volume_bound_to_claim(prebound, claim)
    result, dirty = get_bind_volume_to_claim(prebound, claim)
    assert dirty
    assert result["spec"]["claimRef"]["uid"] == "u"
    assert "annotations" not in result["metadata"]
    assert not is_volume_bound_to_claim({"spec": {"claimRef": {"name": "c", "namespace": "ns", "uid": "x"}}}, claim)


def test_volume_mode_and_access_modes() -> None:
    """``CheckVolumeModeMismatches`` (absent is Filesystem) and ``CheckAccessModes`` (every requested mode)."""
    assert not check_volume_mode_mismatches({}, {"volumeMode": "Filesystem"})
    assert check_volume_mode_mismatches({"volumeMode": "Block"}, {})
    volume = {"spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}
    assert check_access_modes({"spec": {"accessModes": ["ReadOnlyMany"]}}, volume)
    assert not check_access_modes({"spec": {"accessModes": ["ReadWriteOnce", "ReadWriteMany"]}}, volume)
