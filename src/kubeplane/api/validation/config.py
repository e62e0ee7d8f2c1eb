"""ConfigMap and Secret validation, as kube-apiserver's ``ValidateConfigMap`` and ``ValidateSecret`` (plus their
``...Update`` counterparts) in ``pkg/apis/core/validation``.

Both hold user data under keys that must be valid config-map keys, at most 1 MiB in all, and freeze their data
once ``immutable: true`` is set. A Secret's built-in ``type`` says which keys it must hold (and, for docker
configs, that they are JSON objects); a service-account token Secret must name its service account in an
annotation, one of the few places a kind-specific rule reads ``metadata``.

Invariants
    * ``binaryData`` and Secret ``data`` are base64 on the wire; a value that does not decode is reported with
      the value omitted (it is secret, or binary) and left out of the size sum.
    * ``stringData`` is merged into ``data`` before the checks, as upstream's conversion does.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each, normalize, utf8_len, validate_immutable_field
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import CORE_V1, Reader, finish

__all__ = ["validate_config_map", "validate_config_map_update", "validate_secret", "validate_secret_update"]

MAX_SECRET_SIZE: Final = 1024 * 1024


def _decoded(o: Reader, key: str) -> dict[str, bytes]:
    """A ``map[string][]byte`` field: base64 values decoded, bad ones reported."""
    out: dict[str, bytes] = {}
    for k, v in o.string_map(key).items():
        try:
            out[k] = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError) as exc:
            o.errs.append(field.invalid(o.at(key).key(k), "<value omitted>", detail=f"illegal base64 data: {exc}"))
    return out


def _keys(o: Reader, key: str, keys: Mapping[str, object]) -> None:
    for k in keys:
        o.errs.extend(invalid_each(o.at(key).key(k), k, names.is_config_map_key(k)))


def validate_config_map(cm: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateConfigMap``: keys, no key in both maps, total size at most 1 MiB."""
    errs: ErrorList = []
    root = CORE_V1.root(cm, errs)
    data, binary = root.string_map("data"), _decoded(root, "binaryData")
    _keys(root, "data", data)
    for k in data:
        if k in binary:
            errs.append(field.invalid(root.at("data").key(k), k, detail="duplicate of key present in binaryData"))
    _keys(root, "binaryData", binary)
    size = sum(utf8_len(v) for v in data.values()) + sum(map(len, binary.values()))
    if size > MAX_SECRET_SIZE:
        errs.append(field.too_long(field.new_path(""), MAX_SECRET_SIZE))
    return finish(errs)


def _immutable_data(errs: ErrorList, new: Reader, old: Reader, keys: tuple[str, ...]) -> None:
    """Once ``immutable: true``, the flag and the data may not change."""
    if old.boolean("immutable"):
        if not new.boolean("immutable"):
            errs.append(field.forbidden(new.at("immutable"), "field is immutable when `immutable` is set"))
        for key in keys:
            if normalize(new.data.get(key)) != normalize(old.data.get(key)):
                errs.append(field.forbidden(new.at(key), "field is immutable when `immutable` is set"))


def validate_config_map_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateConfigMapUpdate``: the immutability rules, then the create rules on ``new``."""
    errs: ErrorList = []
    _immutable_data(errs, CORE_V1.root(new, errs), CORE_V1.root(old, []), ("data", "binaryData"))
    return finish(errs + validate_config_map(new))


_SECRET_REQUIRED_KEYS: Final = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def validate_secret(secret: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateSecret``: keys, total size at most 1 MiB, the data each built-in type needs.

    ``stringData`` is merged into ``data`` by upstream's conversion before validation; it is merged here too.
    """
    errs: ErrorList = []
    root = CORE_V1.root(secret, errs)
    data = _decoded(root, "data")
    data.update((k, v.encode("utf-8", "surrogatepass")) for k, v in root.string_map("stringData").items())
    data_path = root.at("data")
    _keys(root, "data", data)
    if sum(map(len, data.values())) > MAX_SECRET_SIZE:
        errs.append(field.too_long(data_path, MAX_SECRET_SIZE))
    kind = root.string("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = root.child("metadata").child("annotations").data
        if not annotations.get("kubernetes.io/service-account.name"):
            at = field.new_path("metadata", "annotations").key("kubernetes.io/service-account.name")
            errs.append(field.required(at))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.extend(field.required(data_path.key(k)) for k in ("username", "password"))
    elif kind == "kubernetes.io/ssh-auth" and not data.get("ssh-privatekey"):
        errs.append(field.required(data_path.key("ssh-privatekey")))
    for key in _SECRET_REQUIRED_KEYS.get(kind, ()):
        if key not in data:
            errs.append(field.required(data_path.key(key)))
        elif key.startswith(".docker"):
            try:
                if not isinstance(json.loads(data[key]), dict):
                    raise ValueError("json: cannot unmarshal into Go value of type map[string]interface {}")
            except ValueError as exc:
                errs.append(field.invalid(data_path.key(key), "<secret contents redacted>", detail=str(exc)))
    return finish(errs)


def validate_secret_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateSecretUpdate``: the type is fixed, the immutability rules, then the create rules."""
    errs: ErrorList = []
    root, old_root = CORE_V1.root(new, errs), CORE_V1.root(old, [])
    errs.extend(validate_immutable_field(root.string("type"), old_root.string("type"), root.at("type")))
    _immutable_data(errs, root, old_root, ("data",))
    return finish(errs + validate_secret(new))
