"""The fuzz run of issue 22: hypothesis-generated requests over every served resource, verb and subresource.

Each request is checked against kube-apiserver's contract for bad input (see tests/apiserver/fuzz/harness.py):
no 5xx (upstream ``k8s.io/apiserver/pkg/endpoints/handlers``: decoding, validation and admission failures are
4xx Status answers), the server still answering ``/healthz``, nothing changed by a rejected request or an
accepted dry run (``k8s.io/apiserver/pkg/endpoints/handlers/rest.go``: ``dryRun`` values other than ``All`` are a
400, and a failed write commits nothing), and every stored object readable by the official client's typed models
(what ``encoding/json`` into the kind's Go struct requires: ``k8s.io/apimachinery/pkg/runtime/serializer/json``).

The bounded run is part of the normal suite (a fixed hypothesis seed: the same requests each time); ``make soak``
runs >= 20,000 with sizes up to the 3 MiB body limit and prints the summary (requests by status code, failures).
On a failure the first classes are shrunk by hypothesis to a minimal plan and shown with their reproducers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, start_server
from .fuzz import seeds, typed
from .fuzz.generate import ACTIONS, BOUNDED, SOAK, SUBRESOURCE_OF, Limits
from .fuzz.harness import Harness, Stats, run, shrink

SEED = 20261128
BOUNDED_REQUESTS = 1000
SOAK_REQUESTS = 20_000
SHRUNK_CLASSES = 2
SERVER_FLAGS = ("--event-ttl", "1e11")


def _pod(**spec: Any) -> dict[str, Any]:
    pod = seeds.make(seeds.served()[2], "p", "ns")
    pod["spec"].update(spec)
    return pod


# What encoding/json into the Go structs refuses (k8s.io/api/core/v1/types.go field types; Quantity's
# UnmarshalJSON in k8s.io/apimachinery/pkg/api/resource/quantity.go; []byte as base64; int32 ranges).
UNREADABLE: list[tuple[str, dict[str, Any]]] = [
    ("schedulerName-number", _pod(schedulerName=5)),
    ("args-object", _pod(containers=[{"name": "c", "args": {"a": 1}}])),
    ("priority-int32-overflow", _pod(priority=2**31)),
    ("cpu-not-a-quantity", _pod(containers=[{"name": "c", "resources": {"limits": {"cpu": "abc"}}}])),
    ("cpu-number", _pod(containers=[{"name": "c", "resources": {"limits": {"cpu": 5}}}])),
    ("containers-true", _pod(containers=True)),
    ("container-without-name", _pod(containers=[{"image": "x"}])),
    ("port-float", _pod(containers=[{"name": "c", "ports": [{"containerPort": 80.5}]}])),
]


@pytest.mark.parametrize(("case", "obj"), UNREADABLE, ids=[c for c, _ in UNREADABLE])
def test_typed_check_refuses_what_a_typed_client_cannot_read(case: str, obj: dict[str, Any]) -> None:
    assert typed.problems(obj, group="", version="v1", kind="Pod"), case


def test_typed_check_takes_every_seed_and_upstream_nulls() -> None:
    for info in seeds.served():
        if "get" not in info.verbs:  # create-only reviews are answered, never stored: nothing to read back
            continue
        obj = seeds.make(info, "s", "ns")
        assert typed.problems(obj, group=info.group, version=info.version, kind=info.kind) == [], info.kind
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "eventTime": None}
    assert typed.problems(event, group="events.k8s.io", version="v1", kind="Event") == []  # upstream writes null
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64!"}}
    assert typed.problems(secret, group="", version="v1", kind="Secret")


def fuzz(server: Server, count: int, limits: Limits) -> tuple[Harness, Stats]:
    harness = Harness(server.host, server.port, server.token, alive=lambda: server.process.poll() is None)
    harness.setup()
    try:
        return harness, run(harness, count, seed=SEED, limits=limits)
    finally:
        harness.close()


def explain(harness: Harness, stats: Stats, limits: Limits) -> str:
    """The failure classes, and for the first few a hypothesis-shrunk plan (replayed on the same server)."""
    text = [json.dumps(stats.summary()), stats.report()]
    try:
        for signature in list(stats.classes)[:SHRUNK_CLASSES]:
            if harness.dead or signature.split(" ", 2)[1].startswith("sweep"):
                continue
            shrunk = shrink(harness, signature, BOUNDED_REQUESTS, seed=SEED, limits=limits)
            text.append(f"shrunk {signature}:\n    {shrunk}")
    finally:
        harness.close()
    return "\n".join(text)


def coverage(harness: Harness, stats: Stats) -> set[tuple[str, str]]:
    """(resource, action) pairs the generator can address (subresource actions: the resources that have it)
    that the run did not send."""
    missing = set()
    sent = {(r, a) for r, a, _ in stats.covered}
    for info in harness.resources:
        for action in ACTIONS:
            sub = SUBRESOURCE_OF.get(action)
            if sub is not None and info.subresource(sub) is None:
                continue
            if (f"{info.group}/{info.plural}", action) not in sent:
                missing.add((info.plural, action))
    return missing


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An API server whose Event TTL never expires a fuzzed Event: the harness is its only writer, so every
    revision change is a request's (the default TTL's housekeeping deletes Events with old timestamps)."""
    data = tmp_path_factory.mktemp("fuzz") / "data"
    data.mkdir()
    srv = start_server(data, *SERVER_FLAGS)
    yield srv
    srv.stop()


def test_bounded_fuzz_run_keeps_every_invariant(fuzz_server: Server) -> None:
    server = fuzz_server
    harness, stats = fuzz(server, BOUNDED_REQUESTS, BOUNDED)
    print(json.dumps(stats.summary()))
    assert stats.requests == BOUNDED_REQUESTS or harness.dead, "hypothesis ran fewer plans than asked"
    assert not stats.failures, explain(harness, stats, BOUNDED)
    assert server.process.poll() is None


@pytest.fixture
def soak_server(tmp_path: Path) -> Iterator[Server]:
    data = tmp_path / "data"
    data.mkdir()
    srv = start_server(data, *SERVER_FLAGS)
    yield srv
    srv.stop()


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_soak_fuzz_run(soak_server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    harness, stats = fuzz(soak_server, SOAK_REQUESTS, SOAK)
    summary = stats.summary()
    summary["unexercised"] = sorted(f"{r}:{a}" for r, a in coverage(harness, stats))
    with capsys.disabled():  # the summary is the soak run's output, passing or not
        print("\nfuzz soak summary:", json.dumps(summary))
        print(stats.report(limit=200))
    assert not stats.failures, explain(harness, stats, SOAK)
    assert stats.requests >= SOAK_REQUESTS
    assert soak_server.process.poll() is None
