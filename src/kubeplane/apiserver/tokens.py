"""ServiceAccount tokens: JWTs signed RS256 by the API server, and their authentication (upstream
``pkg/serviceaccount/jwt.go`` and ``claims.go``, v1.37).

The signing key is an RSA key the API server generates on first start and keeps in ``<data-dir>/sa.key`` (mode
0600, PKCS#8 PEM, as kubeadm's ``sa.key``), so tokens survive restarts. Its ``kid`` is upstream's
``keyIDFromPublicKey``: the unpadded base64url SHA-256 of the public key's PKIX DER. A registry without a data
dir (in-process clusters, tests) gets a fresh key in memory on first use.

Claims are upstream's ``Claims``: ``iss``, ``sub`` (``system:serviceaccount:NS:NAME``), ``aud`` (always an array),
``exp``, ``iat``, ``nbf``, ``jti`` and the private ``kubernetes.io`` claim (namespace, serviceaccount name/uid,
the bound pod, secret or node, ``warnafter``). Go's encoder writes the merged claims as a map, so keys are sorted
and JSON is compact; this module writes them the same way, so a token's payload reads like upstream's.

Authentication (:func:`authenticate`) accepts a token only if all of these hold, each with upstream's reason:
the issuer is this server's; the signature verifies with the key; ``exp``/``nbf``/``iat`` pass with go-jose's
one-minute leeway; an audience is one of the server's; the ServiceAccount still exists with the claimed uid and
is not being deleted; a bound pod or secret (or node) still exists with the claimed uid (a pod deleted more than
60 s ago no longer counts). Any failure is a plain 401 to the client, as upstream; the reason is only logged.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kubeplane.api import meta as apimeta
from kubeplane.apiserver.private_files import write_private

if TYPE_CHECKING:
    from .registry import Registry

log = logging.getLogger("kubeplane.apiserver.tokens")

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
"""``--service-account-issuer`` of kubeadm and most clusters; also the default API audience, as upstream's
``--api-audiences`` defaults to the issuer."""
KEY_FILE = "sa.key"
LEEWAY = 60.0
"""go-jose's ``jwt.DefaultLeeway`` (exp, nbf and iat are checked with it)."""
POD_DELETION_GRACE = 60.0
"""A pod-bound token stays valid this long after its pod's deletionTimestamp (upstream ``claims.go``)."""
USER_PREFIX = "system:serviceaccount:"
ALL_GROUP = "system:serviceaccounts"
AUTHENTICATED_GROUP = "system:authenticated"


class InvalidToken(Exception):
    """Why a token was refused (logged; clients only ever see 401 Unauthorized)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value: Any) -> bytes:
    """Go's ``json.Marshal`` of a map: compact, keys sorted."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class SigningKey:
    private: rsa.RSAPrivateKey
    kid: str

    @classmethod
    def of(cls, private: rsa.RSAPrivateKey) -> SigningKey:
        der = private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return cls(private, _b64(hashlib.sha256(der).digest()))

    @classmethod
    def generate(cls) -> SigningKey:
        return cls.of(rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def load_or_create(cls, data_dir: Path) -> SigningKey:
        """The key in ``data_dir/sa.key``, written (0600, via a temporary file and rename) on first use."""
        path = data_dir / KEY_FILE
        if path.exists():
            loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if not isinstance(loaded, rsa.RSAPrivateKey):
                raise ValueError(f"{path}: not an RSA private key")
            return cls.of(loaded)
        key = cls.generate()
        pem = key.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        write_private(path, pem)
        return key


@dataclass
class TokenIssuer:
    """Signs and verifies this server's ServiceAccount JWTs. ``audiences``: the API audiences a token must name
    one of to authenticate here (and what TokenRequest defaults to)."""

    key: SigningKey
    issuer: str = DEFAULT_ISSUER
    audiences: tuple[str, ...] = field(default=(DEFAULT_ISSUER,))

    def sign(self, claims: Mapping[str, Any]) -> str:
        header = _b64(_json({"alg": "RS256", "kid": self.key.kid}))
        payload = _b64(_json(claims))
        signature = self.key.private.sign(f"{header}.{payload}".encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{_b64(signature)}"

    def verify(self, token: str, *, now: float, audiences: Sequence[str] | None = None) -> dict[str, Any]:
        """The token's claims if this server issued it, its signature holds, it is valid at ``now`` and names one
        of ``audiences`` (default: the API audiences; a TokenReview's ``spec.audiences`` otherwise)."""
        targets = tuple(audiences) if audiences else self.audiences
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("not a JWT")
        try:
            header = orjson.loads(_unb64(parts[0]))
            claims = orjson.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, orjson.JSONDecodeError):
            raise InvalidToken("malformed JWT") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise InvalidToken("malformed JWT")
        if claims.get("iss") != self.issuer:  # upstream: not ours, left to other authenticators
            raise InvalidToken("issuer is not this server's")
        if header.get("alg") != "RS256":
            raise InvalidToken("token could not be verified")
        try:
            self.key.private.public_key().verify(
                signature, f"{parts[0]}.{parts[1]}".encode("ascii"), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise InvalidToken("token could not be verified") from None
        _check_times(claims, now)
        aud = claims.get("aud")
        if isinstance(aud, str):
            aud = [aud]
        if not isinstance(aud, list) or not set(aud) & set(targets):
            raise InvalidToken(f"token audiences {aud!r} is invalid for the target audiences {targets!r}")
        return claims


def _check_times(claims: Mapping[str, Any], now: float) -> None:
    """go-jose's ``Claims.ValidateWithLeeway`` as upstream's validator reports it."""
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if isinstance(nbf, int | float) and now + LEEWAY < nbf:
        raise InvalidToken("service account token is not valid yet")
    if isinstance(exp, int | float) and now - LEEWAY > exp:
        raise InvalidToken("service account token has expired")
    if isinstance(iat, int | float) and now + LEEWAY < iat:
        raise InvalidToken("service account token is issued in the future")
    if not isinstance(exp, int | float):
        raise InvalidToken("service account token has no expiry")


def _ref(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj["metadata"]
    return {"name": str(meta.get("name", "")), "uid": str(meta.get("uid", ""))}


def claims(
    *,
    issuer: str,
    service_account: Mapping[str, Any],
    audiences: Sequence[str],
    expiration_seconds: int,
    now: float,
    jti: str,
    pod: Mapping[str, Any] | None = None,
    secret: Mapping[str, Any] | None = None,
    node: Mapping[str, Any] | None = None,
    warn_after: int = 0,
) -> dict[str, Any]:
    """Upstream ``serviceaccount.Claims`` plus the issuer the generator adds. A token binds to one object: a pod
    (with the node it runs on, if known), a secret or a node."""
    issued = int(now)
    namespace = str(service_account["metadata"].get("namespace", ""))
    private: dict[str, Any] = {"namespace": namespace, "serviceaccount": _ref(service_account)}
    if pod is not None:
        private["pod"] = _ref(pod)
        if node is not None:
            private["node"] = _ref(node)
    elif secret is not None:
        private["secret"] = _ref(secret)
    elif node is not None:
        private["node"] = _ref(node)
    if warn_after:
        private["warnafter"] = issued + warn_after
    return {
        "aud": list(audiences),
        "exp": issued + expiration_seconds,
        "iat": issued,
        "iss": issuer,
        "jti": jti,
        "kubernetes.io": private,
        "nbf": issued,
        "sub": f"{USER_PREFIX}{namespace}:{service_account['metadata'].get('name', '')}",
    }


@dataclass(frozen=True)
class UserInfo:
    """Who a request is (upstream ``user.DefaultInfo``)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The user a ServiceAccount's token authenticates as (``pkg/serviceaccount`` ``UserInfo``: the name
    ``system:serviceaccount:<ns>:<name>``, the groups ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``,
    plus ``system:authenticated`` the authenticator adds), e.g. for a component acting as an account in-process."""
    return UserInfo(
        name=f"{USER_PREFIX}{namespace}:{name}",
        uid=uid,
        groups=(ALL_GROUP, f"{ALL_GROUP}:{namespace}", AUTHENTICATED_GROUP),
    )


def issuer_of(registry: Registry) -> TokenIssuer:
    """The registry's issuer; a registry started without one (in-process, tests) gets a key in memory."""
    if registry.token_issuer is None:
        registry.token_issuer = TokenIssuer(SigningKey.generate())
    return registry.token_issuer


def authenticate(registry: Registry, token: str, *, audiences: Sequence[str] | None = None) -> UserInfo:
    """The ServiceAccount user a bearer token authenticates (module docstring); :class:`InvalidToken` if none.
    ``audiences``: the audiences the token must name one of (default: the API audiences)."""
    issuer = issuer_of(registry)
    now = registry.now()
    claims = issuer.verify(token, now=now, audiences=audiences)
    private = claims.get("kubernetes.io")
    if not isinstance(private, dict):
        raise InvalidToken("service account token claims are missing")
    namespace = private.get("namespace")
    sa_ref = private.get("serviceaccount")
    if not isinstance(namespace, str) or not isinstance(sa_ref, dict):
        raise InvalidToken("service account token claims are missing")
    sa_name, sa_uid = str(sa_ref.get("name", "")), str(sa_ref.get("uid", ""))
    sa = _live(registry, "serviceaccounts", namespace, sa_name, sa_uid, kind="serviceaccount")
    if sa["metadata"].get("deletionTimestamp"):
        raise InvalidToken(f"serviceaccount {namespace}/{sa_name} has been deleted")
    extra: dict[str, tuple[str, ...]] = {}
    pod_ref, secret_ref, node_ref = private.get("pod"), private.get("secret"), private.get("node")
    if isinstance(pod_ref, dict):
        pod = _live(registry, "pods", namespace, str(pod_ref.get("name", "")), str(pod_ref.get("uid", "")), kind="pod")
        deleted = pod["metadata"].get("deletionTimestamp")
        if deleted and apimeta.parse_time(deleted).timestamp() < now - POD_DELETION_GRACE:
            raise InvalidToken(f"pod {namespace}/{pod_ref.get('name')} has been deleted")
        extra["authentication.kubernetes.io/pod-name"] = (str(pod_ref.get("name", "")),)
        extra["authentication.kubernetes.io/pod-uid"] = (str(pod_ref.get("uid", "")),)
    if isinstance(secret_ref, dict):
        name, uid = str(secret_ref.get("name", "")), str(secret_ref.get("uid", ""))
        _live(registry, "secrets", namespace, name, uid, kind="secret")
    if isinstance(node_ref, dict):
        if not isinstance(pod_ref, dict):  # a node-bound token needs its node; a pod's node is informative
            _live(registry, "nodes", None, str(node_ref.get("name", "")), str(node_ref.get("uid", "")), kind="node")
        extra["authentication.kubernetes.io/node-name"] = (str(node_ref.get("name", "")),)
        extra["authentication.kubernetes.io/node-uid"] = (str(node_ref.get("uid", "")),)
    if isinstance(claims.get("jti"), str) and claims["jti"]:
        extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims['jti']}",)
    return UserInfo(
        name=f"{USER_PREFIX}{namespace}:{sa_name}",
        uid=sa_uid,
        groups=(ALL_GROUP, f"{ALL_GROUP}:{namespace}", AUTHENTICATED_GROUP),
        extra=extra,
    )


def _live(registry: Registry, plural: str, namespace: str | None, name: str, uid: str, *, kind: str) -> Any:
    """The object a token names, which must still exist with the uid the token claims."""
    obj = registry.get_cached(registry.resource("", plural), namespace, name)
    where = f"{namespace}/{name}" if namespace is not None else name
    if obj is None:
        raise InvalidToken(f"{kind} {where} has been deleted")
    actual = str(obj["metadata"].get("uid", ""))
    if actual != uid:
        raise InvalidToken(f"{kind} UID ({actual}) does not match claim ({uid})")
    return obj
