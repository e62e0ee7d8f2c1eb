"""The PV protection controller over the in-memory API server (upstream
pkg/controller/volume/pvprotection/pv_protection_controller_test.go TestPVProtectionController: the cases named in
each test's docstring), with the StorageObjectInUseProtection admission adding the finalizer on create."""

from __future__ import annotations

from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.pv_protection import PV_PROTECTION_FINALIZER, PVProtectionController
from tests.controllers import harness
from tests.controllers.harness import eventually, settle

Env = harness.Env[PVProtectionController]


def volume(name: str = "pv1") -> Obj:
    spec = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


async def _state(env: Env, name: str = "pv1") -> Obj | None:
    try:
        return await env.client.get(env.res("persistentvolumes"), name)
    except NotFoundError:
        return None


async def _gone(env: Env) -> bool:
    return await _state(env) is None


async def _set_phase(env: Env, phase: str) -> None:
    current = await _state(env)
    assert current is not None
    current["status"] = {"phase": phase}
    await env.client.update(env.res("persistentvolumes"), current, subresource="status")


async def test_unbound_deleted_pv_loses_finalizer() -> None:
    """ "deleted PV with finalizer + not bound -> finalizer is removed" (a new PV is Pending)."""
    async with harness.running(PVProtectionController) as env:
        created = await env.client.create(env.res("persistentvolumes"), volume())
        assert created["metadata"]["finalizers"] == [PV_PROTECTION_FINALIZER]
        await env.client.delete(env.res("persistentvolumes"), "pv1")
        await eventually(lambda: _gone(env), "the volume deleted")


async def test_bound_pv_is_kept_until_released() -> None:
    """ "deleted PV with finalizer + bound -> finalizer is not removed", then released -> removed (the update
    queues it again)."""
    async with harness.running(PVProtectionController) as env:
        await env.client.create(env.res("persistentvolumes"), volume())
        await _set_phase(env, "Bound")
        await env.client.delete(env.res("persistentvolumes"), "pv1")
        await settle(200)
        kept = await _state(env)
        assert kept is not None
        assert kept["metadata"]["deletionTimestamp"]
        await _set_phase(env, "Released")
        await eventually(lambda: _gone(env), "the volume deleted once released")


async def test_missing_finalizer_is_added() -> None:
    """ "PV without finalizer -> finalizer is added"."""
    async with harness.running(PVProtectionController) as env:
        created = await env.client.create(env.res("persistentvolumes"), volume())
        created["metadata"]["finalizers"] = []
        await env.client.update(env.res("persistentvolumes"), created)

        async def has_finalizer() -> bool:
            state = await _state(env)
            return state is not None and state["metadata"].get("finalizers") == [PV_PROTECTION_FINALIZER]

        await eventually(has_finalizer, "the finalizer added back")
