"""One syncClaim / syncVolume call over initial objects, then the objects and events compared with what upstream
expects: upstream ``binder_test.go`` TestSync (unit test sets 1-4, cases named as upstream), ``provision_test.go``
(external provisioning, missing class), ``delete_test.go`` and ``recycle_test.go`` (no deleter / recycler
plugin), each case run against the in-memory API server with the controller's workers stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.controllers.pv_controller import PersistentVolumeController
from tests.controllers import harness
from tests.controllers.harness import Env
from tests.controllers.pvenv import (
    ANN_BOUND,
    ANN_COMPLETED,
    CLAIM_UID,
    NS,
    events,
    get_claim,
    get_volume,
    new_claim,
    new_volume,
    put,
    storage_class,
)

LABELS = {"foo": "true", "bar": "false"}


@dataclass
class Case:
    name: str
    volumes: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    call: str  # "claim:<name>" or "volume:<name>"
    want_volumes: dict[str, tuple[str, str, str, set[str]]] = field(default_factory=dict)
    """volume -> (phase, claimRef name, claimRef uid: "claim" for its claim's UID, "" for none, or literal)."""
    want_claims: dict[str, tuple[str, str, set[str]]] = field(default_factory=dict)
    """claim -> (phase, spec.volumeName, annotations)."""
    want_events: list[str] = field(default_factory=list)
    error: bool = False
    others: list[dict[str, Any]] = field(default_factory=list)
    deleted_volumes: set[str] = field(default_factory=set)


def _labelled(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["labels"] = dict(LABELS)
    return obj


def _selecting(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["selector"] = {"matchLabels": dict(LABELS)}
    return obj


B, C = ANN_BOUND, ANN_COMPLETED
CASES = [
    # [Unit test set 1] User did not care which PV they get.
    Case(
        "1-1 - successful bind",
        [new_volume("volume1-1", "1Gi")],
        [new_claim("claim1-1", "1Gi")],
        "claim:claim1-1",
        {"volume1-1": ("Bound", "claim1-1", "claim", {B})},
        {"claim1-1": ("Bound", "volume1-1", {B, C})},
    ),
    Case(
        "1-2 - noop",
        [new_volume("volume1-2", "1Gi")],
        [new_claim("claim1-2", "10Gi")],
        "claim:claim1-2",
        {"volume1-2": ("Available", "", "", set())},
        {"claim1-2": ("Pending", "", set())},
        ["Normal FailedBinding"],
    ),
    Case(
        "1-3 - reset to Pending",
        [new_volume("volume1-3", "1Gi")],
        [new_claim("claim1-3", "10Gi", "", "Bound")],
        "claim:claim1-3",
        {},
        {"claim1-3": ("Pending", "", set())},
        ["Normal FailedBinding"],
    ),
    Case(
        "1-4 - smallest volume",
        [new_volume("volume1-4-1", "10Gi"), new_volume("volume1-4-2", "1Gi")],
        [new_claim("claim1-4", "1Gi")],
        "claim:claim1-4",
        {"volume1-4-1": ("Available", "", "", set()), "volume1-4-2": ("Bound", "claim1-4", "claim", {B})},
        {"claim1-4": ("Bound", "volume1-4-2", {B, C})},
    ),
    Case(
        "1-5 - prebound volume by name - success",
        [new_volume("volume1-5-1", "10Gi", "", "claim1-5"), new_volume("volume1-5-2", "1Gi")],
        [new_claim("claim1-5", "1Gi")],
        "claim:claim1-5",
        {"volume1-5-1": ("Bound", "claim1-5", "claim", set()), "volume1-5-2": ("Available", "", "", set())},
        {"claim1-5": ("Bound", "volume1-5-1", {B, C})},
    ),
    Case(
        "1-6 - prebound volume by UID - success",
        [new_volume("volume1-6-1", "10Gi", CLAIM_UID, "claim1-6"), new_volume("volume1-6-2", "1Gi")],
        [new_claim("claim1-6", "1Gi")],
        "claim:claim1-6",
        {"volume1-6-1": ("Bound", "claim1-6", "claim", set())},
        {"claim1-6": ("Bound", "volume1-6-1", {B, C})},
    ),
    Case(
        "1-7 - prebound volume to different claim",
        [new_volume("volume1-7", "10Gi", "uid1-777", "claim1-7")],
        [new_claim("claim1-7", "1Gi")],
        "claim:claim1-7",
        {"volume1-7": ("Available", "claim1-7", "uid1-777", set())},
        {"claim1-7": ("Pending", "", set())},
        ["Normal FailedBinding"],
    ),
    Case(
        "1-8 - complete bind after crash - PV bound",
        [new_volume("volume1-8", "1Gi", CLAIM_UID, "claim1-8", "Pending", "Retain", B)],
        [new_claim("claim1-8", "1Gi")],
        "claim:claim1-8",
        {"volume1-8": ("Bound", "claim1-8", "claim", {B})},
        {"claim1-8": ("Bound", "volume1-8", {B, C})},
    ),
    Case(
        "1-10 - complete bind after crash - PVC bound",
        [new_volume("volume1-10", "1Gi", CLAIM_UID, "claim1-10", "Bound", "Retain", B)],
        [new_claim("claim1-10", "1Gi", "volume1-10", "Pending", B, C)],
        "claim:claim1-10",
        {"volume1-10": ("Bound", "claim1-10", "claim", {B})},
        {"claim1-10": ("Bound", "volume1-10", {B, C})},
    ),
    Case(
        "1-11 - bind when selector matches",
        [_labelled(new_volume("volume1-1", "1Gi"))],
        [_selecting(new_claim("claim1-1", "1Gi"))],
        "claim:claim1-1",
        {"volume1-1": ("Bound", "claim1-1", "claim", {B})},
        {"claim1-1": ("Bound", "volume1-1", {B, C})},
    ),
    Case(
        "1-12 - do not bind when selector does not match",
        [new_volume("volume1-1", "1Gi")],
        [_selecting(new_claim("claim1-1", "1Gi"))],
        "claim:claim1-1",
        {"volume1-1": ("Available", "", "", set())},
        {"claim1-1": ("Pending", "", set())},
        ["Normal FailedBinding"],
    ),
    Case(
        "1-13 - do not bind when volumeMode does not match (FindMatchingVolume CheckVolumeModeMismatches)",
        [new_volume("volume1-13", "1Gi", volumeMode="Block")],
        [new_claim("claim1-13", "1Gi")],
        "claim:claim1-13",
        {"volume1-13": ("Available", "", "", set())},
        {"claim1-13": ("Pending", "", set())},
        ["Normal FailedBinding"],
    ),
    # [Unit test set 2] User asked for a specific PV.
    Case(
        "2-1 - claim prebound to non-existing volume - noop",
        [],
        [new_claim("claim2-1", "10Gi", "volume2-1")],
        "claim:claim2-1",
        {},
        {"claim2-1": ("Pending", "volume2-1", set())},
    ),
    Case(
        "2-2 - claim prebound to non-existing volume - reset status",
        [],
        [new_claim("claim2-2", "10Gi", "volume2-2", "Bound")],
        "claim:claim2-2",
        {},
        {"claim2-2": ("Pending", "volume2-2", set())},
    ),
    Case(
        "2-3 - claim prebound to unbound volume",
        [new_volume("volume2-3", "1Gi")],
        [new_claim("claim2-3", "1Gi", "volume2-3")],
        "claim:claim2-3",
        {"volume2-3": ("Bound", "claim2-3", "claim", {B})},
        {"claim2-3": ("Bound", "volume2-3", {C})},
    ),
    Case(
        "2-4 - claim prebound to prebound volume by name",
        [new_volume("volume2-4", "1Gi", "", "claim2-4")],
        [new_claim("claim2-4", "1Gi", "volume2-4")],
        "claim:claim2-4",
        {"volume2-4": ("Bound", "claim2-4", "claim", set())},
        {"claim2-4": ("Bound", "volume2-4", {C})},
    ),
    Case(
        "2-6 - claim prebound to already bound volume",
        [new_volume("volume2-6", "1Gi", "uid2-6-1", "claim2-6-1", "Bound")],
        [new_claim("claim2-6", "1Gi", "volume2-6", "Bound")],
        "claim:claim2-6",
        {"volume2-6": ("Bound", "claim2-6-1", "uid2-6-1", set())},
        {"claim2-6": ("Pending", "volume2-6", set())},
        ["Warning FailedBinding"],
    ),
    Case(
        "2-7 - claim bound by controller to already bound volume",
        [new_volume("volume2-7", "1Gi", "uid2-7-1", "claim2-7-1", "Bound")],
        [new_claim("claim2-7", "1Gi", "volume2-7", "Bound", B)],
        "claim:claim2-7",
        {},
        {"claim2-7": ("Bound", "volume2-7", {B})},
        ["Warning FailedBinding"],
        error=True,
    ),
    Case(
        "2-8 - claim prebound to unbound volume that does not match the selector",
        [new_volume("volume2-8", "1Gi")],
        [_selecting(new_claim("claim2-8", "1Gi", "volume2-8"))],
        "claim:claim2-8",
        {"volume2-8": ("Bound", "claim2-8", "claim", {B})},
        {"claim2-8": ("Bound", "volume2-8", {C})},
    ),
    Case(
        "2-9 - bind when volume is too small (checkVolumeSatisfyClaim: VolumeMismatch)",
        [new_volume("volume2-9", "1Gi")],
        [new_claim("claim2-9", "10Gi", "volume2-9")],
        "claim:claim2-9",
        {"volume2-9": ("Available", "", "", set())},
        {"claim2-9": ("Pending", "volume2-9", set())},
        ["Warning VolumeMismatch"],
    ),
    # [Unit test set 3] Syncing bound claim
    Case(
        "3-1 - bound claim with missing VolumeName",
        [],
        [new_claim("claim3-1", "10Gi", "", "Bound", B, C)],
        "claim:claim3-1",
        {},
        {"claim3-1": ("Lost", "", {B, C})},
        ["Warning ClaimLost"],
    ),
    Case(
        "3-2 - bound claim with missing volume",
        [],
        [new_claim("claim3-2", "10Gi", "volume3-2", "Bound", B, C)],
        "claim:claim3-2",
        {},
        {"claim3-2": ("Lost", "volume3-2", {B, C})},
        ["Warning ClaimLost"],
    ),
    Case(
        "3-3 - bound claim with unbound volume",
        [new_volume("volume3-3", "10Gi")],
        [new_claim("claim3-3", "10Gi", "volume3-3", "Pending", B, C)],
        "claim:claim3-3",
        {"volume3-3": ("Bound", "claim3-3", "claim", {B})},
        {"claim3-3": ("Bound", "volume3-3", {B, C})},
    ),
    Case(
        "3-5 - bound claim with bound volume",
        [new_volume("volume3-5", "10Gi", CLAIM_UID, "claim3-5", "Pending")],
        [new_claim("claim3-5", "10Gi", "volume3-5", "Pending", B, C)],
        "claim:claim3-5",
        {"volume3-5": ("Bound", "claim3-5", "claim", set())},
        {"claim3-5": ("Bound", "volume3-5", {B, C})},
    ),
    Case(
        "3-6 - bound claim with bound volume (misbound)",
        [new_volume("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x", "Pending")],
        [new_claim("claim3-6", "10Gi", "volume3-6", "Bound", B, C)],
        "claim:claim3-6",
        {},
        {"claim3-6": ("Lost", "volume3-6", {B, C})},
        ["Warning ClaimMisbound"],
    ),
    # [Unit test set 4] All syncVolume tests.
    Case(
        "4-1 - volume is Pending",
        [new_volume("volume4-1", "10Gi", "", "", "Pending")],
        [],
        "volume:volume4-1",
        {"volume4-1": ("Available", "", "", set())},
    ),
    Case(
        "4-3 - volume is pre-bound (by name only)",
        [new_volume("volume4-3", "10Gi", "", "claim4-3", "Pending")],
        [],
        "volume:volume4-3",
        {"volume4-3": ("Available", "claim4-3", "", set())},
    ),
    Case(
        "4-4 - volume bound to missing claim (Retain: Released)",
        [new_volume("volume4-4", "10Gi", "uid4-4", "claim4-4", "Bound")],
        [],
        "volume:volume4-4",
        {"volume4-4": ("Released", "claim4-4", "uid4-4", set())},
    ),
    Case(
        "4-5 - volume bound to claim with different UID",
        [new_volume("volume4-5", "10Gi", "uid4-5-x", "claim4-5", "Bound")],
        [new_claim("claim4-5", "1Gi", "volume4-5", "Bound", B, C)],
        "volume:volume4-5",
        {"volume4-5": ("Released", "claim4-5", "uid4-5-x", set())},
    ),
    Case(
        "4-7 - volume bound by controller to unbound claim",
        [new_volume("volume4-7", "10Gi", CLAIM_UID, "claim4-7", "Bound", "Retain", B)],
        [new_claim("claim4-7", "1Gi")],
        "volume:volume4-7",
        {"volume4-7": ("Bound", "claim4-7", "claim", {B})},
        {"claim4-7": ("Pending", "", set())},
    ),
    Case(
        "4-8 - volume bound by controller to claim bound somewhere else",
        [new_volume("volume4-8", "10Gi", CLAIM_UID, "claim4-8", "Bound", "Retain", B)],
        [new_claim("claim4-8", "1Gi", "volume4-8-x", "Bound")],
        "volume:volume4-8",
        {"volume4-8": ("Available", "", "", set())},
    ),
    Case(
        "4-9 - volume bound by user to claim bound somewhere else",
        [new_volume("volume4-9", "10Gi", CLAIM_UID, "claim4-9", "Bound")],
        [new_claim("claim4-9", "1Gi", "volume4-9-x", "Bound")],
        "volume:volume4-9",
        {"volume4-9": ("Available", "claim4-9", "", set())},
    ),
    Case(
        "4-10 - volume bound to claim with mismatched volumeMode (VolumeMismatch on both)",
        [new_volume("volume4-10", "10Gi", CLAIM_UID, "claim4-10", "Bound", "Retain", B, volumeMode="Block")],
        [new_claim("claim4-10", "1Gi")],
        "volume:volume4-10",
        {"volume4-10": ("Bound", "claim4-10", "claim", {B})},
        {"claim4-10": ("Pending", "", set())},
        ["Warning VolumeMismatch", "Warning VolumeMismatch"],
    ),
    # provision_test.go (every provisioner external here) and the WaitForFirstConsumer branch.
    Case(
        "11-? provision: external provisioner annotates the claim (provisionClaimOperationExternal)",
        [],
        [new_claim("claim11-1", "1Gi", cls="gold")],
        "claim:claim11-1",
        {},
        {
            "claim11-1": (
                "Pending",
                "",
                {"volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner"},
            )
        },
        ["Normal ExternalProvisioning"],
        others=[storage_class("gold", "csi.kubeplane.io")],
    ),
    Case(
        "11-8 provision: unknown class (ProvisioningFailed, claim left alone)",
        [],
        [new_claim("claim11-8", "1Gi", cls="non-existing")],
        "claim:claim11-8",
        {},
        {"claim11-8": ("Pending", "", set())},
        ["Warning ProvisioningFailed"],
    ),
    Case(
        "WaitForFirstConsumer: no selected-node, no pod (emitEventForUnboundDelayBindingClaim)",
        [new_volume("volume-wffc", "1Gi", cls="local")],
        [new_claim("claim-wffc", "1Gi", cls="local")],
        "claim:claim-wffc",
        {"volume-wffc": ("Available", "", "", set())},
        {"claim-wffc": ("Pending", "", set())},
        ["Normal WaitForFirstConsumer"],
        others=[storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")],
    ),
    # delete_test.go / recycle_test.go
    Case(
        "8-? delete: externally provisioned volume left to its provisioner",
        [
            new_volume(
                "volume8-1",
                "1Gi",
                "uid8-1",
                "claim8-1",
                "Bound",
                "Delete",
                B,
                csi={"driver": "csi.kubeplane.io", "volumeHandle": "h"},
            )
        ],
        [],
        "volume:volume8-1",
        {"volume8-1": ("Released", "claim8-1", "uid8-1", {B})},
    ),
    Case(
        "8-4 - volume has no deleter plugin (VolumeFailedDelete, Failed)",
        [new_volume("volume8-4", "1Gi", "uid8-4", "claim8-4", "Bound", "Delete", B)],
        [],
        "volume:volume8-4",
        {"volume8-4": ("Failed", "claim8-4", "uid8-4", {B})},
        {},
        ["Warning VolumeFailedDelete"],
    ),
    Case(
        "6-? recycle: no recycler plugin (VolumeFailedRecycle, Failed)",
        [new_volume("volume6-1", "1Gi", "uid6-1", "claim6-1", "Bound", "Recycle", B)],
        [],
        "volume:volume6-1",
        {"volume6-1": ("Failed", "claim6-1", "uid6-1", {B})},
        {},
        ["Warning VolumeFailedRecycle"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_sync(case: Case) -> None:
    """binder_test.go TestSync and the provision/delete/recycle tables (one call, then compare)."""
    uids: dict[str, str] = {}

    async def setup(env: Env[PersistentVolumeController]) -> None:
        uids.update(await put(env, case.claims, case.volumes, case.others))

    async with harness.running(PersistentVolumeController, setup=setup, run=False) as env:
        ctrl = env.controller
        ctrl.initialize_caches()
        kind, name = case.call.split(":")
        try:
            if kind == "claim":
                claim = ctrl.claim_lister.get(NS, name)
                assert claim is not None
                await ctrl.sync_claim(claim)
            else:
                volume = ctrl.volume_lister.get(None, name)
                assert volume is not None
                await ctrl.sync_volume(volume)
        except Exception:
            assert case.error, case.name
        else:
            assert not case.error, f"{case.name}: expected an error"
        await ctrl.operations.wait_idle()
        for vname, (phase, ref_name, ref_uid, anns) in case.want_volumes.items():
            got = await get_volume(env, vname)
            assert got["status"].get("phase") == phase, (case.name, vname, got["status"])
            ref = got["spec"].get("claimRef") or {}
            assert (ref.get("name") or "") == ref_name, (case.name, vname, ref)
            want_uid = uids.get(ref_name, "?") if ref_uid == "claim" else ref_uid
            assert (ref.get("uid") or "") == want_uid, (case.name, vname, ref)
            assert set(got["metadata"].get("annotations") or {}) == anns, (case.name, vname)
        for cname, (phase, volume_name, anns) in case.want_claims.items():
            got = await get_claim(env, cname)
            assert got["status"].get("phase") == phase, (case.name, cname, got["status"])
            assert (got["spec"].get("volumeName") or "") == volume_name, (case.name, cname)
            assert set(got["metadata"].get("annotations") or {}) == anns, (case.name, cname)
            if phase == "Bound" and not case.error:
                volume = await get_volume(env, volume_name)
                assert got["status"]["capacity"] == volume["spec"]["capacity"], case.name
                assert got["status"]["accessModes"] == volume["spec"]["accessModes"], case.name
        got_events = [f"{t} {r}" for t, r, _ in await events(env)]
        assert got_events == case.want_events, case.name
