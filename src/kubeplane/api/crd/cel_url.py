"""The Kubernetes CEL ``urls`` library (k8s.io/apiserver pkg/cel/library/urls.go) for cel-python: ``url(s)``,
``isURL(s)``, ``getScheme``, ``getHost``, ``getHostname``, ``getPort``, ``getEscapedPath``, ``getQuery``.

Acceptance is Go's ``url.ParseRequestURI`` (an absolute URL with a scheme, or an absolute path; no control
characters), with its errors under upstream's ``URL parse error during conversion from string: ``; the parts
are ``url.Parse``'s (a fragment is not part of the path or query).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from celpy import celtypes

from .cel_types import error

__all__ = ["FUNCTIONS", "URL", "parse_request_uri"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")


@dataclass(frozen=True, slots=True)
class URL:
    scheme: str
    host: str
    path: str
    query: str


def parse_request_uri(raw: str) -> URL:
    """``url.ParseRequestURI`` then ``url.Parse``; ValueError with Go's message."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise ValueError(f'parse "{raw}": net/url: invalid control character in URL')
    if raw.startswith("/"):
        parts = urlsplit(raw)
        return URL("", "", parts.path, parts.query)
    scheme, colon, _ = raw.partition(":")
    if not colon or not scheme:
        if raw.startswith(":"):
            raise ValueError(f'parse "{raw}": missing protocol scheme')
        raise ValueError(f'parse "{raw}": invalid URI for request')
    if not _SCHEME.match(scheme):
        raise ValueError(f'parse "{raw}": first path segment in URL cannot contain colon')
    parts = urlsplit(raw.split("#", 1)[0])
    return URL(parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query)


def _url(s: Any) -> Any:
    if not isinstance(s, str):
        raise TypeError("url")
    try:
        return parse_request_uri(str(s))
    except ValueError as exc:
        return error(f"URL parse error during conversion from string: {exc}")


def _is_url(s: Any) -> Any:
    if not isinstance(s, str):
        raise TypeError("isURL")
    try:
        parse_request_uri(str(s))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _u(v: Any) -> URL:
    if not isinstance(v, URL):
        raise TypeError("url expected")
    return v


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1 : host.index("]")] if "]" in host else host[1:]
    return host.rpartition(":")[0] if ":" in host else host


def _port(host: str) -> str:
    tail = host[host.index("]") + 1 :] if host.startswith("[") and "]" in host else host
    if ":" not in tail:
        return ""
    port = tail.rpartition(":")[2]
    return port if port.isdigit() else ""


def _get_query(v: Any) -> Any:
    out: dict[Any, Any] = {}
    for key, value in parse_qsl(_u(v).query, keep_blank_values=True):
        out.setdefault(celtypes.StringType(key), celtypes.ListType()).append(celtypes.StringType(value))
    return celtypes.MapType(out)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "url": _url,
    "isURL": _is_url,
    "getScheme": lambda v: celtypes.StringType(_u(v).scheme),
    "getHost": lambda v: celtypes.StringType(_u(v).host),
    "getHostname": lambda v: celtypes.StringType(_hostname(_u(v).host)),
    "getPort": lambda v: celtypes.StringType(_port(_u(v).host)),
    "getEscapedPath": lambda v: celtypes.StringType(_u(v).path),
    "getQuery": _get_query,
}
