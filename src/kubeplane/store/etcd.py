"""The Store protocol on a real etcd v3 cluster (docs/store.md, "The etcd backend").

Three modules: :mod:`kubeplane.store.etcd_client` reaches etcd (options, channel, failover, raw streams);
:mod:`kubeplane.store.etcd_feed` follows it (mapping, the feed, the ring, watchers: :class:`EtcdFeed`, the
store's state); this module is the Store protocol on top (reads, compare-and-write transactions, watch
registration, compaction). Importers use this module; it re-exports the options and errors.

Layout and mapping
------------------

* A store key ``K`` (which must start with ``store_root``, default ``/registry``, as the API server's keys do)
  is the etcd key ``key_prefix + K[len(store_root):]``. The defaults make that the identity, so the API server's
  ``/registry/pods/default/x`` is etcd's ``/registry/pods/default/x`` exactly as kube-apiserver writes it (with
  ``--etcd-prefix=/registry``); ``key_prefix="/cluster2"`` gives ``/cluster2/pods/default/x`` so two clusters
  share one etcd (no prefix may be a prefix of another's). Values are the bytes given (JSON from the API server,
  where kube-apiserver writes protobuf).
* Store revision = etcd revision - ``revision_offset``. The default 0 exposes etcd's numbers verbatim, so a
  resourceVersion is the object's etcd ``mod_revision`` exactly as with kube-apiserver (a fresh etcd is at
  revision 1). ``revision_offset=1`` makes a fresh cluster look like a fresh store at revision 0 (the backend-
  neutral store tests use it). Every store on one etcd must use the same offset.

Writes, reads and the revision
------------------------------

* create/update/delete are single transactions comparing the key's ``create_revision`` (exists or not) and, when
  given, its ``mod_revision``; the failure branch ranges the key, so Conflict/KeyExists carry the current value
  without another round trip (kube-apiserver's GuaranteedUpdate does the same).
* One background etcd watch (the *feed*) on the whole ``key_prefix`` range, with ``prev_kv`` and progress
  notifications, is the only source of events: it fills a local :class:`~kubeplane.store.watch.WatchHub` and a
  ring of recent events. :attr:`revision` advances only when the feed has delivered every event up to it (or a
  progress notification says so), so ``revision`` never runs ahead of what watchers and ``take_buffered`` can
  see. A write returns only after the feed delivered its event: when ``create`` returns, ``revision`` covers it
  and every watcher registered before has it buffered, as with the in-process backends.
* Staleness bound: writes made through *another* store on the same etcd show up in this store's ``revision``
  after one watch delivery (normally a few milliseconds); a ``range`` at the current revision is linearizable
  (etcd's quorum read) and, if etcd is ahead of the feed, asks for a progress notification and waits (up to
  ``progress_timeout``) so that afterwards ``revision >= result.revision``. :meth:`request_progress` does the
  same on demand (for bookmarks). Progress requests are sent only to an etcd whose members all answer them in
  order with events (kube-apiserver's RequestWatchProgress check: >= 3.5.13 / 3.4.31); with an older member the
  revision advances by events and etcd's periodic progress notifications only (docs/store.md).
* ``compacted_revision`` tracks compactions made through this store and every compaction etcd reports (a
  compacted range read or watch). Another store's compaction is only learned when it is hit.

Watches, the feed's resumption after member loss and its restart after compaction: :mod:`kubeplane.store.etcd_feed`.
Failover between endpoints, and which failed writes are retried: :mod:`kubeplane.store.etcd_client`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc.aio
from aetcd import rpc

from .etcd_client import ERR_COMPACTED, ERR_FUTURE, EtcdOptions, EtcdRequestError, EtcdUnavailable
from .etcd_feed import EtcdFeed, EtcdWatch
from .interface import (
    Compacted,
    Conflict,
    Deleted,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
    RangeResult,
    StoreError,
)
from .watch import DEFAULT_BUFFER_SIZE

__all__ = ["EtcdOptions", "EtcdRequestError", "EtcdStore", "EtcdUnavailable", "EtcdWatch"]


class EtcdStore(EtcdFeed):
    """The Store protocol on etcd v3; see the module docstring for the mapping and the guarantees."""

    # -- errors ------------------------------------------------------------------------------------------------

    def _revision_error(self, error: grpc.aio.AioRpcError, requested: int) -> StoreError | None:
        details = error.details() or ""
        if ERR_COMPACTED in details:
            self._compacted = max(self._compacted, requested + 1)
            return Compacted(requested, self._compacted)
        if ERR_FUTURE in details:
            return FutureRevision(requested, self._revision)
        return None

    # -- reads -------------------------------------------------------------------------------------------------

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        await self._ready()
        etcd_key = self._etcd_key(key)
        result = await self._range(etcd_key, b"", revision, 1)
        kvs = result[0]
        return self._kv(kvs[0]) if kvs else None

    async def _range(self, key: bytes, end: bytes, revision: int | None, limit: int) -> tuple[Any, int, bool, int]:
        if revision is not None and revision < self._compacted:
            raise Compacted(revision, self._compacted)
        request = rpc.RangeRequest(
            key=key, range_end=end, limit=limit, revision=0 if revision is None else revision + self._offset
        )
        try:
            response = await self._connection.call("Range", request, idempotent=True)
        except EtcdRequestError as error:
            mapped = self._revision_error(error.rpc_error, -1 if revision is None else revision)
            if mapped is not None:
                raise mapped from None
            raise
        served = self._offset_revision(response.header.revision) if revision is None else revision
        if revision is None:
            await self._catch_up_to(served)
        return response.kvs, served, response.more, response.count

    async def range(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        limit: int = 0,
        start_key: str | None = None,
    ) -> RangeResult:
        await self._ready()
        if limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        bounds = self._etcd_range(prefix)
        if bounds is not None and start_key is not None:
            if start_key.startswith(self._root):
                bounds = (max(bounds[0], self._etcd_key(start_key)), bounds[1])
            elif start_key > self._root:  # every store key starts with the root, so sorts before start_key
                bounds = None
        if bounds is None or (bounds[1] != b"\0" and bounds[0] >= bounds[1]):
            # nothing can match; still check the revision as a read would
            kvs, served, _, _ = await self._range(self._prefix_bytes + b"\xff\xff", b"", revision, 1)
            return RangeResult([], served, False, 0)
        kvs, served, more, count = await self._range(bounds[0], bounds[1], revision, limit)
        return RangeResult([self._kv(kv) for kv in kvs], served, more, count)

    # -- writes ------------------------------------------------------------------------------------------------

    def _compare(self, key: bytes, target: str, result: str, **value: int) -> Any:
        return rpc.Compare(
            key=key,
            target=rpc.Compare.CompareTarget.Value(target),
            result=rpc.Compare.CompareResult.Value(result),
            **value,
        )

    async def _txn(self, key: bytes, compares: list[Any], success: Any) -> tuple[Any, KeyValue | None, int]:
        """Run one compare-and-write; return (response, current kv on failure, the store revision)."""
        failure = rpc.RequestOp(request_range=rpc.RangeRequest(key=key))
        request = rpc.TxnRequest(compare=compares, success=[success], failure=[failure])
        response = await self._connection.call("Txn", request, idempotent=False)
        revision = self._offset_revision(response.header.revision)
        if response.succeeded:
            await self._wait_for(revision)
            return response, None, revision
        kvs = response.responses[0].response_range.kvs
        return response, (self._kv(kvs[0]) if kvs else None), revision

    async def create(self, key: str, value: bytes) -> KeyValue:
        await self._ready()
        etcd_key = self._etcd_key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=value))
        response, current, revision = await self._txn(
            etcd_key, [self._compare(etcd_key, "CREATE", "EQUAL", create_revision=0)], put
        )
        if not response.succeeded:
            assert current is not None
            raise KeyExists(key, current)
        return KeyValue(key, value, revision, revision, 1)

    def _existing(self, etcd_key: bytes, expected_mod_revision: int | None) -> list[Any]:
        compares = [self._compare(etcd_key, "CREATE", "GREATER", create_revision=0)]
        if expected_mod_revision is not None:
            etcd_revision = expected_mod_revision + self._offset
            compares.append(self._compare(etcd_key, "MOD", "EQUAL", mod_revision=etcd_revision))
        return compares

    def _failed(self, key: str, current: KeyValue | None, expected_mod_revision: int | None) -> StoreError:
        if current is None:
            return NotFound(key)
        message = f"mod_revision of {key} is {current.mod_revision}, expected {expected_mod_revision}"
        return Conflict(key, current, message)

    async def update(self, key: str, value: bytes, *, expected_mod_revision: int | None = None) -> KeyValue:
        await self._ready()
        etcd_key = self._etcd_key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=value, prev_kv=True))
        response, current, revision = await self._txn(etcd_key, self._existing(etcd_key, expected_mod_revision), put)
        if not response.succeeded:
            raise self._failed(key, current, expected_mod_revision)
        prev = response.responses[0].response_put.prev_kv
        return KeyValue(key, value, prev.create_revision - self._offset, revision, prev.version + 1)

    async def update_many(self, updates: Sequence[tuple[str, bytes, int | None]]) -> list[KeyValue]:
        """One compare-and-put transaction per update, in order, stopping at the first refused: etcd's ``Txn``
        compares all before it puts any, so one transaction could not stop after a prefix."""
        done: list[KeyValue] = []
        for key, value, expected in updates:
            try:
                done.append(await self.update(key, value, expected_mod_revision=expected))
            except (Conflict, NotFound):
                break
        return done

    async def delete(self, key: str, *, expected_mod_revision: int | None = None) -> Deleted:
        await self._ready()
        etcd_key = self._etcd_key(key)
        op = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=etcd_key, prev_kv=True))
        response, current, revision = await self._txn(etcd_key, self._existing(etcd_key, expected_mod_revision), op)
        if not response.succeeded:
            raise self._failed(key, current, expected_mod_revision)
        prev = response.responses[0].response_delete_range.prev_kvs[0]
        return Deleted(revision, self._kv(prev))

    # -- watch and compaction ----------------------------------------------------------------------------------

    def watch(self, prefix: str, *, start_revision: int | None = None, buffer_size: int | None = None) -> EtcdWatch:
        self._check_open()
        size = DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size
        if size < 1:
            raise ValueError(f"buffer_size must be at least 1, got {size}")
        if start_revision is not None:
            if start_revision < 1:
                raise ValueError(f"start_revision must be at least 1, got {start_revision}")
            if start_revision <= self._compacted:
                raise Compacted(start_revision, self._compacted)
        current = self._revision
        if start_revision is None or start_revision > current:
            start = current + 1 if start_revision is None else start_revision
            watch = EtcdWatch(store=self, prefix=prefix, buffer_size=size, start=start, catchup_to=start - 1)
        else:
            watch = EtcdWatch(store=self, prefix=prefix, buffer_size=size, start=start_revision, catchup_to=current)
        self._hub.add(watch)
        return watch

    async def compact(self, revision: int) -> None:
        """etcd's Compact at ``revision`` (non-physical unless configured); errors as the other backends."""
        await self._ready()
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        if revision <= self._compacted:
            raise Compacted(revision, self._compacted)
        request = rpc.CompactionRequest(revision=revision + self._offset, physical=self.options.physical_compaction)
        try:
            await self._connection.call("Compact", request, idempotent=True)
        except EtcdRequestError as error:
            details = error.rpc_error.details() or ""
            if ERR_COMPACTED in details:
                self._compacted = max(self._compacted, revision)
                raise Compacted(revision, self._compacted) from None
            if ERR_FUTURE in details:
                raise FutureRevision(revision, self._revision) from None
            raise
        self._compacted = max(self._compacted, revision)
