"""DynamicResources' PreBind wait for binding conditions and Unreserve's reservation removal (upstream
``dynamicresources.go`` PreBind tail, bindClaim's ``AllocationTimestamp``, Unreserve), kept apart from the plugin's
allocation code.

Invariants:

* ``allocationTimestamp`` is set once, when PreBind writes a claim whose allocation has none, from the scheduler's
  clock (upstream ``time.Now()``), whole seconds as ``metav1.Time`` serialises;
* the wait is measured on the handle's clock and reported as ``scheduler_dra_bindingconditions_allocations_total``
  and ``scheduler_dra_bindingconditions_wait_duration_seconds`` (per driver; status success, failure, timeout or
  error);
* the wait reads claims from the scheduler's informer, or the copy PreBind wrote while the informer lags (upstream's
  assume cache ``Get``); it never writes;
* Unreserve removes exactly this pod's ``reservedFor`` entry of every allocated claim reserved for it, on the
  current object (upstream patches ``{"$patch": "delete", "uid": <pod>}`` with the claim's uid as precondition):
  a claim since replaced (other uid) or gone is left alone, conflicts are retried, failures only logged ("we will
  get here again when pod scheduling is retried"). The allocation stays: PostFilter of the retry deallocates a
  claim whose binding failed or timed out.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubeplane.api.durations import parse_duration
from kubeplane.api.meta import format_time
from kubeplane.client.clock import Clock
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.plugins.dynamic_resources_binding import (
    BINDING_TIMEOUT_DEFAULT_SECONDS,
    binding_condition_drivers,
    binding_outcome,
    has_binding_conditions,
    wait_for_binding_conditions,
)
from kubeplane.scheduler.plugins.dynamic_resources_claims import is_reserved_for_pod

if TYPE_CHECKING:
    from kubeplane.scheduler.plugins.dynamic_resources import DynamicResources

__all__ = ["allocation_timestamp", "binding_timeout_from_args", "remove_reservation", "wait_for_binding"]

log = logging.getLogger(__name__)

_CONFLICT_RETRIES = 5
"""client-go's ``retry.DefaultRetry`` steps."""


def binding_timeout_from_args(args: Mapping[str, Any]) -> float:
    """The args' ``bindingTimeout`` (a Go duration string, defaulted by the config loader) in seconds."""
    raw = args.get("bindingTimeout")
    if raw in (None, ""):
        return BINDING_TIMEOUT_DEFAULT_SECONDS
    return parse_duration(str(raw)) / 1e9


def allocation_timestamp(allocation: Mapping[str, Any], clock: Clock) -> dict[str, Any]:
    """``allocation`` with ``allocationTimestamp`` set when it has none (bindClaim)."""
    out = dict(allocation)
    if not out.get("allocationTimestamp"):
        out["allocationTimestamp"] = format_time(int(clock.now()))
    return out


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class _ClaimGone(Exception):
    """A claim of the pod is neither in the informer nor assumed (upstream's assume cache ``Get`` error)."""


async def wait_for_binding(
    plugin: DynamicResources, claims: list[Mapping[str, Any]], pod: Mapping[str, Any], node_name: str
) -> Status | None:
    """PreBind's tail: nothing to do unless a claim has binding conditions; else the ``BindingConditionsPending``
    event and the wait. An error Status carries upstream's message (the framework prefixes the plugin)."""
    if not has_binding_conditions(claims):
        return None
    handle = plugin._handle
    recorder = handle.event_recorder
    if recorder is not None:
        ref = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(pod)}
        note = f"waiting for binding conditions for device on node {node_name}"
        recorder.record(ref, "Normal", "BindingConditionsPending", note, action="Scheduling")

    def current(claim: Mapping[str, Any]) -> Mapping[str, Any]:
        meta = _meta(claim)
        name, ns, uid = str(meta.get("name")), str(meta.get("namespace") or ""), str(meta.get("uid") or "")
        fresh = plugin.lookup_claim(ns, name)
        written = plugin.in_flight.assumed.get(uid)
        if written is not None and (fresh is None or _version(fresh) < _version(written)):
            return written
        if fresh is None:
            raise _ClaimGone(f'resourceclaim.resource.k8s.io "{name}" not found')
        return fresh

    drivers = binding_condition_drivers(claims)
    start = handle.clock.monotonic()
    message: str | None
    try:
        message = await wait_for_binding_conditions(
            claims, current, handle.clock, plugin.binding_timeout, plugin.stopping
        )
    except _ClaimGone as exc:
        message = str(exc)
    framework = handle.framework
    if framework is not None and framework.metrics is not None:
        seconds = handle.clock.monotonic() - start
        framework.metrics.binding_conditions(framework.profile_name, binding_outcome(message), drivers, seconds)
    return None if message is None else Status.from_error(message)


def _version(claim: Mapping[str, Any]) -> int:
    try:
        return int(_meta(claim).get("resourceVersion") or 0)
    except ValueError:
        return 0


def remove_reservation(plugin: DynamicResources, claims: Sequence[Mapping[str, Any]], pod: Mapping[str, Any]) -> None:
    """Unreserve's API part: a task on the scheduler's loop per claim to unreserve (Unreserve is synchronous)."""
    client = plugin._handle.client
    if client is None:
        return
    pod_uid = str(_meta(pod).get("uid") or "")
    todo = [c for c in claims if (c.get("status") or {}).get("allocation") and is_reserved_for_pod(pod, c)]
    for claim in todo:
        plugin.in_background(functools.partial(_unreserve, client, claim, pod_uid))


async def _unreserve(client: Any, claim: Mapping[str, Any], pod_uid: str) -> None:
    resource = client.resource("resourceclaims")
    meta = _meta(claim)
    name, ns, uid = str(meta.get("name")), str(meta.get("namespace") or ""), meta.get("uid")
    for _ in range(_CONFLICT_RETRIES):
        try:
            current = await client.get(resource, name, namespace=ns)
            if uid and _meta(current).get("uid") != uid:
                return
            status = dict(current.get("status") or {})
            reserved = [r for r in status.get("reservedFor") or () if r.get("uid") != pod_uid]
            if len(reserved) == len(status.get("reservedFor") or ()):
                return
            if reserved:
                status["reservedFor"] = reserved
            else:
                status.pop("reservedFor", None)
            await client.update(resource, {**current, "status": status}, namespace=ns, subresource="status")
            return
        except ConflictError:
            continue
        except NotFoundError:
            return
        except Exception as exc:
            log.error("unreserve resourceclaim %s/%s: %s", ns, name, exc)
            return
