"""The ServiceAccounts controller (upstream ``pkg/controller/serviceaccount/serviceaccounts_controller.go``, v1.37;
controller name ``serviceaccount``): a ``default`` ServiceAccount in every active namespace.

Namespaces added or updated (while Active) and ServiceAccounts deleted queue their namespace; ``sync`` creates
each account of ``serviceAccountsToEnsure`` (just ``default``) the informer does not have. A namespace that is gone
or not Active is left alone; an account that already exists (the informer lagging) or a namespace that started
terminating meanwhile (403) is not an error. So a deleted ``default`` account comes back, and pods, which the
ServiceAccount admission plugin refuses until their namespace's account exists, do not wait long.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import meta_of, status_of
from kubeplane.client.errors import AlreadyExistsError, ForbiddenError
from kubeplane.controllers.base import Controller, ControllerContext

__all__ = ["ServiceAccountsController"]

SERVICE_ACCOUNTS_TO_ENSURE: tuple[str, ...] = ("default",)


class ServiceAccountsController(Controller):
    """See the module docstring. Keys are namespace names."""

    name = "serviceaccount"
    workers = 1  # upstream's --concurrent-serviceaccount-token-syncs is for the token controller; this one runs 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.accounts_res = self.client.resource("serviceaccounts")
        accounts = ctx.informers.informer_for("serviceaccounts")
        namespaces = ctx.informers.informer_for("namespaces")
        self.account_lister = accounts.lister()
        self.namespace_lister = namespaces.lister()
        accounts.add_event_handler(on_delete=self._account_deleted)
        namespaces.add_event_handler(on_add=self._namespace_added, on_update=self._namespace_updated)

    def _account_deleted(self, obj: Mapping[str, Any]) -> None:
        namespace = meta_of(obj).get("namespace")
        if namespace:
            self.enqueue_key(str(namespace))

    def _namespace_added(self, obj: Mapping[str, Any]) -> None:
        self.enqueue_key(str(meta_of(obj).get("name", "")))

    def _namespace_updated(self, _old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.enqueue_key(str(meta_of(new).get("name", "")))

    async def sync(self, key: str) -> None:
        namespace = self.namespace_lister.get(None, key)
        if namespace is None or status_of(namespace).get("phase", "Active") != "Active":
            return
        for name in SERVICE_ACCOUNTS_TO_ENSURE:
            if self.account_lister.get(key, name) is not None:
                continue
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": key}}
            try:
                await self.client.create(self.accounts_res, account, namespace=key)
            except (AlreadyExistsError, ForbiddenError):
                continue  # exists already, or the namespace is terminating: nothing to do
