"""Binding conditions of allocated claims (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, both beta
and on in v1.37; upstream ``dynamicresources.go`` isClaimReadyForBinding, isClaimTimeout, isPodReadyForBinding,
hasBindingConditions, getAllocatedDeviceStatus and the wait at the end of PreBind).

A device with ``bindingConditions`` is allocated first and made usable later by its driver, which reports the
conditions in the claim's ``status.devices[]`` entry of the device (matched by driver, pool and device; the shareID
is not compared). Invariants:

* PreBind writes the allocation with ``allocationTimestamp`` (the timeout's start, shared by every pod of the
  claim), then -- only when a result carries binding conditions -- records ``BindingConditionsPending`` and polls
  every 5 s (the first check at once) until every condition is True, a failure condition is True (``claim C
  binding failed: reason=R, message="M"``), the claim's own timeout passed (``claim C binding timeout``) or the
  plugin's ``bindingTimeout`` ran out (``device binding timeout``). Each is a PreBind error: the scheduler calls
  Unreserve (the pod leaves ``reservedFor``) and retries the pod after its backoff.
* In that retry Filter finds the claim unavailable on every node (failure condition True, or not ready and
  ``allocationTimestamp + bindingTimeout`` past) and PostFilter deallocates it, so the next attempt allocates
  afresh -- upstream's recovery path, unchanged here.
* Time is the handle's clock (a FakeClock in tests): no real sleeps are needed to drive a timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api import meta as apimeta
from kubeplane.client.clock import Clock

__all__ = [
    "BINDING_POLL_INTERVAL_SECONDS",
    "BINDING_TIMEOUT_DEFAULT_SECONDS",
    "BindingFailedError",
    "binding_condition_drivers",
    "binding_outcome",
    "has_binding_conditions",
    "is_claim_ready_for_binding",
    "is_claim_timeout",
    "wait_for_binding_conditions",
]

BINDING_TIMEOUT_DEFAULT_SECONDS: Final = 600.0
"""``DynamicResourcesBindingTimeoutDefault`` (apis/config): the plugin args' ``bindingTimeout`` default, used by
both Filter's timeout check and PreBind's wait."""

BINDING_POLL_INTERVAL_SECONDS: Final = 5.0
"""PreBind's ``wait.PollUntilContextTimeout`` interval."""

DEVICE_BINDING_TIMEOUT: Final = "device binding timeout"
CONTEXT_CANCELED: Final = "context canceled"
"""The wait's end when the scheduler stops (upstream's binding context is cancelled: ``ctx.Err()``)."""


class BindingFailedError(Exception):
    """A binding-failure condition is True, or the claim's binding timed out (upstream's error texts)."""


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


def _name(claim: Mapping[str, Any]) -> str:
    return str((claim.get("metadata") or {}).get("name") or "")


def is_claim_ready_for_binding(claim: Mapping[str, Any]) -> bool:
    """True iff the claim is allocated and every result's binding conditions are True (results without conditions
    count as ready); raises :class:`BindingFailedError` when a binding-failure condition is True."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return False
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
                    f"claim {_name(claim)} binding failed: reason={failed.get('reason') or ''}, "
                    f"message={_go_quote(str(failed.get('message') or ''))}"
                )
        for kind in conditions:
            cond = _condition(status.get("conditions"), kind)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def is_claim_timeout(claim: Mapping[str, Any], now: float, timeout: float = BINDING_TIMEOUT_DEFAULT_SECONDS) -> bool:
    """True when a result with binding conditions was allocated more than ``timeout`` seconds before ``now`` (epoch
    seconds); claims without ``allocationTimestamp`` never time out."""
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
        if allocated_at + timeout < now:
            return True
    return False


def binding_condition_drivers(claims: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Driver -> how many allocated results of ``claims`` carry binding conditions (what the
    ``scheduler_dra_bindingconditions_*`` metrics count, one per device result)."""
    out: dict[str, int] = {}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if result.get("bindingConditions"):
                driver = str(result.get("driver") or "")
                out[driver] = out.get(driver, 0) + 1
    return out


def binding_outcome(message: str | None) -> str:
    """The metrics' ``status`` of a wait that ended with ``message`` (None: ready): ``success``, ``failure`` (a
    binding-failure condition True), ``timeout`` (the plugin's or the claim's binding timeout) or ``error``
    (anything else: the claim gone, the scheduler stopping)."""
    if message is None:
        return "success"
    if message == DEVICE_BINDING_TIMEOUT or message.endswith(" binding timeout"):
        return "timeout"
    if " binding failed: " in message:
        return "failure"
    return "error"


def has_binding_conditions(claims: Sequence[Mapping[str, Any]]) -> bool:
    """Upstream ``hasBindingConditions``: some allocated claim has a result with binding conditions."""
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            continue
        for result in (allocation.get("devices") or {}).get("results") or ():
            if result.get("bindingConditions"):
                return True
    return False


def _pod_ready(
    claims: list[Mapping[str, Any]], current: Callable[[Mapping[str, Any]], Mapping[str, Any]], now: float,
    timeout: float,
) -> bool:  # fmt: skip
    """Upstream ``isPodReadyForBinding``: re-reads every claim (``claims`` gets the fresh copies, as upstream's
    ``state.claims.set``); raises :class:`BindingFailedError` on a failure condition or the claim's timeout."""
    for index, claim in enumerate(claims):
        claims[index] = fresh = current(claim)
        if not is_claim_ready_for_binding(fresh):
            if is_claim_timeout(fresh, now, timeout):
                raise BindingFailedError(f"claim {_name(fresh)} binding timeout")
            return False
    return True


async def _sleep(clock: Clock, seconds: float, stop: asyncio.Event | None) -> bool:
    """Sleep on ``clock``; False when ``stop`` is set first."""
    if stop is None:
        await clock.sleep(seconds)
        return True
    if stop.is_set():
        return False
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((sleeper, stopper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (sleeper, stopper):
            t.cancel()
    return not stop.is_set()


async def wait_for_binding_conditions(
    claims: list[Mapping[str, Any]],
    current: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    clock: Clock,
    timeout: float,
    stop: asyncio.Event | None = None,
) -> str | None:
    """PreBind's wait: None once the pod's claims are ready for binding, else the error message.

    ``current(claim)`` returns the scheduler's newest copy of a claim (informer, or the copy PreBind wrote while
    the informer lags) and raises for a claim that is gone. Checks run at once and then every 5 s strictly before
    the deadline; reaching the deadline is ``device binding timeout`` (the context's deadline); ``stop`` set (the
    scheduler stopping) ends it with ``context canceled``."""
    deadline = clock.monotonic() + timeout
    while True:
        try:
            if _pod_ready(claims, current, clock.now(), timeout):
                return None
        except BindingFailedError as exc:
            return str(exc)
        remaining = deadline - clock.monotonic()
        if remaining <= BINDING_POLL_INTERVAL_SECONDS:
            if not await _sleep(clock, max(remaining, 0.0), stop):
                return CONTEXT_CANCELED
            return DEVICE_BINDING_TIMEOUT
        if not await _sleep(clock, BINDING_POLL_INTERVAL_SECONDS, stop):
            return CONTEXT_CANCELED
