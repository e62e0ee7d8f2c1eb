"""The root CA publisher (upstream ``pkg/controller/certificates/rootcacertpublisher/publisher.go``, v1.37;
controller name ``root-ca-cert-publisher``): a ConfigMap ``kube-root-ca.crt`` in every namespace holding the
API server's CA bundle as ``ca.crt``, which the projected ``kube-api-access-*`` volume mounts in every pod.

The CA is the controller option ``rootCA`` (upstream's ``--root-ca-file``; ``kubeplane up`` passes the API
server's ``ca.crt``), else the CA data of the client's kubeconfig (upstream falls back to the client config's
``CAData`` the same way), else empty (a server without TLS has none). Namespaces added or updated (while Active)
and the ConfigMap updated or deleted queue the namespace; ``sync`` creates the ConfigMap when missing and puts
back its data and its description annotation when they differ. A namespace gone or terminating is not an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import meta_of, status_of
from kubeplane.client.errors import ForbiddenError, NotFoundError
from kubeplane.controllers.base import Controller, ControllerContext

__all__ = ["CONFIGMAP_NAME", "DESCRIPTION", "DESCRIPTION_ANNOTATION", "RootCACertPublisher"]

CONFIGMAP_NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)


def _root_ca(ctx: ControllerContext, options: Mapping[str, Any]) -> str:
    given = options.get("rootCA")
    if given is not None:
        return given.decode() if isinstance(given, bytes) else str(given)
    config = getattr(ctx.client, "config", None)
    data = getattr(config, "ca_data", None)
    return data.decode() if isinstance(data, bytes) else ""


class RootCACertPublisher(Controller):
    """See the module docstring. Keys are namespace names."""

    name = "root-ca-cert-publisher"
    workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.root_ca = _root_ca(ctx, self.options)
        self.configmaps_res = self.client.resource("configmaps")
        configmaps = ctx.informers.informer_for("configmaps")
        namespaces = ctx.informers.informer_for("namespaces")
        self.configmap_lister = configmaps.lister()
        self.namespace_lister = namespaces.lister()
        configmaps.add_event_handler(on_update=self._configmap_updated, on_delete=self._configmap_deleted)
        namespaces.add_event_handler(on_add=self._namespace_added, on_update=self._namespace_updated)

    def _configmap_deleted(self, obj: Mapping[str, Any]) -> None:
        meta = meta_of(obj)
        if meta.get("name") == CONFIGMAP_NAME and meta.get("namespace"):
            self.enqueue_key(str(meta["namespace"]))

    def _configmap_updated(self, _old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._configmap_deleted(new)

    def _namespace_added(self, obj: Mapping[str, Any]) -> None:
        self.enqueue_key(str(meta_of(obj).get("name", "")))

    def _namespace_updated(self, _old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if status_of(new).get("phase", "Active") == "Active":
            self.enqueue_key(str(meta_of(new).get("name", "")))

    async def sync(self, key: str) -> None:
        data = {"ca.crt": self.root_ca}
        current = self.configmap_lister.get(key, CONFIGMAP_NAME)
        if current is None:
            configmap = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": CONFIGMAP_NAME,
                    "namespace": key,
                    "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                },
                "data": data,
            }
            try:
                await self.client.create(self.configmaps_res, configmap, namespace=key)
            except (NotFoundError, ForbiddenError):
                return  # the namespace is gone or terminating: nothing to publish (an AlreadyExists retries)
            return
        annotations = meta_of(current).get("annotations") or {}
        if current.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        updated = {**current, "data": data}
        updated["metadata"] = {**meta_of(current), "annotations": {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}}
        await self.client.update(self.configmaps_res, updated, namespace=key)
