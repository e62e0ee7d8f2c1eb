"""Seed 002's configuration file with its two storage plugins, through ``kubeplane explain`` on cluster files.

``examples/seeds/scheduler-config-002.yaml`` as shipped: all four custom plugins load from the example
distribution's entry points (the issue's acceptance: "Seed 002's configuration ... loads; a claim too large for
any node's LVM volume group leaves its pod Pending with the plugin's reason in explain"), and the storage
plugins decide where a pod with claims lands: LvmVolumeCapacity on the nodes' declared volume groups,
CheckCSIStorageCapacity on the published CSIStorageCapacity objects.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import load_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.scheduler import Scheduler
from tests.examples.example_dist import declared_entry_points
from tests.examples.storage_fixtures import (
    capacity,
    claim,
    csi_driver,
    lvm_class,
    lvm_pv,
    node,
    pod,
    storage_class,
)
from tests.scheduler.test_e2e_local import Cluster

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "seeds" / "scheduler-config-002.yaml"
runner = CliRunner()
SEED_PLUGINS = ["CheckPodCountLimit", "CheckPodLimitResources", "CheckCSIStorageCapacity", "LvmVolumeCapacity"]


def _explain(tmp_path: Path, items: list[dict[str, Any]], the_pod: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(the_pod))
    args = ["explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    result = runner.invoke(app, [*args, "--config", str(CONFIG), "-o", "json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def test_the_example_distribution_declares_the_four_seed_plugins() -> None:
    assert set(declared_entry_points()) == set(SEED_PLUGINS)


def test_seed_002_configuration_loads_with_its_four_custom_plugins() -> None:
    fwk = build_profiles(load_config(CONFIG), Handle())["default-scheduler"]
    assert [p.name() for p in fwk.filter_plugins][-4:] == SEED_PLUGINS
    assert [p.name() for p in fwk.pre_filter_plugins][-1] == "CheckCSIStorageCapacity"
    # DefaultPreemption is disabled; DynamicResources' PostFilter (deallocating idle claims) stays, as upstream
    assert [p.name() for p in fwk.post_filter_plugins] == ["DynamicResources"]


LVM_REASON = "node(s) did not have enough free LVM volume group space for claim default/data"


def _lvm_cluster(size: str) -> list[dict[str, Any]]:
    return [
        node("node01", vgs={"vg0": "20Gi"}),
        node("node02", vgs={"vg0": "50Gi", "vg1": "10Gi"}),
        node("node03", vgs={"vg0": "50Gi"}),
        lvm_pv("used", "node03", "40Gi", claim_name="old", class_name="open-local-lvm"),  # node03 has 10Gi left
        lvm_class(),
        claim("data", size, "open-local-lvm"),
    ]


def test_a_claim_too_large_for_every_volume_group_leaves_the_pod_pending(tmp_path: Path) -> None:
    result = _explain(tmp_path, _lvm_cluster("60Gi"), pod("db", "data"))
    assert result["selected"] is None
    for name in ("node01", "node02", "node03"):
        assert result["nodes"][name]["filters"]["LvmVolumeCapacity"] == {
            "code": "Unschedulable",
            "reasons": [LVM_REASON],
        }
    assert f"3 {LVM_REASON}" in result["message"]


def test_a_fitting_claim_lands_where_a_volume_group_holds_it(tmp_path: Path) -> None:
    result = _explain(tmp_path, _lvm_cluster("30Gi"), pod("db", "data"))
    assert result["selected"] == "node02"  # node01's 20Gi and node03's 10Gi left are too small
    assert result["nodes"]["node01"]["filters"]["LvmVolumeCapacity"]["reasons"] == [LVM_REASON]
    assert result["nodes"]["node03"]["filters"]["LvmVolumeCapacity"]["reasons"] == [LVM_REASON]
    assert result["nodes"]["node02"]["filters"]["LvmVolumeCapacity"] == {"code": "Success"}


CSI_REASON = "node(s) did not have enough CSI storage capacity for claim default/data"
TOPO = "topology.csi.kubeplane.io/node"


def _csi_cluster(size: str) -> list[dict[str, Any]]:
    return [
        node("node01"),
        node("node02"),
        node("node03"),
        storage_class("standard", "csi.kubeplane.io"),
        csi_driver("csi.kubeplane.io"),
        capacity("cap-1", "standard", {TOPO: "node01"}, "5Gi"),
        capacity("cap-2", "standard", {TOPO: "node02"}, "40Gi"),
        capacity("cap-3", "standard", {TOPO: "node03"}, "100Gi", "8Gi"),  # maximumVolumeSize bounds one volume
        claim("data", size, "standard"),
    ]


def test_csi_capacity_decides_where_the_claim_fits(tmp_path: Path) -> None:
    result = _explain(tmp_path, _csi_cluster("10Gi"), pod("db", "data"))
    assert result["selected"] == "node02"
    for name in ("node01", "node03"):
        assert result["nodes"][name]["filters"]["CheckCSIStorageCapacity"] == {
            "code": "Unschedulable",
            "reasons": [CSI_REASON],
        }


def test_csi_capacity_too_small_everywhere(tmp_path: Path) -> None:
    result = _explain(tmp_path, _csi_cluster("41Gi"), pod("db", "data"))
    assert result["selected"] is None
    for name in ("node01", "node02", "node03"):
        assert result["nodes"][name]["filters"]["CheckCSIStorageCapacity"]["reasons"] == [CSI_REASON]


def test_csi_missing_claim_is_unresolvable_at_pre_filter(tmp_path: Path) -> None:
    result = _explain(tmp_path, _csi_cluster("1Gi")[:-1], pod("db", "data"))
    assert result["selected"] is None
    # PreFilter stops at the first rejection (upstream RunPreFilterPlugins): in seed 002's profile the in-tree
    # volume plugins run before CheckCSIStorageCapacity and refuse the missing claim with the same lister message
    rejected = {name: st for name, st in result["preFilter"].items() if st["code"] not in ("Success", "Skip")}
    assert list(rejected.values()) == [
        {"code": "UnschedulableAndUnresolvable", "reasons": ['persistentvolumeclaim "data" not found']}
    ]


async def test_live_scheduler_leaves_a_too_large_lvm_claim_pending() -> None:
    """The live path: the scheduler's informers serve the class and claims; the pod stays Pending with the reason.

    (Only the rejection is checked live: kubeplane simulates no open-local driver, so a fitting claim of this
    class would wait for provisioning at VolumeBinding's PreBind.)
    """
    client = await LocalClient.in_memory()
    scheduler = Scheduler(client, config=load_config(CONFIG), rng=random.Random(0))
    task = asyncio.ensure_future(scheduler.run())
    cluster = Cluster(client, scheduler)
    try:
        for obj in (node("node01", vgs={"vg0": "20Gi"}), node("node02", vgs={"vg0": "50Gi"})):
            await client.create(client.resource("nodes"), obj)
        await client.create(client.resource("storageclasses"), lvm_class())
        await client.create(
            client.resource("persistentvolumeclaims"), claim("data", "60Gi", "open-local-lvm"), namespace="default"
        )
        await cluster.create(pod("db", "data"))
        message = await cluster.failed_message("db")
        # DynamicResources' PostFilter reason follows (upstream joins every PostFilter plugin's; no preemption here)
        assert message == f"0/2 nodes are available: 2 {LVM_REASON}. no new claims to deallocate."
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()
