"""The ServiceAccount admission plugin on pod creates (upstream ``plugin/pkg/admission/serviceaccount``, v1.37).

In upstream's order (``Admit`` then ``Validate``):

* A mirror pod (annotation ``kubernetes.io/config.mirror``) is not changed; it may not name a service account,
  reference a secret, or project a service-account token (403 each).
* ``spec.serviceAccountName`` defaults to ``default`` (or the deprecated ``spec.serviceAccount`` when only that is
  given; the alias is written back, as v1's conversion does). The account must exist (looked up in the cache,
  then live: ten times 100–200 ms apart for ``default``, which the ServiceAccount controller is expected to
  create, once otherwise), else 403 ``error looking up service account NS/NAME: serviceaccount "NAME" not found``.
* Unless the pod's ``automountServiceAccountToken`` (first) or the account's (then) is false, every init and app
  container without a mount at ``/var/run/secrets/kubernetes.io/serviceaccount`` gets one of the projected volume
  ``kube-api-access-<5 random>`` (an existing ``kube-api-access-*`` volume is reused): the token (expiration
  3607 s, upstream's ``WarnOnlyBoundTokenExpirationSeconds``), ``ca.crt`` from the ``kube-root-ca.crt``
  ConfigMap, and the namespace from the downward API, ``defaultMode`` 420 written out as upstream does.
* A pod without ``imagePullSecrets`` gets the account's.
* An account annotated ``kubernetes.io/enforce-mountable-secrets: "true"`` limits the secrets the pod may use to
  those it lists (403 with upstream's messages).

Nothing here writes: a refused pod leaves the store unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.api import meta as apimeta

from . import errors

if TYPE_CHECKING:
    from .registry import Registry

DEFAULT_SERVICE_ACCOUNT = "default"
VOLUME_PREFIX = "kube-api-access"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
TOKEN_EXPIRATION_SECONDS = 3607
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DEFAULT_LOOKUPS = 10


def token_volume_source() -> dict[str, Any]:
    """Upstream ``TokenVolumeSource()``, as the stored pod shows it."""
    return {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                    ]
                }
            },
        ],
    }


def _name_for_errors(pod: Mapping[str, Any]) -> str:
    """Upstream ``extractResourceName``: the name, else the generateName, else ``Unknown``."""
    meta = pod.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def _forbidden(pod: Mapping[str, Any], why: str) -> errors.APIError:
    return errors.forbidden("", "pods", _name_for_errors(pod), why)


async def admit(registry: Registry, pod: dict[str, Any]) -> None:
    """Mutate then validate a pod being created (module docstring); raises a 403 APIError to refuse it."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    meta = pod["metadata"]
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict) and MIRROR_ANNOTATION in annotations:
        _validate_mirror(pod, spec)
        return
    namespace = str(meta.get("namespace") or "")
    if not spec.get("serviceAccountName"):  # the deprecated alias counts when the field is unset (v1 conversion)
        spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
    name = str(spec["serviceAccountName"])
    spec["serviceAccount"] = name  # v1's output conversion writes the deprecated alias from the field
    account = await _service_account(registry, namespace, name)
    if account is None:
        raise _forbidden(pod, f'error looking up service account {namespace}/{name}: serviceaccount "{name}" not found')
    if _should_automount(account, spec):
        _mount_token(registry, spec)
    if not spec.get("imagePullSecrets"):
        pulls = account.get("imagePullSecrets") or []
        if pulls:
            spec["imagePullSecrets"] = [{"name": p.get("name", "")} for p in pulls if isinstance(p, dict)]
    if _enforces_mountable_secrets(account):
        why = _limit_secret_references(account, spec)
        if why:
            raise _forbidden(pod, why)


async def _service_account(registry: Registry, namespace: str, name: str) -> Mapping[str, Any] | None:
    """Upstream ``getServiceAccount``: the cache, then live reads (more of them for ``default``)."""
    accounts = registry.resource("", "serviceaccounts")
    found = registry.get_cached(accounts, namespace, name)
    if found is not None:
        return found
    attempts = DEFAULT_LOOKUPS if name == DEFAULT_SERVICE_ACCOUNT else 1
    interval = (100 + registry.rng.randrange(100)) / 1000
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(interval)
        found = await registry.get_live(accounts, namespace, name)
        if found is not None:
            return found
    return None


def _should_automount(account: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """The pod's preference wins, then the account's; true by default."""
    for source in (spec, account):
        value = source.get("automountServiceAccountToken")
        if isinstance(value, bool):
            return value
    return True


def _mount_token(registry: Registry, spec: dict[str, Any]) -> None:
    volumes = spec.get("volumes")
    if volumes is None:
        volumes = []
    if not isinstance(volumes, list):
        return
    existing = next(
        (v["name"] for v in volumes if isinstance(v, dict) and str(v.get("name", "")).startswith(VOLUME_PREFIX + "-")),
        None,
    )
    volume_name = existing or apimeta.generate_name(VOLUME_PREFIX + "-", registry.rng)
    needs_volume = False
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for container in containers:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if mounts is None:
                mounts = []
            if not isinstance(mounts, list):
                continue
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": volume_name, "readOnly": True, "mountPath": MOUNT_PATH})
            container["volumeMounts"] = mounts
            needs_volume = True
    if existing is None and needs_volume:
        volumes.append({"name": volume_name, "projected": token_volume_source()})
        spec["volumes"] = volumes


def _enforces_mountable_secrets(account: Mapping[str, Any]) -> bool:
    annotations = (account.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ENFORCE_MOUNTABLE_SECRETS, "")).lower() in ("1", "t", "true")


def _limit_secret_references(account: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    """Upstream ``limitSecretReferences``: the first reference the account does not list, as its message."""
    sa = str(account["metadata"].get("name", ""))
    mountable = {str(s.get("name")) for s in account.get("secrets") or [] if isinstance(s, dict)}
    for volume in spec.get("volumes") or []:
        secret = volume.get("secret") if isinstance(volume, dict) else None
        if isinstance(secret, dict) and str(secret.get("secretName", "")) not in mountable:
            return (
                f'volume with secret.secretName="{secret.get("secretName", "")}" is not allowed because service '
                f"account {sa} does not reference that secret"
            )
    for key, what in (("initContainers", "init container"), ("containers", "container")):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            for env in container.get("env") or []:
                ref = ((env.get("valueFrom") or {}).get("secretKeyRef") or {}) if isinstance(env, dict) else {}
                if ref and str(ref.get("name", "")) not in mountable:
                    return (
                        f"{what} {container.get('name')} with envVar {env.get('name')} referencing "
                        f'secret.secretName="{ref.get("name", "")}" is not allowed because service account {sa} '
                        "does not reference that secret"
                    )
            for env_from in container.get("envFrom") or []:
                ref = (env_from.get("secretRef") or {}) if isinstance(env_from, dict) else {}
                if ref and str(ref.get("name", "")) not in mountable:
                    return (
                        f'{what} {container.get("name")} with envFrom referencing secret.secretName="'
                        f'{ref.get("name", "")}" is not allowed because service account {sa} does not reference '
                        "that secret"
                    )
    pulls = {str(s.get("name")) for s in account.get("imagePullSecrets") or [] if isinstance(s, dict)}
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        name = str(ref.get("name", "")) if isinstance(ref, dict) else ""
        if name not in pulls:
            return (
                f'imagePullSecrets[{i}].name="{name}" is not allowed because service account {sa} does not '
                "reference that imagePullSecret"
            )
    return ""


def _validate_mirror(pod: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    if spec.get("serviceAccountName"):
        raise _forbidden(pod, "a mirror pod may not reference service accounts")
    if next(_secret_names(spec), None) is not None:
        raise _forbidden(pod, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        projected = volume.get("projected") if isinstance(volume, dict) else None
        for source in (projected or {}).get("sources") or []:
            if isinstance(source, dict) and source.get("serviceAccountToken") is not None:
                raise _forbidden(pod, "a mirror pod may not use ServiceAccountToken volume projections")


def _secret_names(spec: Mapping[str, Any]) -> Iterator[str]:
    """Upstream ``VisitPodSecretNames`` over every container kind: pull secrets, secret volumes and projections,
    env and envFrom references (the volume plugins' own secret refs included where kubeplane's pods carry them)."""
    for ref in spec.get("imagePullSecrets") or []:
        if isinstance(ref, dict) and ref.get("name"):
            yield str(ref["name"])
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            for env_from in container.get("envFrom") or []:
                ref = env_from.get("secretRef") if isinstance(env_from, dict) else None
                if isinstance(ref, dict):
                    yield str(ref.get("name", ""))
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef") if isinstance(env, dict) else None
                if isinstance(ref, dict):
                    yield str(ref.get("name", ""))
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        secret = volume.get("secret")
        if isinstance(secret, dict):
            yield str(secret.get("secretName", ""))
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source, dict) and isinstance(source.get("secret"), dict):
                yield str(source["secret"].get("name", ""))
        for plugin in volume.values():
            ref = plugin.get("secretRef") if isinstance(plugin, dict) else None
            if isinstance(ref, dict) and ref.get("name"):
                yield str(ref["name"])
