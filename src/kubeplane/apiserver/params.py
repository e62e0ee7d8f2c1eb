"""Query parameters decoded as kube-apiserver's parameter codec decodes them into ListOptions, DeleteOptions, ...

Upstream turns ``url.Values`` into the options structs with the generated ``Convert_url_Values_To_v1_*``
functions (apimachinery ``pkg/apis/meta/v1/zz_generated.conversion.go``) over the helpers of
``pkg/runtime/conversion.go``. Their rules, which this module reproduces:

* a repeated parameter counts with its **first** value (``(*in)[0]``), except ``dryRun``, which keeps every value
  (see :mod:`.dryrun`);
* a boolean (``watch``, ``allowWatchBookmarks``, ``sendInitialEvents``) is false only for ``0`` or a
  case-insensitive ``false``; anything else, the empty value included, is true;
* an integer (``limit``, ``timeoutSeconds``, ``gracePeriodSeconds``) is ``strconv.ParseInt(s, 10, 64)``: ASCII
  digits with an optional sign, nothing else; a failure is a 400 with strconv's message
  (``strconv.ParseInt: parsing "x": invalid syntax``), never a silent default;
* a resourceVersion is ``strconv.ParseUint(s, 10, 64)`` (the storage versioner's ``ParseResourceVersion``), its
  failure reported as the field error upstream builds (``resourceVersion: Invalid value: ...``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from . import errors

__all__ = ["first_values", "go_bool", "parse_int64", "parse_resource_version", "timeout_seconds"]

_INT64 = re.compile(r"[+-]?[0-9]+")
_UINT64 = re.compile(r"[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1


def first_values(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each parameter's first value, as upstream's conversions read ``url.Values``."""
    query: dict[str, str] = {}
    for key, value in pairs:
        query.setdefault(key, value)
    return query


def go_bool(value: str) -> bool:
    """``runtime.Convert_Slice_string_To_bool`` of a present parameter."""
    return not (value == "0" or value.lower() == "false")


def _go_quote(value: str) -> str:
    """Go's ``%q`` for the printable strings a query carries (enough for strconv's messages)."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_int64(value: str) -> int:
    """``strconv.ParseInt(value, 10, 64)``; 400 with strconv's message on failure."""
    if not value.isascii() or not _INT64.fullmatch(value):
        raise errors.bad_request(f"strconv.ParseInt: parsing {_go_quote(value)}: invalid syntax")
    parsed = int(value)
    if not _INT64_MIN <= parsed <= _INT64_MAX:
        raise errors.bad_request(f"strconv.ParseInt: parsing {_go_quote(value)}: value out of range")
    return parsed


def parse_resource_version(value: str) -> int:
    """``APIObjectVersioner.ParseResourceVersion``: "" and "0" are 0, else a uint64. Upstream reports a failure as
    ``resourceVersion: Invalid value: "x": strconv.ParseUint: ...`` with code 500 (kubernetes#139485, still open);
    kubeplane answers the same message as a 400, since bad input is never a 5xx here."""
    if value in ("", "0"):
        return 0
    reason = ""
    if not value.isascii() or not _UINT64.fullmatch(value):
        reason = "invalid syntax"
    elif int(value) > _UINT64_MAX:
        reason = "value out of range"
    if reason:
        quoted = _go_quote(value)
        raise errors.bad_request(
            f"resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {reason}"
        )
    return int(value)


def timeout_seconds(value: str | None, rng: random.Random) -> float:
    """Client's timeoutSeconds (an int64, 400 otherwise), else upstream's default: a random duration in
    [30 min, 60 min). As upstream, 0 takes the default and a negative value times the watch out at once."""
    seconds = 0 if value is None else parse_int64(value)
    if seconds:
        return float(max(seconds, 0))
    return 1800.0 * (1 + rng.random())
