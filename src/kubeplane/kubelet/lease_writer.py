"""The fleet's trusted lease renewal: a node Lease renewed by one compare-and-put of a prebuilt object.

A simulated fleet of a thousand nodes renews a hundred Leases per simulated second (upstream's kubelet renews
every ``0.25 * leaseDurationSeconds`` = 10 s, ``nodelease.NewController``). Through the API each renewal is a
full update (body copies, defaulting, validation, managed-fields bookkeeping, admission) although only
``spec.renewTime`` changes. :class:`LeaseWriter` writes the object that full update would store, directly:

* **What is written** is the last Lease the node wrote (kept by the caller, with its ``resourceVersion``) with
  ``spec.renewTime`` set to now and the managed-fields entry's ``time`` set to the registry's ``now()`` in
  ``metav1.Time`` form, exactly what the API server's ``fieldmanager.track_update`` records for an Update by the
  manager that already owns ``spec.renewTime``: the owned field set does not change, only its time.
* **Compare-and-put** (:meth:`LocalClient.put_prepared`): the store write names the kept ``resourceVersion`` as
  the expected mod revision, so a Lease changed by anyone else since (another manager, a delete and re-create) is
  never overwritten: the writer answers None and the caller drops its copy and goes the full API path, as
  upstream's kubelet re-reads on a conflict. Watchers see the write as any other: one MODIFIED event at a new
  resourceVersion.
* **Only when nothing is skipped that could judge the write**: the client is an in-process
  :class:`~kubeplane.client.local.LocalClient` of the server's own trusted caller (``user`` None: no
  authorization, no NodeRestriction; a node writing as ``system:node:<name>`` always goes the full path), the
  Lease has exactly one managed-fields entry, an ``Update`` without subresource by that client's manager owning
  ``spec.renewTime``. Validation has nothing to say: holder, duration and owner are those the full path
  validated when it wrote the kept copy, and a ``MicroTime`` from the clock is always valid.

Invariant (pinned by tests/kubelet/test_lease_writer.py): every renewal stores and returns exactly what the full
update of :meth:`NodeStatus.renew_lease` would.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import orjson

from kubeplane.api.resources import ResourceInfo
from kubeplane.client.interface import Client
from kubeplane.client.local import LocalClient

from .node import NODE_LEASE_NAMESPACE
from .state import Obj

LOCAL_MANAGER = "kubeplane"
"""The field manager of an in-process write (the dispatcher's ``Call.manager`` default)."""


class Stamps:
    """``metav1.Time`` and ``MicroTime`` strings of epoch floats, exactly as :func:`kubeplane.api.meta.format_time`
    and :func:`~kubeplane.api.meta.format_micro_time` give them, the ``strftime`` of the date and time of day done
    once per second (a hundred renewals share each simulated second; ``strftime`` was a tenth of a renewal).

    The split into whole second and microseconds is CPython's own for ``datetime.fromtimestamp`` (``modf``, the
    fraction times 10**6 rounded half to even, a carry into the next second), done with float arithmetic instead
    of building a ``datetime`` per call."""

    def __init__(self) -> None:
        self._second: int | None = None
        self._prefix = ""

    def _split(self, t: float) -> tuple[str, int]:
        fraction, whole = math.modf(t)
        micro = round(fraction * 1e6)  # round() is half to even, as _PyTime_DoubleToDenominator
        if micro >= 1_000_000:
            micro -= 1_000_000
            whole += 1.0
        elif micro < 0:  # before the epoch: modf's fraction is negative
            micro += 1_000_000
            whole -= 1.0
        second = int(whole)
        if second != self._second:
            self._second, self._prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return self._prefix, micro

    def time(self, t: float) -> str:
        """``format_time(t)``: whole seconds, truncated."""
        return self._split(t)[0] + "Z"

    def pair(self, at: float, micro_at: float) -> tuple[str, str]:
        """``(time(at), micro_time(micro_at))``, split once when both are the same moment (a renewal ahead)."""
        prefix, micro = self._split(micro_at)
        stamp = prefix + "Z" if at == micro_at else self.time(at)
        return stamp, f"{prefix}.{micro:06d}Z"

    def micro_time(self, t: float) -> str:
        """``format_micro_time(t)``: six fractional digits."""
        prefix, micro = self._split(t)
        return f"{prefix}.{micro:06d}Z"


def trusted_local(client: Client) -> LocalClient | None:
    """``client`` when it is the in-process client of the server's own trusted caller, else None."""
    if isinstance(client, LocalClient) and client.user is None:
        return client
    return None


def renewable(lease: Obj) -> bool:
    """Whether ``lease`` (as last written by its node) is one the cheap renewal reproduces exactly."""
    meta = lease.get("metadata") or {}
    entries = meta.get("managedFields") or []
    if len(entries) != 1 or not meta.get("resourceVersion"):
        return False
    entry = entries[0]
    return bool(
        entry.get("manager") == LOCAL_MANAGER
        and entry.get("operation") == "Update"
        and not entry.get("subresource")
        and "f:renewTime" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    )


class LeaseWriter:
    """Renews node Leases through ``client``'s store (see the module docstring)."""

    def __init__(self, client: LocalClient, *, stamps: Stamps | None = None) -> None:
        """``stamps``: shared by the writers of a fleet, so its cache of the current second serves every node."""
        self._client = client
        self._leases = client.resource("leases")
        self._stamps = stamps or Stamps()
        self._last: Obj | None = None  # the last Lease this writer stored: renewable, as what it renewed was
        self._key: str | None = None  # the Lease's storage key (renewals never rename it)
        self._template: tuple[bytes, bytes, bytes, bool] | None = None  # see _build_template
        self._template_for: Obj | None = None  # the stored Lease the template is valid for
        self._body: tuple[Obj, bytes] | None = None  # the last prepared renewal and its stored bytes

    def can_renew(self, lease: Obj) -> bool:
        """:func:`renewable`, answered at once for the Lease this writer last stored."""
        return lease is self._last or renewable(lease)

    @property
    def client(self) -> LocalClient:
        return self._client

    @property
    def resource(self) -> ResourceInfo:
        return self._leases

    def key(self, lease: Obj) -> str:
        """``lease``'s storage key, computed once per writer (its node's Lease has one name)."""
        if self._key is None:
            self._key = self._leases.key(str(lease["metadata"]["name"]), NODE_LEASE_NAMESPACE)
        return self._key

    def prepare(self, lease: Obj, now: float, *, stamped_at: float | None = None) -> Obj | None:
        """What :meth:`renew` would store for ``lease`` at ``now``: ``lease`` itself when the full update would
        find nothing changed (nothing to write), None when the cheap path does not apply."""
        if not self.can_renew(lease):
            return None
        meta = lease["metadata"]
        server_now = self._client.registry.now() if stamped_at is None else stamped_at
        stamp, renew = self._stamps.pair(server_now, now)
        if lease["spec"].get("renewTime") == renew and meta["managedFields"][0].get("time") == stamp:
            return lease  # the full update would find nothing changed and write nothing
        entry: dict[str, Any] = {**meta["managedFields"][0], "time": stamp}
        spec = {**lease["spec"], "renewTime": renew}
        new = {**lease, "metadata": {**meta, "managedFields": [entry]}, "spec": spec}
        self._body = None
        if lease is self._template_for and self._template is not None:
            head, middle, tail, stamp_first = self._template
            first, second = (stamp, renew) if stamp_first else (renew, stamp)
            self._body = (new, b"".join((head, first.encode(), middle, second.encode(), tail)))
        return new

    def body(self, new: Obj) -> bytes | None:
        """The stored bytes of ``new`` (what :meth:`LocalClient.put_prepared` would encode: ``new`` without its
        ``resourceVersion``), when :meth:`prepare` made it from a Lease of the template's chain; else None."""
        body = self._body
        return body[1] if body is not None and body[0] is new else None

    def stored(self, lease: Obj) -> None:
        """``lease`` (the last :meth:`prepare` d renewal) was stored: the next renewal starts from it."""
        chained = self._body is not None  # made from the template: the template holds for it too
        self._last, self._body = lease, None
        if not chained:
            self._template = _build_template(lease)
        self._template_for = lease

    async def renew(self, lease: Obj, now: float, *, stamped_at: float | None = None) -> Obj | None:
        """``lease`` renewed at ``now`` (the node's clock) and stored; None when the cheap path does not apply
        or the stored Lease is no longer ``lease`` (the caller then takes the full API path). ``stamped_at``:
        the API server's time of the write, for a renewal written ahead of its moment (default: the registry's
        ``now()``, what the full update would record)."""
        new = self.prepare(lease, now, stamped_at=stamped_at)
        if new is None or new is lease:
            return new
        stored = await renew_many([(self, new)])
        return stored[0] if stored else None


_STAMP, _RENEW = "\x01time", "\x01renewTime"  # never in a Lease: JSON escapes them


def _build_template(lease: Obj) -> tuple[bytes, bytes, bytes, bool] | None:
    """``lease``'s stored bytes split around its managed-fields ``time`` and ``renewTime`` strings:
    ``(head, middle, tail, time first)``. A renewal made from ``lease`` (or from one made from it, and so on:
    :meth:`LeaseWriter.prepare` changes those two strings and the ``resourceVersion`` only) is stored as
    ``head + first + middle + second + tail``, byte for byte what encoding it gives, as both are plain ASCII
    (digits, ``-:.TZ``) that JSON does not escape. None when the split is not clean."""
    meta = {k: v for k, v in lease["metadata"].items() if k != "resourceVersion"}
    meta["managedFields"] = [{**meta["managedFields"][0], "time": _STAMP}]
    raw = orjson.dumps({**lease, "metadata": meta, "spec": {**lease["spec"], "renewTime": _RENEW}})
    stamp, renew = orjson.dumps(_STAMP), orjson.dumps(_RENEW)
    if raw.count(stamp) != 1 or raw.count(renew) != 1:
        return None
    i, j = raw.index(stamp), raw.index(renew)
    (a, a_len), (b, b_len) = sorted([(i, len(stamp)), (j, len(renew))])
    return raw[:a] + b'"', b'"' + raw[a + a_len : b] + b'"', b'"' + raw[b + b_len :], i < j


async def renew_many(renewals: Sequence[tuple[LeaseWriter, Obj]]) -> list[Obj]:
    """Store prepared renewals ``(writer, lease)`` (each from :meth:`LeaseWriter.prepare`, not the unchanged
    Lease) in order as one store batch (:meth:`LocalClient.put_prepared_many`): the stored Leases of the leading
    ones written, stopping before the first refused (its Lease changed meanwhile) or the first of another registry
    (a batch is one store's)."""
    if not renewals:
        return []
    client = renewals[0][0].client
    registry = client.registry
    same = 0
    while same < len(renewals) and renewals[same][0].client.registry is registry:
        same += 1
    batch = renewals[:same]
    stored = await client.put_prepared_many(
        batch[0][0].resource,
        [lease for _, lease in batch],
        namespace=NODE_LEASE_NAMESPACE,
        keys=[writer.key(lease) for writer, lease in batch],
        bodies=[writer.body(lease) for writer, lease in batch],
    )
    for (writer, _), lease in zip(batch, stored, strict=False):
        writer.stored(lease)
    return stored


async def renew_built(renewals: Sequence[tuple[LeaseWriter, Obj, float]]) -> list[Obj] | None:
    """Renewals written ahead as columns: each ``(writer, lease, now)`` renewed at epoch ``now`` and stamped at
    ``now`` (:meth:`LeaseWriter.renew` with ``stamped_at=now``), in order, as one store batch, each Lease built
    once (:meth:`LocalClient.put_built_many`): its stored bytes from its writer's template, its object with its
    new ``resourceVersion`` after the store wrote it. The stored bytes, revisions, objects and watch events are
    exactly those of :meth:`LeaseWriter.prepare` and :func:`renew_many` (pinned by tests/kubelet/test_lease_writer.py).

    Answers the Leases after the leading renewals done (a Lease the full update would find unchanged is its own
    answer, nothing written), stopping before the first refused (its Lease changed meanwhile); None, nothing
    written, when one of them is not the Lease its writer last stored with a template (``resourceVersion`` last
    in its metadata) or the writers are not all one registry's: the caller then takes :func:`renew_many`."""
    if not renewals:
        return []
    client = renewals[0][0].client
    registry = client.registry
    updates: list[tuple[str, bytes, int]] = []
    written: list[tuple[Obj, str, str]] = []  # per update: the Lease renewed, its new time and renewTime
    writes: list[bool] = []  # per renewal: whether it writes (False: the full update would find it unchanged)
    for writer, lease, now in renewals:
        template = writer._template
        meta = lease["metadata"]
        if (
            template is None
            or lease is not writer._template_for
            or lease is not writer._last
            or writer.client.registry is not registry
            or next(reversed(meta)) != "resourceVersion"
        ):
            return None
        stamp, renew = writer._stamps.pair(now, now)
        if lease["spec"].get("renewTime") == renew and meta["managedFields"][0].get("time") == stamp:
            writes.append(False)
            continue
        head, middle, tail, stamp_first = template
        first, second = (stamp, renew) if stamp_first else (renew, stamp)
        body = b"".join((head, first.encode(), middle, second.encode(), tail))
        updates.append((writer.key(lease), body, int(meta["resourceVersion"])))
        written.append((lease, stamp, renew))
        writes.append(True)

    def build(k: int, resource_version: str) -> Obj:
        lease, stamp, renew = written[k]
        meta = lease["metadata"]
        entry = {**meta["managedFields"][0], "time": stamp}
        metadata = {**meta, "managedFields": [entry], "resourceVersion": resource_version}
        return {**lease, "metadata": metadata, "spec": {**lease["spec"], "renewTime": renew}}

    stored = await client.put_built_many(renewals[0][0].resource, updates, build) if updates else []
    out: list[Obj] = []
    taken = 0  # of ``stored``
    for (writer, lease, _), write in zip(renewals, writes, strict=True):
        if not write:
            out.append(lease)
            continue
        if taken == len(stored):
            break  # refused: it and those after it are untouched
        new = stored[taken]
        taken += 1
        writer._last = writer._template_for = new  # the template holds for it: only the two stamps changed
        writer._body = None
        out.append(new)
    return out
