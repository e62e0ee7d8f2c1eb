"""The one in-process harness the controller tests share: an API server behind ``LocalClient.in_memory()``, a
:class:`FakeClock`, a :class:`ControllerContext` with seeded informers, and the controllers under test running as
tasks; plus the pollers and the small object builders the tests have in common.

Invariants: every controller is constructed (its handlers registered) before the informers start, so objects a
``setup`` hook creates are in the informers' initial list, exactly as if they existed before the controller
manager came up; teardown cancels the controllers, lets in-flight watch events land, then stops the informers,
closes the context's event recorders and closes the client only if the harness created it."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clock import FakeClock
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.controllers.base import Controller, ControllerContext

C = TypeVar("C", bound=Controller)
E = TypeVar("E", bound="Env[Any]")
T = TypeVar("T")

Setup = Callable[[E], Awaitable[None]]


@dataclass
class Env(Generic[C]):
    """A running controller (``controller``; any others started alongside share ``ctx``) over ``client``.

    Test files subclass it (a dataclass with the same four fields first) for their own helpers."""

    client: LocalClient
    clock: FakeClock
    ctx: ControllerContext
    controller: C

    def res(self, name: str) -> ResourceInfo:
        return self.client.resource(name)

    async def advance_until(
        self, check: Callable[[], Awaitable[bool]], what: str, *, step: float, tries: int = 400, interval: float = 0.005
    ) -> None:
        """Poll ``check`` at most ``tries`` times, moving the fake clock ``step`` seconds after each miss so
        rate-limited retries and timed work come due."""
        for _ in range(tries):
            if await check():
                return
            await asyncio.sleep(interval)
            await self.clock.advance(step)
        raise AssertionError(f"timed out waiting for {what}")


def context(
    client: LocalClient, clock: FakeClock, *, options: dict[str, dict[str, Any]] | None = None, seed: int = 0
) -> ControllerContext:
    """What the controller manager builds: seeded informers on the fake clock (``options`` by controller name)."""
    return ControllerContext(
        client=client,
        informers=SharedInformerFactory(client, clock=clock, rng=random.Random(seed)),
        clock=clock,
        rng=random.Random(seed),
        options=options if options is not None else {},
    )


async def settle(rounds: int = 50) -> None:
    """Let every task that can run, run (no wall-clock sleeping)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def stop_tasks(tasks: Iterable[asyncio.Task[Any] | asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished (its outcome, a cancellation included, is dropped)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@overload
def running(
    controller_cls: type[C],
    *also: type[Controller],
    env_cls: Callable[[LocalClient, FakeClock, ControllerContext, C], E],
    setup: Setup[E] | None = None,
    **kw: Any,
) -> AbstractAsyncContextManager[E]: ...


@overload
def running(
    controller_cls: type[C], *also: type[Controller], setup: Setup[Env[C]] | None = None, **kw: Any
) -> AbstractAsyncContextManager[Env[C]]: ...


def running(
    controller_cls: type[Controller], *also: type[Controller], env_cls: Any = Env, setup: Any = None, **kw: Any
) -> AbstractAsyncContextManager[Any]:
    """Run ``controller_cls`` (and the controllers in ``also``, sharing its context) for the ``async with`` body.

    Keywords: ``clock`` (a new :class:`FakeClock` by default); ``client`` (used and left open; by default a new
    in-memory one, closed at the end); ``server_clock`` (default True: a new client's API server stamps times from
    the fake clock); ``options`` (the context's per-controller options); ``seed`` (the informers' and context's
    random seed, 0); ``run`` (default True; False constructs and syncs the controllers without running their
    workers); ``env_cls`` (an :class:`Env` subclass to yield); ``setup`` (awaited with the env before the
    informers start)."""
    return _running((controller_cls, *also), env_cls, setup, **kw)


@contextlib.asynccontextmanager
async def _running(
    controller_classes: tuple[type[Controller], ...],
    env_cls: Callable[[LocalClient, FakeClock, ControllerContext, Controller], Env[Any]],
    setup: Setup[Env[Any]] | None,
    *,
    clock: FakeClock | None = None,
    client: LocalClient | None = None,
    server_clock: bool = True,
    options: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    run: bool = True,
) -> AsyncIterator[Env[Any]]:
    clock = clock or FakeClock()
    owned = client is None
    if client is None:
        client = await (LocalClient.in_memory(now=clock.now) if server_clock else LocalClient.in_memory())
    ctx = context(client, clock, options=options, seed=seed)
    tasks: list[asyncio.Task[Any]] = []
    try:
        controllers = [cls(ctx) for cls in controller_classes]
        env = env_cls(client, clock, ctx, controllers[0])
        if setup is not None:
            await setup(env)
        ctx.informers.start()
        await ctx.informers.wait_for_cache_sync()
        tasks = [asyncio.create_task(c.run() if run else asyncio.Event().wait()) for c in controllers]
        yield env
    finally:
        await stop_tasks(tasks)
        # Let in-flight watch events land first: on Python 3.11 the in-process watch (CacheWatcher.wait, an
        # asyncio.wait_for over a shielded future) can swallow a cancellation that coincides with an event, and
        # the informers' stop() then waits forever.
        await settle()
        await ctx.informers.stop()
        await ctx.close()
        if owned:
            await client.close()


async def eventually(
    check: Callable[[], Awaitable[T]], what: str = "condition", *, timeout: float = 5.0, interval: float = 0.005
) -> T:
    """Poll ``check`` every ``interval`` wall-clock seconds until it returns a truthy value, and return that value;
    AssertionError after ``timeout`` seconds. The fake clock is not touched."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := await check()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(interval)
    return value


def ready_status(when: str, *, ready: bool = True) -> Obj:
    """What a kubelet reports for a started pod: Running since ``when``, its Ready condition as ``ready``."""
    return {
        "phase": "Running",
        "startTime": when,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": when}],
    }


def pod_obj(
    name: str,
    *,
    node: str = "",
    namespace: str = "default",
    tolerations: list[Obj] | None = None,
    finalizers: tuple[str, ...] = (),
) -> Obj:
    """A one-container pod, bound to ``node`` when given (as if the scheduler had placed it)."""
    meta: Obj = {"name": name, "namespace": namespace}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    spec: Obj = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec}
