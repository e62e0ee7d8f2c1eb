"""Random operation sequences on each backend against a plain model of etcd's MVCC semantics.

The model keeps a full snapshot of the key space per revision (tiny cases, so copying is fine) and the list of
events. After every step the store's current state must equal the model's; at teardown watchers opened at
random moments and a watch resumed from a random non-compacted revision must satisfy the watch validators.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from kubeplane.store.base import BaseStore
from kubeplane.store.interface import (
    Compacted,
    Conflict,
    Event,
    EventType,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
)
from kubeplane.store.watch import StoreWatch

from .conftest import make_store
from .validators import collect, expected_events, validate_all

T = TypeVar("T")
KEYS = st.sampled_from(["/a/1", "/a/2", "/a/10", "/b/1", "/b/2", "/c"])
PREFIXES = st.sampled_from(["", "/a/", "/a/1", "/b/", "/c", "/z"])
VALUES = st.binary(max_size=8)


class Model:
    def __init__(self) -> None:
        self.states: list[dict[str, KeyValue]] = [{}]  # states[r] = key space at revision r
        self.events: list[Event] = []
        self.compacted = 0

    @property
    def revision(self) -> int:
        return len(self.states) - 1

    @property
    def current(self) -> dict[str, KeyValue]:
        return self.states[-1]

    def apply(self, event: Event) -> None:
        state = dict(self.current)
        if event.type is EventType.PUT:
            state[event.kv.key] = event.kv
        else:
            del state[event.kv.key]
        self.states.append(state)
        self.events.append(event)


class StoreMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="kubeplane-store-"))
        self.store: BaseStore = make_store(self.backend, self.dir)
        self.model = Model()
        self.watches: list[tuple[StoreWatch, str, int]] = []

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    # -- writes -----------------------------------------------------------------------------------------------

    @rule(key=KEYS, value=VALUES)
    def create(self, key: str, value: bytes) -> None:
        current = self.model.current.get(key)
        if current is not None:
            with pytest.raises(KeyExists) as err:
                self.run(self.store.create(key, value))
            assert err.value.current == current
            return
        rev = self.model.revision + 1
        kv = self.run(self.store.create(key, value))
        assert kv == KeyValue(key, value, rev, rev, 1)
        self.model.apply(Event(EventType.PUT, kv, None))

    @rule(key=KEYS, value=VALUES, compare=st.sampled_from(["none", "match", "stale"]))
    def update(self, key: str, value: bytes, compare: str) -> None:
        current = self.model.current.get(key)
        expected = None
        if current is not None and compare != "none":
            expected = current.mod_revision if compare == "match" else current.mod_revision - 1
        elif current is None and compare == "stale":
            expected = 1
        if current is None:
            with pytest.raises(NotFound):
                self.run(self.store.update(key, value, expected_mod_revision=expected))
            return
        if compare == "stale":
            with pytest.raises(Conflict):
                self.run(self.store.update(key, value, expected_mod_revision=expected))
            return
        rev = self.model.revision + 1
        kv = self.run(self.store.update(key, value, expected_mod_revision=expected))
        assert kv == KeyValue(key, value, current.create_revision, rev, current.version + 1)
        self.model.apply(Event(EventType.PUT, kv, current))

    @rule(key=KEYS, compare=st.sampled_from(["none", "match", "stale"]))
    def delete(self, key: str, compare: str) -> None:
        current = self.model.current.get(key)
        if current is None:
            with pytest.raises(NotFound):
                self.run(self.store.delete(key))
            return
        if compare == "stale":
            with pytest.raises(Conflict):
                self.run(self.store.delete(key, expected_mod_revision=current.mod_revision + 1))
            return
        expected = current.mod_revision if compare == "match" else None
        rev = self.model.revision + 1
        deleted = self.run(self.store.delete(key, expected_mod_revision=expected))
        assert (deleted.revision, deleted.prev_kv) == (rev, current)
        self.model.apply(Event(EventType.DELETE, KeyValue(key, b"", 0, rev, 0), current))

    @precondition(lambda self: self.model.revision > self.model.compacted)
    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        revision = data.draw(st.integers(self.model.compacted + 1, self.model.revision))
        self.run(self.store.compact(revision))
        self.model.compacted = revision

    # -- reads ------------------------------------------------------------------------------------------------

    @rule(key=KEYS, data=st.data())
    def get(self, key: str, data: st.DataObject) -> None:
        revision = data.draw(st.none() | st.integers(0, self.model.revision + 1))
        if revision is not None and revision > self.model.revision:
            with pytest.raises(FutureRevision):
                self.run(self.store.get(key, revision=revision))
        elif revision is not None and revision < self.model.compacted:
            with pytest.raises(Compacted):
                self.run(self.store.get(key, revision=revision))
        else:
            state = self.model.states[self.model.revision if revision is None else revision]
            assert self.run(self.store.get(key, revision=revision)) == state.get(key)

    @rule(prefix=PREFIXES, limit=st.integers(0, 3), start=st.none() | KEYS, data=st.data())
    def range(self, prefix: str, limit: int, start: str | None, data: st.DataObject) -> None:
        revision = data.draw(st.none() | st.integers(self.model.compacted, self.model.revision))
        state = self.model.states[self.model.revision if revision is None else revision]
        want = sorted(
            (kv for k, kv in state.items() if k.startswith(prefix) and (start is None or k >= start)),
            key=lambda kv: kv.key,
        )
        result = self.run(self.store.range(prefix, revision=revision, limit=limit, start_key=start))
        page = want[:limit] if limit else want
        assert result.kvs == page
        assert result.count == len(want)
        assert result.more == (len(page) < len(want))
        assert result.revision == (self.model.revision if revision is None else revision)

    # -- watches ----------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.watches) < 4)
    @rule(prefix=PREFIXES, data=st.data())
    def open_watch(self, prefix: str, data: st.DataObject) -> None:
        start = data.draw(st.none() | st.integers(1, self.model.revision + 2))
        if start is not None and start <= self.model.compacted:
            with pytest.raises(Compacted):
                self.store.watch(prefix, start_revision=start)
            return
        watch = self.store.watch(prefix, start_revision=start)
        self.watches.append((watch, prefix, self.model.revision + 1 if start is None else start))

    @invariant()
    def current_state_matches(self) -> None:
        assert self.store.revision == self.model.revision
        assert self.store.compacted_revision == self.model.compacted
        result = self.run(self.store.range(""))
        assert result.kvs == sorted(self.model.current.values(), key=lambda kv: kv.key)

    def teardown(self) -> None:
        try:
            history = self.model.events
            for watch, prefix, start in self.watches:
                self._check_watch(watch, prefix, start, history)
            if self.model.revision > self.model.compacted:
                start = self.model.revision // 2 + 1
                if start > self.model.compacted:
                    self._check_watch(self.store.watch("/", start_revision=start), "/", start, history)
            self.run(self.store.close())
        finally:
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _check_watch(self, watch: StoreWatch, prefix: str, start: int, history: list[Event]) -> None:
        want = len(expected_events(history, prefix=prefix, start=start))
        try:
            events = self.run(collect(watch, want))
        except Compacted:
            # a replaying watcher may legitimately lose to a compaction that overtook it
            assert self.model.compacted >= start
            return
        validate_all(events, history, prefix=prefix, start=start)


def _machine(backend: str, examples: int, *, steps: int = 40) -> type[StoreMachine]:
    machine = type(f"StoreMachine_{backend}_{examples}", (StoreMachine,), {"backend": backend})
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    return machine


TestMemoryStore = _machine("memory", 150).TestCase
TestSqliteStore = _machine("sqlite", 60).TestCase
TestSqliteFsyncStore = _machine("sqlite-fsync", 25).TestCase

# `make soak`: the same machines, far longer.
TestMemoryStoreSoak = pytest.mark.soak(_machine("memory", 3_000, steps=100).TestCase)
TestSqliteStoreSoak = pytest.mark.soak(_machine("sqlite", 1_000, steps=100).TestCase)
TestSqliteFsyncStoreSoak = pytest.mark.soak(_machine("sqlite-fsync", 300, steps=100).TestCase)
