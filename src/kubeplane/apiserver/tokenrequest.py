"""TokenRequest: ``POST .../serviceaccounts/NAME/token`` (upstream ``pkg/registry/core/serviceaccount/storage/
token.go`` and ``pkg/apis/authentication/validation``, v1.37).

In upstream's order: the body's name and namespace, if given, must match the URL (422); the ServiceAccount must
exist (404); ``spec.audiences`` defaults to the API audiences and ``spec.expirationSeconds`` to 3600; the
expiration must lie in [600 s, 2^32 s] (422); a ``boundObjectRef`` names a Pod (running as this account), a
Secret or a Node that exists (404), whose uid matches when given (409); anything else is a 400. A pod-bound
token asking for 3607 s (the projected volume's) is extended to a year with ``warnafter`` at the asked time, as
upstream's ``--service-account-extend-token-expiration`` (default true). The reply is the TokenRequest with
``status.token`` and ``status.expirationTimestamp`` (the issue time plus the asked seconds). Nothing is stored.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.api.validation.field import invalid, new_path

from . import errors
from .registry import Registry
from .tokens import claims, issuer_of

GROUP = "authentication.k8s.io"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
WARN_ONLY_EXPIRATION_SECONDS = 3607
EXTENDED_EXPIRATION_SECONDS = 365 * 24 * 60 * 60


def _invalid(name: str, path: str, value: Any, detail: str) -> errors.APIError:
    head, *rest = path.split(".")
    field_path = new_path(head)
    for part in rest:
        field_path = field_path.child(part)
    return errors.invalid(GROUP, "TokenRequest", name, [invalid(field_path, value, detail=detail)])


async def create_token(registry: Registry, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """The TokenRequest reply for service account ``namespace/name`` (module docstring)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was not a TokenRequest object")
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    given_name, given_ns = meta.get("name") or "", meta.get("namespace") or ""
    if given_name and given_name != name:
        raise _invalid(name, "metadata.name", given_name, "must match the service account name if specified")
    if given_ns and given_ns != namespace:
        raise _invalid(name, "metadata.namespace", given_ns, "must match the service account namespace if specified")
    account = await registry.get(registry.resource("", "serviceaccounts"), namespace, name)
    issuer = issuer_of(registry)
    spec = dict(body.get("spec") or {})
    audiences = [str(a) for a in spec.get("audiences") or []] or list(issuer.audiences)
    expiration = spec.get("expirationSeconds")
    expiration = DEFAULT_EXPIRATION_SECONDS if expiration is None else int(expiration)
    spec["audiences"], spec["expirationSeconds"] = audiences, expiration
    spec.setdefault("boundObjectRef", None)
    now = registry.now()
    if expiration < MIN_EXPIRATION_SECONDS:
        raise _invalid("", "spec.expirationSeconds", expiration, "may not specify a duration less than 10 minutes")
    if expiration > MAX_EXPIRATION_SECONDS:
        raise _invalid("", "spec.expirationSeconds", expiration, "may not specify a duration larger than 2^32 seconds")
    pod, secret, node = await _bound_objects(registry, namespace, name, spec.get("boundObjectRef"))
    exp, warn_after = expiration, 0
    if pod is not None and expiration == WARN_ONLY_EXPIRATION_SECONDS and set(audiences) & set(issuer.audiences):
        exp, warn_after = EXTENDED_EXPIRATION_SECONDS, expiration
    token = issuer.sign(
        claims(
            issuer=issuer.issuer,
            service_account=account,
            audiences=audiences,
            expiration_seconds=exp,
            now=now,
            jti=apimeta.new_uid(registry.rng),
            pod=pod,
            secret=secret,
            node=node,
            warn_after=warn_after,
        )
    )
    return {
        "kind": "TokenRequest",
        "apiVersion": f"{GROUP}/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": apimeta.format_time(now),
        },
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": apimeta.format_time(int(now) + expiration)},
    }


async def _bound_objects(
    registry: Registry, namespace: str, account: str, ref: Any
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """(pod, secret, node) the token binds to, from ``spec.boundObjectRef``."""
    if not isinstance(ref, dict):
        return None, None, None
    api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    name = str(ref.get("name") or "")
    pod = secret = node = None
    if group == "" and kind == "Pod":
        pod = await registry.get(registry.resource("", "pods"), namespace, name)
        if (pod.get("spec") or {}).get("serviceAccountName") != account:
            raise errors.bad_request(
                f'cannot bind token for serviceaccount "{account}" to pod running with different serviceaccount name.'
            )
        bound = pod
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:  # the node is informative here: a missing one is left out
            node = registry.get_cached(registry.resource("", "nodes"), None, str(node_name))
    elif group == "" and kind == "Node":
        node = bound = await registry.get(registry.resource("", "nodes"), None, name)
    elif group == "" and kind == "Secret":
        secret = bound = await registry.get(registry.resource("", "secrets"), namespace, name)
    else:
        version = api_version.rpartition("/")[2]
        raise errors.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    uid = ref.get("uid") or ""
    if uid and uid != bound["metadata"].get("uid"):
        raise errors.conflict(
            "",
            kind,
            name,
            f"the UID in the bound object reference ({uid}) does not match the UID in record. The object might "
            "have been deleted and then recreated",
        )
    return pod, secret, node
