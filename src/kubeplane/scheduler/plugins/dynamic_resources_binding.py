"""Binding conditions of allocated claims (upstream ``dynamicresources.go`` isClaimReadyForBinding,
isClaimTimeout, getAllocatedDeviceStatus; gates DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, both on
in v1.37).

A device with ``bindingConditions`` is allocated first and made usable later by its driver, which reports the
conditions in the claim's ``status.devices``. Filter treats an allocated claim as unavailable on every node when a
binding-failure condition is True, or when its binding conditions are not all True yet and the allocation is older
than the binding timeout -- PostFilter then deallocates it so other devices can be tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta as apimeta

__all__ = ["BINDING_TIMEOUT_DEFAULT_SECONDS", "BindingFailedError", "is_claim_ready_for_binding", "is_claim_timeout"]

BINDING_TIMEOUT_DEFAULT_SECONDS: Final = 600
"""Upstream ``BindingTimeoutDefaultSeconds``: Filter's timeout is this constant, not the plugin's bindingTimeout."""


class BindingFailedError(Exception):
    """A binding-failure condition is True (upstream's ``claim NAME binding failed: reason=R, message="M"``)."""


def _allocated_device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for device in (claim.get("status") or {}).get("devices") or ():
        if (
            device.get("device") == result.get("device")
            and device.get("driver") == result.get("driver")
            and device.get("pool") == result.get("pool")
        ):
            return device  # type: ignore[no-any-return]
    return None


def _condition(conditions: Any, kind: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the printable ASCII messages conditions carry."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_claim_ready_for_binding(claim: Mapping[str, Any]) -> bool:
    """True iff the claim is allocated and every result's binding conditions are True (results without conditions
    count as ready); raises :class:`BindingFailedError` when a binding-failure condition is True."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return False
    name = str((claim.get("metadata") or {}).get("name") or "")
    for result in (allocation.get("devices") or {}).get("results") or ():
        conditions = result.get("bindingConditions") or ()
        if not conditions:
            continue
        status = _allocated_device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or ():
            failed = _condition(status.get("conditions"), kind)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailedError(
                    f"claim {name} binding failed: reason={failed.get('reason') or ''}, "
                    f"message={_go_quote(str(failed.get('message') or ''))}"
                )
        for kind in conditions:
            cond = _condition(status.get("conditions"), kind)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def is_claim_timeout(claim: Mapping[str, Any], now: float) -> bool:
    """True when a result with binding conditions was allocated more than the default timeout before ``now``
    (epoch seconds); claims without ``allocationTimestamp`` never time out."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation or not allocation.get("allocationTimestamp"):
        return False
    try:
        allocated_at = apimeta.parse_time(str(allocation["allocationTimestamp"])).timestamp()
    except ValueError:
        return False
    for result in (allocation.get("devices") or {}).get("results") or ():
        if result.get("bindingConditions") is None:
            continue
        if allocated_at + BINDING_TIMEOUT_DEFAULT_SECONDS < now:
            return True
    return False
