"""DRA GPUs shared through consumable capacity (kubeplane.gpu.dra): a share's milli-GPU is its dominant share over
every capacity of the device (upstream consumes each capacity of a shared device for every share: the request, the
policy's default, else the whole value -- ``calculateConsumedCapacity``), a shared device's use is the dominant share
of its shares' summed consumption, and a claim's demand is what the allocator would consume on the cluster's
shareable GPU (its ``requestPolicy`` rounding included).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubeplane.gpu.dra import (
    DraIndex,
    claim_devices,
    claim_usage,
    dominant_milli,
    request_of_specs,
    shared_device_milli,
)
from kubeplane.gpu.model import GpuRequest

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
MEMORY: Obj = {"value": "40Gi", "requestPolicy": {"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}}}
CORES: Obj = {"value": "1", "requestPolicy": {"default": "200m", "validRange": {"min": "100m", "step": "100m"}}}
GI = 2**30


def shared_slice(node: str = "n1", count: int = 2, *, multi: bool = True, cores: bool = True) -> Obj:
    capacity = {"memory": MEMORY, **({"cores": CORES} if cores else {})}
    devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": multi, "capacity": capacity} for i in range(count)]
    return {"metadata": {"name": f"{node}-s"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node}, "devices": devices}}  # fmt: skip


def spec(**requests: str) -> Obj:
    exactly: Obj = {"deviceClassName": DRIVER}
    if requests:
        exactly["capacity"] = {"requests": requests}
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def allocated(*results: Obj) -> Obj:
    status = {"allocation": {"devices": {"results": list(results)}}}
    return {"metadata": {"name": "c", "namespace": "default"}, "status": status}


def share(device: str, **consumed: str) -> Obj:
    return {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": device, "shareID": "x",
            "consumedCapacity": consumed}  # fmt: skip


def test_dominant_milli() -> None:
    capacities = {"memory": Fraction(40 * GI), "cores": Fraction(1)}
    assert dominant_milli({"memory": Fraction(10 * GI), "cores": Fraction(1, 5)}, capacities) == 250
    assert dominant_milli({"memory": Fraction(10 * GI), "cores": Fraction(1, 2)}, capacities) == 500
    assert dominant_milli({"cores": Fraction(3, 10)}, capacities) == 300  # exact: 300m of 1 is not a whole unit
    assert dominant_milli({"memory": Fraction(1)}, capacities) == 1  # at least 1
    assert dominant_milli({"other": Fraction(1)}, capacities) is None


def test_the_demand_is_what_the_allocator_would_consume() -> None:
    index = DraIndex([shared_slice()])
    assert (index.share_device is not None, index.all_shared) == (True, True)
    assert request_of_specs([spec(memory="10Gi")], index) == GpuRequest(1, 250)
    assert request_of_specs([spec(memory="12Gi")], index) == GpuRequest(1, 375)  # rounded up to 15Gi
    assert request_of_specs([spec(cores="450m")], index) == GpuRequest(1, 500)  # 500m on the 100m grid
    assert request_of_specs([spec()], index) == GpuRequest(1, 250)  # the defaults: 10Gi and 200m
    assert request_of_specs([spec(other="1")], index) == GpuRequest(1, 1000)  # a capacity it lacks: not a share
    # a cluster without shareable GPUs: a memory request is measured against the first GPU, a plain one is whole
    dedicated = DraIndex([shared_slice(multi=False)])
    assert request_of_specs([spec(memory="12Gi")], dedicated) == GpuRequest(1, 300)
    assert request_of_specs([spec()], dedicated) == GpuRequest(1, 1000)
    # some GPUs dedicated: a request naming no capacity may get a whole one
    mixed = DraIndex([shared_slice(), shared_slice("n2", multi=False)])
    assert (mixed.all_shared, request_of_specs([spec()], mixed)) == (False, GpuRequest(1, 1000))


def test_a_claims_share_counts_every_capacity() -> None:
    index = DraIndex([shared_slice()])
    claim = allocated(share("gpu-1", memory="10Gi", cores="500m"))
    assert claim_usage(claim, index) == ("n1", [(GpuRequest(1, 500), (1,))])  # cores dominate
    held = claim_devices(claim, index)
    assert held is not None
    assert (held.node, held.whole) == ("n1", ())
    full = allocated(share("gpu-0", memory="40Gi", cores="200m"))
    assert claim_usage(full, index) == ("n1", [(GpuRequest(1, 1000), (0,))])  # a share taking it all: whole
    whole = allocated({"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"})
    assert claim_usage(whole, index) == ("n1", [(GpuRequest(1, 1000), (0,))])


def test_a_shared_device_takes_what_its_shares_consume_together() -> None:
    index = DraIndex([shared_slice(cores=False), shared_slice("n2")])
    thirds = [s for c in (allocated(share("gpu-0", memory=f"{40 * GI // 3}")) for _ in range(3))
              if (h := claim_devices(c, index)) is not None for s in h.shares]  # fmt: skip
    assert shared_device_milli(thirds, index) == {0: 1000}  # not 3 x 334
    index = DraIndex([shared_slice()])
    heavy = [
        allocated(share("gpu-1", memory="15Gi", cores="200m")),
        allocated(share("gpu-1", memory="10Gi", cores="500m")),
    ]
    shares = [s for c in heavy if (h := claim_devices(c, index)) is not None for s in h.shares]
    # memory 25Gi of 40Gi (625), cores 700m of 1 (700): the device has lost 700, not 375 + 500
    assert shared_device_milli(shares, index) == {1: 700}
