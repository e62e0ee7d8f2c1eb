"""The DRA manager's checkpoint (upstream pkg/kubelet/cm/dra/state v1.37: checkpoint.go's ``{"Data", "Checksum"}``
with CRC-32 of Data, CheckpointData kind DRACheckpoint / checkpoint.dra.kubelet.k8s.io/v1, ClaimInfoState's Go field
names; manager.go's syncToCheckpoint after every change and its reconcile loop for pods gone while down): a
restarted fleet keeps running pods' claims prepared without preparing them again, unprepares them when the pods are
deleted, and drops the claims of pods deleted while it was down."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.dra import checkpoint
from kubeplane.kubelet.dra.checkpoint import CheckpointError, PreparedClaim
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from tests.kubelet.dra.test_prepare import CONFIG, allocation, claim, dra_pod, reserved
from tests.kubelet.harness import Env


def test_the_file_is_upstreams_checkpoint_format() -> None:
    """checkpoint.go NewCheckpoint: Data is CheckpointData's JSON, Checksum its crc32.ChecksumIEEE; PodUIDs is a
    sets.Set (a JSON object of empty objects); DriverState maps a driver to its Devices."""
    cache = {"default/c1": PreparedClaim("uid-c1", {"pod-b", "pod-a"}, [("gpu.example.com", "node01", "gpu-0")])}
    blob = checkpoint.encode(cache)
    outer = json.loads(blob)
    assert set(outer) == {"Data", "Checksum"}
    assert outer["Checksum"] == zlib.crc32(outer["Data"].encode())
    assert json.loads(outer["Data"]) == {
        "kind": "DRACheckpoint",
        "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
        "Entries": [
            {
                "ClaimUID": "uid-c1",
                "ClaimName": "c1",
                "Namespace": "default",
                "PodUIDs": {"pod-a": {}, "pod-b": {}},
                "DriverState": {
                    "gpu.example.com": {
                        "Devices": [
                            {"PoolName": "node01", "DeviceName": "gpu-0", "RequestNames": None, "CDIDeviceIDs": None}
                        ]
                    }
                },
            }
        ],
    }
    assert checkpoint.decode(blob) == cache


def test_a_corrupt_checkpoint_is_refused(tmp_path: Path) -> None:
    """checkpoint.go VerifyChecksum: a Data/Checksum mismatch is a CorruptCheckpointError."""
    checkpoint.store(tmp_path, "node01", {"default/c": PreparedClaim("u", {"p"}, [])})
    path = tmp_path / "node01" / "dra_manager_state"
    outer = json.loads(path.read_bytes())
    path.write_text(json.dumps({**outer, "Data": outer["Data"].replace('"c"', '"d"')}))
    with pytest.raises(CheckpointError, match="failed to get checkpoint dra_manager_state: checkpoint is corrupted"):
        checkpoint.load(tmp_path, "node01")
    assert checkpoint.load(tmp_path, "node02") == {}  # none yet: an empty cache (upstream GetOrCreate)


def _fleet(client: LocalClient, clock: FakeClock, state_dir: Path) -> Fleet:
    options = FleetOptions(state_dir=state_dir)
    return Fleet(client, parse_node_config(CONFIG), clock=clock, rng=random.Random(1), options=options)


async def _running_pod_with_claim(env: Env, pod_name: str, claim_name: str, device: str) -> None:
    await claim(env, claim_name)
    pod = await dra_pod(env, pod_name, claim_name)
    status = {"allocation": allocation("node01", device), "reservedFor": reserved(pod)}
    res = env.client.resource("resourceclaims")
    current = await env.client.get(res, claim_name, namespace="default")
    await env.client.update(res, {**current, "status": status}, namespace="default", subresource="status")
    await env.clock.advance(60)
    await env.until(lambda: env.is_phase(pod_name, "Running"), f"{pod_name} running", step=1.0)


async def test_restarted_fleet_keeps_claims_prepared_and_unprepares_on_delete(tmp_path: Path) -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    first = _fleet(client, clock, tmp_path)
    await first.start()
    env = Env(client, clock, first)
    try:
        await _running_pod_with_claim(env, "p1", "c1", "gpu-0")
        await _running_pod_with_claim(env, "p2", "c2", "gpu-1")
        prepared = first.dra.prepared_devices("node01")
        assert set(prepared) == {"default/c1", "default/c2"}
        assert set(checkpoint.load(tmp_path, "node01")) == {"default/c1", "default/c2"}
    finally:
        await first.stop()

    # while the fleet is down, p2 is force-deleted: the restarted kubelet must drop (unprepare) its claim
    await client.delete(client.resource("pods"), "p2", namespace="default", grace_period_seconds=0)

    second = _fleet(client, clock, tmp_path)
    calls: list[str] = []
    original = second.dra.prepare

    async def counting(node: str, pod: Any) -> None:
        calls.append(pod["metadata"]["name"])
        await original(node, pod)

    second.dra.prepare = counting  # type: ignore[method-assign]
    await second.start()
    env = Env(client, clock, second)
    try:
        assert second.dra.prepared_devices("node01") == {"default/c1": prepared["default/c1"]}
        assert set(checkpoint.load(tmp_path, "node01")) == {"default/c1"}
        await clock.advance(60)
        assert await env.phase("p1") == "Running"
        assert calls == []  # the adopted pod's claim is not prepared a second time

        await client.delete(env.pods, "p1", namespace="default")

        async def unprepared() -> bool:
            return second.dra.prepared_devices("node01") == {}

        await env.until(unprepared, "p1's claim unprepared after the restart", step=1.0)
        assert checkpoint.load(tmp_path, "node01") == {}
    finally:
        await second.stop()
        await client.close()
