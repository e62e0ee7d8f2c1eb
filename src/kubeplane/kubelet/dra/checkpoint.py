"""The DRA manager's checkpoint: what each node's kubelet prepared survives a restart of the fleet.

Upstream (``pkg/kubelet/cm/dra/state``, v1.37) keeps the claim info cache in ``<root-dir>/dra_manager_state``,
written after every change and read when the kubelet starts, so a restarted kubelet neither prepares a running
pod's claims again nor forgets to unprepare them when the pod goes. The file is upstream's ``Checkpoint``::

    {"Data": "<CheckpointData as JSON>", "Checksum": <CRC-32 (IEEE) of Data>}

with ``CheckpointData`` = ``{"kind": "DRACheckpoint", "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
"Entries": [ClaimInfoState...]}`` and each ``ClaimInfoState`` as Go's encoding/json writes it: ``ClaimUID``,
``ClaimName``, ``Namespace``, ``PodUIDs`` (a set: ``{"<uid>": {}}``) and ``DriverState`` (driver ->
``{"Devices": [{"PoolName", "DeviceName", "RequestNames", "CDIDeviceIDs"}]}``).

A fleet has many kubelets: node ``N``'s file is ``<state_dir>/N/dra_manager_state``. Invariants: a file is replaced
atomically (written beside, then renamed), so a crash leaves the old or the new state, never half of one; a
checksum mismatch or unreadable file raises :class:`CheckpointError` (upstream's ``CorruptCheckpointError`` stops
the kubelet; the fleet logs it and starts that node empty, see :mod:`.manager`).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["CHECKPOINT_FILE", "CheckpointError", "PreparedClaim", "decode", "encode", "load", "store"]

CHECKPOINT_FILE: Final = "dra_manager_state"
"""Upstream ``draManagerStateFileName``."""
KIND: Final = "DRACheckpoint"
API_VERSION: Final = "checkpoint.dra.kubelet.k8s.io/v1"


class CheckpointError(Exception):
    """A checkpoint that cannot be used (upstream's message texts where it has one)."""


@dataclass
class PreparedClaim:
    """One claim a node prepared: its uid, the pods using it, the ``(driver, pool, device)`` results of this node."""

    uid: str
    pods: set[str] = field(default_factory=set)
    devices: list[tuple[str, str, str]] = field(default_factory=list)


def _go_json(value: Any) -> str:
    """Go's encoding/json layout: no spaces; map keys sorted (struct fields keep declaration order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode(cache: Mapping[str, PreparedClaim]) -> bytes:
    """The checkpoint file's bytes for a node's cache (claim ``namespace/name`` -> :class:`PreparedClaim`)."""
    entries = []
    for key in sorted(cache):
        entry = cache[key]
        namespace, _, name = key.partition("/")
        drivers: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for driver, pool, device in entry.devices:
            devices = drivers.setdefault(driver, {"Devices": []})["Devices"]
            devices.append({"PoolName": pool, "DeviceName": device, "RequestNames": None, "CDIDeviceIDs": None})
        entries.append(
            {
                "ClaimUID": entry.uid,
                "ClaimName": name,
                "Namespace": namespace,
                "PodUIDs": {uid: {} for uid in sorted(entry.pods)},
                "DriverState": {d: drivers[d] for d in sorted(drivers)},
            }
        )
    data = _go_json({"kind": KIND, "apiVersion": API_VERSION, "Entries": entries})
    return _go_json({"Data": data, "Checksum": zlib.crc32(data.encode())}).encode()


def decode(blob: bytes) -> dict[str, PreparedClaim]:
    """A node's cache from checkpoint bytes; :class:`CheckpointError` when corrupt."""
    try:
        outer = json.loads(blob)
        data, checksum = outer["Data"], outer["Checksum"]
        expected = zlib.crc32(str(data).encode())
        if checksum != expected:
            raise CheckpointError(f"checkpoint is corrupted (actual checksum {checksum}, expected checksum {expected})")
        inner = json.loads(data)
        if inner.get("kind") != KIND or inner.get("apiVersion") != API_VERSION:
            raise CheckpointError(f"unsupported checkpoint {inner.get('apiVersion')}/{inner.get('kind')}")
        out: dict[str, PreparedClaim] = {}
        for entry in inner.get("Entries") or ():
            devices = [
                (str(driver), str(d["PoolName"]), str(d["DeviceName"]))
                for driver, state in sorted((entry.get("DriverState") or {}).items())
                for d in state.get("Devices") or ()
            ]
            key = f"{entry['Namespace']}/{entry['ClaimName']}"
            out[key] = PreparedClaim(uid=str(entry["ClaimUID"]), pods=set(entry.get("PodUIDs") or ()), devices=devices)
        return out
    except CheckpointError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint cannot be decoded: {exc}") from None


def path_for(state_dir: Path, node: str) -> Path:
    return state_dir / node / CHECKPOINT_FILE


def load(state_dir: Path, node: str) -> dict[str, PreparedClaim]:
    """The node's checkpointed cache; empty when there is none yet (upstream ``GetOrCreate``)."""
    try:
        blob = path_for(state_dir, node).read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CheckpointError(f"failed to get checkpoint {CHECKPOINT_FILE}: {exc}") from None
    try:
        return decode(blob)
    except CheckpointError as exc:
        raise CheckpointError(f"failed to get checkpoint {CHECKPOINT_FILE}: {exc}") from None


def store(state_dir: Path, node: str, cache: Mapping[str, PreparedClaim]) -> None:
    """Replace the node's checkpoint atomically (a temporary file in the same directory, then ``os.replace``)."""
    path = path_for(state_dir, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{CHECKPOINT_FILE}.tmp")
    tmp.write_bytes(encode(cache))
    os.replace(tmp, path)
