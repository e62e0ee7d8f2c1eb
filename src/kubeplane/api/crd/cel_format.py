"""The Kubernetes CEL ``format`` library (k8s.io/apiserver pkg/cel/library/format.go) for cel-python:
``format.named(name)`` (an optional Format), ``format.<name>()`` and ``<Format>.validate(s)``, which is
``optional.none()`` for a valid string and otherwise the optional list of apimachinery's messages (the name
validators of pkg/api/validation and pkg/util/validation; ``uri`` as ``url.ParseRequestURI``; ``uuid``,
``byte``, ``date``, ``datetime`` as kube-openapi's strfmt with upstream's fixed messages).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from kubeplane.api.validation import names

from .cel_types import EMPTY, Optional, is_package
from .cel_url import parse_request_uri

__all__ = ["FORMATS", "FUNCTIONS", "Format"]


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    validate: Callable[[str], list[str]]


def _mask_trailing_dash(s: str) -> str:
    """apimachinery ``maskTrailingDash``: a generateName prefix may end in ``-``."""
    return s[:-1] + "a" if len(s) > 1 and s.endswith("-") else s


def _prefixed(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda s: check(_mask_trailing_dash(s))


def _uri(s: str) -> list[str]:
    try:
        parse_request_uri(s)
    except ValueError as exc:
        return [str(exc)]
    return []


_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")


def _uuid(s: str) -> list[str]:
    return [] if _UUID.match(s) else ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(s: str) -> list[str]:
    try:
        datetime.datetime.strptime(s, "%Y-%m-%d")
    except ValueError:
        return ["invalid date"]
    return []


_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")


def _datetime(s: str) -> list[str]:
    return [] if _DATETIME.match(s) else ["invalid datetime"]


FORMATS: Mapping[str, Format] = {
    "dns1123Label": Format("DNS1123Label", names.is_dns1123_label),
    "dns1123Subdomain": Format("DNS1123Subdomain", names.is_dns1123_subdomain),
    "dns1035Label": Format("DNS1035Label", names.is_dns1035_label),
    "qualifiedName": Format("QualifiedName", names.is_qualified_name),
    "dns1123LabelPrefix": Format("DNS1123LabelPrefix", _prefixed(names.is_dns1123_label)),
    "dns1123SubdomainPrefix": Format("DNS1123SubdomainPrefix", _prefixed(names.is_dns1123_subdomain)),
    "dns1035LabelPrefix": Format("DNS1035LabelPrefix", _prefixed(names.is_dns1035_label)),
    "labelValue": Format("LabelValue", names.is_valid_label_value),
    "uri": Format("URI", _uri),
    "uuid": Format("uuid", _uuid),
    "byte": Format("byte", _byte),
    "date": Format("date", _date),
    "datetime": Format("datetime", _datetime),
}


def _named(package: Any, name: Any) -> Any:
    if not is_package(package, "format") or not isinstance(name, str):
        raise TypeError("format.named")
    found = FORMATS.get(str(name))
    return EMPTY if found is None else Optional(found, present=True)


def _validate(fmt: Any, s: Any) -> Any:
    if not isinstance(fmt, Format) or not isinstance(s, str):
        raise TypeError("validate")
    problems = fmt.validate(str(s))
    if not problems:
        return EMPTY
    return Optional(celtypes.ListType([celtypes.StringType(p) for p in problems]), present=True)


def _constant(key: str) -> Callable[[Any], Any]:
    def get(package: Any) -> Any:
        if not is_package(package, "format"):
            raise TypeError(f"format.{key}")
        return FORMATS[key]

    return get


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "named": _named,
    "validate": _validate,
    **{key: _constant(key) for key in FORMATS},
}
