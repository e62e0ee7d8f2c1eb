"""Each controller's identity: upstream's ``--use-service-account-credentials`` (kube-controller-manager).

With it (kubeadm's default) every controller calls the API as its own ServiceAccount in ``kube-system``, named as
upstream's ``ControllerClientBuilder.ClientOrDie(name)`` calls in ``cmd/kube-controller-manager/app`` name it
(:data:`CONTROLLER_SERVICE_ACCOUNTS`), the names the bootstrap policy binds ``system:controller:<name>`` to
(``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go``). What upstream runs with the root
client builder (the shared informers, leader election, controllers kubeplane has that upstream does not name)
keeps the manager's own identity, ``system:kube-controller-manager``.

Two builders, one contract ``client_for(controller_name) -> Client``:

* :func:`local_client_for` (in-process, ``kubeplane up``): the ServiceAccounts are created in ``kube-system`` if
  missing (upstream ``SAControllerClientBuilder`` gets or creates them) and each controller gets
  ``LocalClient.as_user`` of the account's user (``system:serviceaccount:kube-system:<name>`` in
  ``system:serviceaccounts``, ``system:serviceaccounts:kube-system``, ``system:authenticated``, the account's uid).
* :class:`TokenClientBuilder` (over HTTP): the same accounts, then a TokenRequest per account made with the
  manager's own credentials, refreshed when less than 20% of its hour is left (upstream
  ``clientbuilder.DynamicControllerClientBuilder``: ``defaultExpirationSeconds`` 3600, ``defaultLeewayPercent`` 20),
  each controller's client a view of the manager's HTTP client sending that token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.client.clock import Clock, SystemClock
from kubeplane.client.errors import AlreadyExistsError
from kubeplane.client.interface import Client, Obj

__all__ = [
    "CONTROLLER_SERVICE_ACCOUNTS",
    "EXPIRATION_SECONDS",
    "LEEWAY_PERCENT",
    "MANAGER_USER",
    "SA_NAMESPACE",
    "TokenClientBuilder",
    "ensure_service_accounts",
    "local_client_for",
    "service_account_of",
]

MANAGER_USER = "system:kube-controller-manager"
"""The manager's own identity (its kubeconfig's user, upstream's ``system:kube-controller-manager`` ClusterRole)."""
SA_NAMESPACE = "kube-system"
EXPIRATION_SECONDS = 3600
LEEWAY_PERCENT = 20

CONTROLLER_SERVICE_ACCOUNTS: dict[str, str] = {
    "replicaset": "replicaset-controller",
    "deployment": "deployment-controller",
    "daemonset": "daemon-set-controller",
    "statefulset": "statefulset-controller",
    "garbagecollector": "generic-garbage-collector",
    "namespace": "namespace-controller",
    "disruption": "disruption-controller",
    "node-lifecycle": "node-controller",  # upstream: "node lifecycle controller uses existing cluster role"
    "taint-eviction-controller": "node-controller",  # upstream: "taint-manager uses existing cluster role"
    "pod-garbage-collector": "pod-garbage-collector",
    "serviceaccount": "service-account-controller",
    "root-ca-cert-publisher": "root-ca-cert-publisher",
    "endpoint": "endpoint-controller",
    "endpointslice": "endpointslice-controller",
    "endpointslicemirroring": "endpointslicemirroring-controller",
    "job": "job-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "cronjob": "cronjob-controller",
    "pvc-protection": "pvc-protection-controller",
    "pv-protection": "pv-protection-controller",
    "persistentvolume-binder": "persistent-volume-binder",
    "attachdetach": "attachdetach-controller",
    "resourceclaim-controller": "resource-claim-controller",
    "clusterrole-aggregation": "clusterrole-aggregation-controller",
}
"""kubeplane's controller name -> the ServiceAccount upstream's controller runs as (``ClientOrDie`` argument)."""


def service_account_of(controller: str) -> str | None:
    """The ServiceAccount ``controller`` runs as; None: the manager's own identity (upstream's root client)."""
    return CONTROLLER_SERVICE_ACCOUNTS.get(controller)


async def ensure_service_accounts(client: Client, names: Iterable[str]) -> dict[str, Obj]:
    """Get or create each ServiceAccount in ``kube-system`` (upstream ``SAControllerClientBuilder.getOrCreate``)
    with the manager's client; name -> the account."""
    resource = client.resource("serviceaccounts")
    out: dict[str, Obj] = {}
    for name in dict.fromkeys(names):
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": SA_NAMESPACE}}
        try:
            out[name] = await client.create(resource, body, namespace=SA_NAMESPACE)
        except AlreadyExistsError:
            out[name] = await client.get(resource, name, namespace=SA_NAMESPACE)
    return out


async def local_client_for(
    client: Any, controllers: Iterable[str], *, user_of: Callable[[str, str, str], Any]
) -> Callable[[str], Client]:
    """``client_for`` for in-process controllers: ``client`` is the manager's ``LocalClient`` (it creates the
    accounts); each controller with an upstream account gets ``client.as_user(user_of(namespace, name, uid))``
    (``apiserver.tokens.service_account_user``: this layer may not import the API server), the others ``client``
    itself."""
    names = [n for n in controllers if service_account_of(n) is not None]
    accounts = await ensure_service_accounts(client, (str(service_account_of(n)) for n in names))
    clients: dict[str, Client] = {}
    for controller in names:
        sa = str(service_account_of(controller))
        uid = str((accounts[sa].get("metadata") or {}).get("uid") or "")
        clients[controller] = client.as_user(user_of(SA_NAMESPACE, sa, uid))

    def client_for(controller: str) -> Client:
        found: Client = clients.get(controller, client)
        return found

    return client_for


class _TokenSource:
    """One account's token: the account got or created, then a TokenRequest with the manager's client, cached until
    20% of its lifetime is left (upstream ``tokenSourceImpl`` behind ``transport.NewCachedTokenSource``)."""

    def __init__(self, client: Client, account: str, clock: Clock) -> None:
        self._client, self._account, self._clock = client, account, clock
        self._token = ""
        self._refresh_at = float("-inf")
        self._lock = asyncio.Lock()
        self._ensured = False
        self.requests = 0

    async def __call__(self) -> str:
        if self._clock.now() < self._refresh_at:
            return self._token
        async with self._lock:
            if self._clock.now() >= self._refresh_at:
                await self._request()
            return self._token

    async def _request(self) -> None:
        if not self._ensured:
            await ensure_service_accounts(self._client, [self._account])
            self._ensured = True
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": EXPIRATION_SECONDS},
        }
        answer = await self._client.create(
            self._client.resource("serviceaccounts"), body, namespace=SA_NAMESPACE, subresource="token",
            name=self._account,
        )  # fmt: skip
        status = answer.get("status") or {}
        self.requests += 1
        self._token = str(status.get("token") or "")
        expires = status.get("expirationTimestamp")
        expiry = apimeta.parse_time(expires).timestamp() if expires else self._clock.now() + EXPIRATION_SECONDS
        self._refresh_at = expiry - EXPIRATION_SECONDS * LEEWAY_PERCENT / 100


class TokenClientBuilder:
    """``client_for`` over HTTP (module docstring). ``client`` is the manager's ``HTTPClient`` (its own
    credentials); a controller's client is a view of it sending the account's token, which is requested (the
    account created first if missing, as upstream's ``ClientOrDie``) on the controller's first call."""

    def __init__(self, client: Any, *, clock: Clock | None = None) -> None:
        self.client = client
        self.clock = clock or SystemClock()
        self.sources: dict[str, _TokenSource] = {}
        self._clients: dict[str, Client] = {}

    def client_for(self, controller: str) -> Client:
        account = service_account_of(controller)
        if account is None:
            manager: Client = self.client
            return manager
        found = self._clients.get(controller)
        if found is None:
            source = self.sources.get(account)
            if source is None:
                source = self.sources[account] = _TokenSource(self.client, account, self.clock)
            found = self._clients[controller] = self.client.with_token_source(source)
        return found

    async def prepare(self, controllers: Iterable[str]) -> None:
        """Get or create each controller's account and its first token before the controllers run (upstream's
        ``ClientOrDie`` blocks until the account's token is there; a failure stops the manager)."""
        for controller in controllers:
            self.client_for(controller)
        for source in self.sources.values():
            await source()

    def token_source(self, account: str) -> Callable[[], Awaitable[str]]:
        return self.sources[account]
