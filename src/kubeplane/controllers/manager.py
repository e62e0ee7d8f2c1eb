"""The controller manager: every controller on one shared informer factory (upstream kube-controller-manager).

``ControllerManager(client).run()`` builds the selected controllers (``--controllers``: names, ``*`` for all,
``-name`` to leave one out, as upstream), starts the informers they asked for, waits until those have synced,
then runs every controller's workers until cancelled. ``kubeplane controller-manager`` runs it under leader
election; ``kubeplane up`` runs it in-process.

Identities: the shared informers read with the manager's own ``client`` (upstream builds the shared informer
factory from the root client builder, ``system:kube-controller-manager``); each controller writes (and makes its
direct reads) with ``client_for(name)``, its own ServiceAccount with ``--use-service-account-credentials``
(:mod:`kubeplane.controllers.credentials` builds ``client_for``). Each controller gets a context of its own that
shares the informers, clock, rng and options and differs only in ``client`` (and so its event recorders).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kubeplane.client.clock import Clock, SystemClock
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Client
from kubeplane.controllers.base import Controller, ControllerContext

__all__ = ["ControllerManager", "available_controllers", "select_controllers"]

_MODULES: tuple[str, ...] = (
    "replicaset",
    "deployment",
    "daemonset",
    "statefulset",
    "garbagecollector",
    "namespace",
    "disruption",
    "nodelifecycle",
    "taint_eviction",
    "podgc",
    "serviceaccounts",
    "rootcacertpublisher",
    "endpoints",
    "endpoints_slice",
    "endpoints_mirroring",
    "job",
    "ttlafterfinished",
    "cronjob",
    "pvc_protection",
    "pv_protection",
    "pv_controller",
    "attachdetach",
    "resourceclaim",
    "clusterrole_aggregation",
)
"""The controller modules under ``kubeplane.controllers``, each defining one :class:`Controller` subclass."""


def available_controllers() -> dict[str, type[Controller]]:
    """Controller name -> class, in start order."""
    out: dict[str, type[Controller]] = {}
    for module_name in _MODULES:
        module = importlib.import_module(f"kubeplane.controllers.{module_name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Controller)
                and value.__module__ == module.__name__
                and value.name
            ):
                out[value.name] = value
    return out


def select_controllers(spec: Sequence[str], available: Sequence[str]) -> list[str]:
    """Upstream ``--controllers``: ``*`` enables all, ``name`` enables one, ``-name`` disables one; the order of
    ``available`` is kept. Raises ValueError naming an unknown controller and listing the known ones."""
    chosen: set[str] = set()
    everything = False
    disabled: set[str] = set()
    for item in spec:
        name = item.strip()
        if not name:
            continue
        if name == "*":
            everything = True
            continue
        bare = name[1:] if name.startswith("-") else name
        if bare not in available:
            raise ValueError(f'"{bare}" is not in the list of known controllers: {", ".join(available)}')
        (disabled if name.startswith("-") else chosen).add(bare)
    return [n for n in available if (everything or n in chosen) and n not in disabled]


class ControllerManager:
    """See the module docstring. ``options`` maps a controller name to its settings (e.g. grace periods)."""

    def __init__(
        self,
        client: Client,
        *,
        controllers: Sequence[str] = ("*",),
        clock: Clock | None = None,
        rng: random.Random | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        informer_factory: SharedInformerFactory | None = None,
        client_for: Callable[[str], Client] | None = None,
        prepare: Callable[[Sequence[str]], Awaitable[None]] | None = None,
    ) -> None:
        """``client_for(controller name)``: the client that controller calls the API with (default: ``client``
        for all, one identity); called once per controller, when it is built. ``prepare(controller names)`` runs
        first in :meth:`start` (the identities' accounts and tokens, got before any controller runs, as upstream's
        ``ClientOrDie`` does)."""
        self._prepare = prepare
        self.clock = clock if clock is not None else SystemClock()
        rng = rng if rng is not None else random.Random()
        self.informers = informer_factory or SharedInformerFactory(client, clock=self.clock, rng=rng)
        self.ctx = ControllerContext(
            client=client, informers=self.informers, clock=self.clock, rng=rng, options=dict(options or {})
        )
        available = available_controllers()
        names = select_controllers(list(controllers), list(available))
        self.contexts: dict[str, ControllerContext] = {}
        """Each controller's context: ``self.ctx`` itself when it uses the manager's client."""
        for name in names:
            own = client if client_for is None else client_for(name)
            self.contexts[name] = (
                self.ctx if own is client else dataclasses.replace(self.ctx, client=own, _recorders={})
            )
        self.controllers: dict[str, Controller] = {name: available[name](self.contexts[name]) for name in names}
        self._started = False

    async def start(self) -> None:
        """Start the informers the controllers asked for and wait until they have synced (idempotent)."""
        if not self._started:
            self._started = True
            if self._prepare is not None:
                await self._prepare(list(self.controllers))
            self.informers.start()
        await self.informers.wait_for_cache_sync()

    async def run(self) -> None:
        """Start, then run every controller until cancelled."""
        await self.start()
        tasks = [asyncio.create_task(c.run(), name=f"controller-{n}") for n, c in self.controllers.items()]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stop(self) -> None:
        await self.informers.stop()
        await self.ctx.close()
        for ctx in self.contexts.values():
            if ctx is not self.ctx:
                await ctx.close()
