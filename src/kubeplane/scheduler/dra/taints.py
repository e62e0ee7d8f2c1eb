"""Device taints and request tolerations (DRADeviceTaints; upstream ``taintPreventsAllocation`` and
``resourceclaim.ToleratesTaint``). Only the NoSchedule and NoExecute effects prevent allocation; a toleration with
operator Exists and no key tolerates every taint; an empty toleration effect matches every effect."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["taint_prevents_allocation", "tolerates"]


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def taint_prevents_allocation(device: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    tols = list(tolerations)
    for taint in device.get("taints") or ():
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tols):
            return True
    return False
