"""Informer convergence under faults over HTTP (the acceptance test of the client issue).

An informer follows ConfigMaps of a real ``kubeplane apiserver`` process while 4 writers make 1,000 writes. In
the middle the API server is stopped and restarted on the same data dir and port (the watch breaks) and compacts
its history every 0.2 s. The informer's new watch is held back (a gate in the client, nothing else changed) until
the second half of the writes is done and compacted, so its resume finds its resourceVersion compacted (410) and
it must re-list. Afterwards its cache equals a fresh list, and the handlers saw every object's versions in
increasing order, with a delete for everything that vanished.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import socket
from pathlib import Path
from typing import Any

from kubeplane.client.clock import SystemClock
from kubeplane.client.errors import ClientError, NotFoundError
from kubeplane.client.http import HTTPClient
from kubeplane.client.informer import SharedInformer
from tests.apiserver.conftest import Server, start_server

WRITERS, WRITES = 4, 250


class GatedClient(HTTPClient):
    """An HTTP client whose new watches wait for ``gate``: the test decides when the informer reconnects."""

    gate: asyncio.Event

    async def watch(self, *args: Any, **kwargs: Any) -> Any:
        await self.gate.wait()
        return await super().watch(*args, **kwargs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _writer(client: HTTPClient, n: int, quota: int, rng: random.Random) -> None:
    cms = client.resource("configmaps")
    done = 0
    while done < quota:
        name = f"w{n}-{rng.randrange(40)}"
        try:
            if rng.random() < 0.2:
                await client.delete(cms, name, namespace="default")
            else:
                try:
                    await client.patch(cms, name, {"data": {"v": str(done)}}, namespace="default")
                except NotFoundError:
                    await client.create(cms, {"metadata": {"name": name}, "data": {"v": "0"}}, namespace="default")
        except NotFoundError:
            pass  # deleting what is not there is still a write attempt the server answered
        except ClientError:
            await asyncio.sleep(0.05)  # the server is restarting: try again
            continue
        done += 1


async def test_informer_converges_across_restart_compaction_and_concurrent_writers(tmp_path: Path) -> None:
    port = _free_port()
    args = ("--port", str(port), "--etcd-compaction-interval", "0.2")
    data = tmp_path / "data"
    server: Server = await asyncio.to_thread(start_server, data, *args)
    from kubeplane.client.kubeconfig import load_kubeconfig

    # qps=0: the writers should not wait on client-side rate limiting (the default 50 qps) in this test
    client = GatedClient(dataclasses.replace(load_kubeconfig(server.kubeconfig), qps=0))
    client.gate = asyncio.Event()
    client.gate.set()
    seen: dict[str, list[int]] = {}
    deleted: list[str] = []

    def record(obj: dict[str, Any]) -> None:
        seen.setdefault(obj["metadata"]["name"], []).append(int(obj["metadata"]["resourceVersion"]))

    informer = SharedInformer(
        client, client.resource("configmaps"), clock=SystemClock(), rng=random.Random(1), namespace="default"
    )
    informer.add_event_handler(
        on_add=record,
        on_update=lambda _old, new: record(new),
        on_delete=lambda obj: deleted.append(obj["metadata"]["name"]),
    )
    informer.start()
    try:
        assert await informer.wait_for_sync()
        rng = random.Random(7)
        half = WRITES // 2
        await asyncio.gather(*(_writer(client, n, half, random.Random(rng.random())) for n in range(WRITERS)))
        client.gate.clear()  # the informer may not reconnect until its history is compacted away
        await asyncio.to_thread(server.stop)  # the informer's watch breaks here
        assert server.process.returncode == 0
        writers = asyncio.gather(
            *(_writer(client, n, WRITES - half, random.Random(rng.random())) for n in range(WRITERS))
        )
        server = await asyncio.to_thread(start_server, data, *args)
        await writers
        await asyncio.sleep(1.0)  # compaction passes every revision the informer saw before the restart
        client.gate.set()
        fresh = await client.list(client.resource("configmaps"), namespace="default")
        expected = {item["metadata"]["name"]: item for item in fresh["items"]}

        def converged() -> bool:
            cached = {obj["metadata"]["name"]: obj for obj in informer.indexer.list()}
            return cached == expected

        async with asyncio.timeout(60):
            while not converged():
                await asyncio.sleep(0.1)
        # Handlers are fed by their own tasks (upstream's processorListener), so the cache can converge a loop
        # iteration before the handlers have been told: give the notifications of the last re-list time to land.
        with contextlib.suppress(TimeoutError):  # if they never do, the assertion below says so
            async with asyncio.timeout(10):
                while not (set(seen) - set(expected)) <= set(deleted):
                    await asyncio.sleep(0.05)
        for name, versions in seen.items():
            assert versions == sorted(versions), f"{name}: versions out of order {versions}"
            assert len(versions) == len(set(versions)), f"{name}: a version delivered twice {versions}"
        vanished = set(seen) - set(expected)
        assert vanished <= set(deleted), "an object vanished without a delete notification"
        assert informer.reflector.lists >= 2, "the compacted resume should have forced a re-list (410)"
        assert informer.reflector.watches >= 2, "the restart should have broken the first watch"
    finally:
        await informer.stop()
        await client.close()
        await asyncio.to_thread(server.stop)
