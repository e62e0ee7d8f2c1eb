"""Syntax checks for names, labels, ports and addresses, as apimachinery's ``util/validation``.

Each ``is_*`` function returns the list of upstream's error strings (empty when valid), verbatim, because they
end up in 422 ``Status`` causes that clients display and match. Callers wrap them into field errors with
:func:`kubeplane.api.validation.field.invalid`. The functions that upstream gives a field path (IP, CIDR,
domain-prefixed path) return field errors directly.

Invariants kept from upstream
    * Lengths are counted in UTF-8 bytes, as Go's ``len`` does, so a name with non-ASCII characters gets the
      length error exactly when upstream gives it.
    * Regexes match the whole value (Go's ``^...$`` without multiline is ``re.fullmatch``; Python's ``$``
      would accept a trailing newline).
    * Several errors may be returned for one value, in upstream's order (length first, then format).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from typing import Final

from kubeplane.api.validation import field
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "DNS1035_LABEL_MAX_LENGTH",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "empty_error",
    "inclusive_range_error",
    "is_c_identifier",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_domain_prefixed_path",
    "is_env_var_name",
    "is_http_header_name",
    "is_in_range",
    "is_prefixed_label_key",
    "is_qualified_name",
    "is_valid_cidr",
    "is_valid_ip",
    "is_valid_ipv4_address",
    "is_valid_ipv6_address",
    "is_valid_label_value",
    "is_valid_percent",
    "is_valid_port_name",
    "is_valid_port_num",
    "is_wildcard_dns1123_subdomain",
    "max_len_error",
    "regex_error",
]

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_WILDCARD_FMT: Final = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_MSG: Final = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
    "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT: Final = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_MSG: Final = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'"
)
_PERCENT_FMT: Final = "[0-9]+%"
_PERCENT_MSG: Final = "a valid percent string must be a numeric string followed by an ending '%'"
_HTTP_HEADER_FMT: Final = "[-A-Za-z0-9]+"
_HTTP_HEADER_MSG: Final = "a valid HTTP header must consist of alphanumeric characters or '-'"
_ENV_VAR_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_MSG: Final = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit"
)
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_MSG: Final = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_HTTP_PATH_FMT: Final = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"

_dns1123_label_re: Final = re.compile(_DNS1123_LABEL_FMT)
_dns1123_subdomain_re: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_dns1035_label_re: Final = re.compile(_DNS1035_LABEL_FMT)
_wildcard_re: Final = re.compile(_WILDCARD_FMT)
_qualified_name_re: Final = re.compile(_QUALIFIED_NAME_FMT)
_label_value_re: Final = re.compile(_LABEL_VALUE_FMT)
_c_identifier_re: Final = re.compile(_C_IDENTIFIER_FMT)
_percent_re: Final = re.compile(_PERCENT_FMT)
_http_header_re: Final = re.compile(_HTTP_HEADER_FMT)
_env_var_re: Final = re.compile(_ENV_VAR_FMT)
_config_map_key_re: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_http_path_re: Final = re.compile(_HTTP_PATH_FMT)
_port_name_charset_re: Final = re.compile("[-a-z0-9]+")


def _blen(value: str) -> int:
    """Go's ``len``: UTF-8 bytes."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    """Upstream ``MaxLenError``."""
    return f"must be no more than {length} bytes"


@functools.cache  # constant arguments everywhere: validators build the message on every call
def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream ``RegexError``, including its double space after the first example (``'my-name',  or``)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def empty_error() -> str:
    """Upstream ``EmptyError``."""
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    """Upstream ``InclusiveRangeError``."""
    return f"must be between {lo} and {hi}, inclusive"


def _bounded_match(value: str, *, max_len: int, pattern: re.Pattern[str], error: str) -> list[str]:
    """The shape most upstream checks share: a length error, then a pattern error (both may apply)."""
    errs: list[str] = []
    if _blen(value) > max_len:
        errs.append(max_len_error(max_len))
    if pattern.fullmatch(value) is None:
        errs.append(error)
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """A lowercase RFC 1123 label (namespace names, most ``metadata.name`` of DNS-label kinds)."""
    errs: list[str] = []
    if _blen(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if _dns1123_label_re.fullmatch(value) is None:
        if _dns1123_subdomain_re.fullmatch(value) is not None:
            # A valid subdomain but not a label: length was checked already, so it must be the dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """A lowercase RFC 1123 subdomain, the default rule for ``metadata.name``."""
    return _bounded_match(
        value,
        max_len=DNS1123_SUBDOMAIN_MAX_LENGTH,
        pattern=_dns1123_subdomain_re,
        error=regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"),
    )


def is_dns1035_label(value: str) -> list[str]:
    """An RFC 1035 label: as RFC 1123 but starting with a letter (service names)."""
    return _bounded_match(
        value,
        max_len=DNS1035_LABEL_MAX_LENGTH,
        pattern=_dns1035_label_re,
        error=regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"),
    )


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """``*.`` followed by a DNS subdomain (RFC 1034 section 4.3.3)."""
    return _bounded_match(
        value,
        max_len=DNS1123_SUBDOMAIN_MAX_LENGTH,
        pattern=_wildcard_re,
        error=regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"),
    )


def is_qualified_name(value: str) -> list[str]:
    """A label key / annotation key / taint key: ``[prefix/]name``, prefix a DNS subdomain, name <= 63."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _blen(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if _qualified_name_re.fullmatch(name) is None:
        errs.append(
            "name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_prefixed_label_key(value: str) -> list[str]:
    """A qualified name that must carry a domain prefix (``example.com/key``, not ``key``)."""
    errs = is_qualified_name(value)
    if errs:
        return errs
    if value.count("/") != 1:
        return ["must include a prefix (e.g. 'example.com/key')"]
    return []


def is_valid_label_value(value: str) -> list[str]:
    """A label value: empty, or up to 63 alphanumerics with ``-_.`` inside."""
    return _bounded_match(
        value,
        max_len=LABEL_VALUE_MAX_LENGTH,
        pattern=_label_value_re,
        error=regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"),
    )


def is_c_identifier(value: str) -> list[str]:
    """A C identifier (format only, no length limit)."""
    if _c_identifier_re.fullmatch(value) is None:
        return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]
    return []


def is_in_range(value: int, lo: int, hi: int) -> list[str]:
    """``lo <= value <= hi``."""
    return [] if lo <= value <= hi else [inclusive_range_error(lo, hi)]


def is_valid_port_num(port: int) -> list[str]:
    """A non-zero TCP/UDP port, 1..65535."""
    return is_in_range(port, 1, 65535)


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME: <= 15 chars of ``[-a-z0-9]``, at least one letter, no ``--``, no edge hyphen."""
    errs: list[str] = []
    if _blen(port) > 15:
        errs.append(max_len_error(15))
    if _port_name_charset_re.fullmatch(port) is None:
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_percent(percent: str) -> list[str]:
    """``<digits>%``, e.g. a maxUnavailable written as a percentage."""
    if _percent_re.fullmatch(percent) is None:
        return [regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%")]
    return []


def is_http_header_name(value: str) -> list[str]:
    """Go's (strict) notion of an HTTP header field name."""
    if _http_header_re.fullmatch(value) is None:
        return [regex_error(_HTTP_HEADER_MSG, _HTTP_HEADER_FMT, "X-Header-Name")]
    return []


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_env_var_name(value: str) -> list[str]:
    """A container environment variable name (the strict, non-relaxed rule)."""
    errs: list[str] = []
    if _env_var_re.fullmatch(value) is None:
        errs.append(regex_error(_ENV_VAR_MSG, _ENV_VAR_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    errs.extend(_has_chdir_prefix(value))
    return errs


def is_config_map_key(value: str) -> list[str]:
    """A ConfigMap or Secret data key (it becomes a file name when mounted, hence the ``..`` rules)."""
    errs = _bounded_match(
        value,
        max_len=DNS1123_SUBDOMAIN_MAX_LENGTH,
        pattern=_config_map_key_re,
        error=regex_error(_CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"),
    )
    errs.extend(_has_chdir_prefix(value))
    return errs


def is_domain_prefixed_path(path: Path | None, value: str) -> ErrorList:
    """``acme.io/foo``: a DNS subdomain, ``/``, then RFC 3986 path characters."""
    if not value:
        return [field.required(path, "")]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [field.invalid(path, value, detail='must be a domain-prefixed path (such as "acme.io/foo")')]
    errs: ErrorList = [field.invalid(path, host, detail=m) for m in is_dns1123_subdomain(host)]
    if _http_path_re.fullmatch(rest) is None:
        errs.append(field.invalid(path, rest, detail=regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


# --- IP addresses ------------------------------------------------------------------------------------------
#
# Upstream parses with k8s.io/utils/net ParseIPSloppy (Go 1.16's net.ParseIP): IPv4 octets may carry leading
# zeros and are read as decimal; zones are not allowed. IPv6 hextets are checked by Python's ipaddress, which
# refuses hextets of more than four digits that Go would accept when their value fits ("00001") -- a corner
# deliberately not reproduced.


def _parse_ipv4_sloppy(value: str) -> bytes | None:
    parts = value.split(".")
    if len(parts) != 4:
        return None
    out = bytearray()
    for p in parts:
        if not p or not p.isascii() or not p.isdigit():
            return None
        n = int(p)
        if n > 255:
            return None
        out.append(n)
    return bytes(out)


def _parse_ip_sloppy(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if ":" not in value:
        raw = _parse_ipv4_sloppy(value)
        return None if raw is None else ipaddress.IPv4Address(raw)
    if "%" in value or not value.isascii():
        return None
    head, _, tail = value.rpartition(":")
    if "." in tail:
        raw = _parse_ipv4_sloppy(tail)
        if raw is None:
            return None
        value = f"{head}:{ipaddress.IPv4Address(raw)}"
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def _is_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's ``ip.To4() != nil``: IPv4, or IPv6 of the IPv4-mapped form ``::ffff:a.b.c.d``."""
    return isinstance(ip, ipaddress.IPv4Address) or ip.ipv4_mapped is not None


def is_valid_ip(path: Path | None, value: str) -> ErrorList:
    """An IPv4 or IPv6 address, accepted as sloppily as upstream (IPv4 leading zeros allowed)."""
    if _parse_ip_sloppy(value) is None:
        msg = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        return [field.invalid(path, value, detail=msg).with_origin("format=ip-sloppy")]
    return []


def is_valid_ipv4_address(path: Path | None, value: str) -> ErrorList:
    """An IPv4 address (an IPv4-mapped IPv6 address counts, as upstream)."""
    ip = _parse_ip_sloppy(value)
    if ip is None or not _is_ipv4(ip):
        return [field.invalid(path, value, detail="must be a valid IPv4 address")]
    return []


def is_valid_ipv6_address(path: Path | None, value: str) -> ErrorList:
    """An IPv6 address that is not IPv4-mapped."""
    ip = _parse_ip_sloppy(value)
    if ip is None or _is_ipv4(ip):
        return [field.invalid(path, value, detail="must be a valid IPv6 address")]
    return []


def is_valid_cidr(path: Path | None, value: str) -> ErrorList:
    """``<ip>/<prefix length>``; host bits may be set (upstream only warns about that)."""
    addr, sep, bits = value.partition("/")
    ip = _parse_ip_sloppy(addr) if sep else None
    width = 32 if isinstance(ip, ipaddress.IPv4Address) else 128
    if ip is None or not bits.isascii() or not bits.isdigit() or int(bits) > width:
        return [field.invalid(path, value, detail="must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    return []


# --- strict forms (apimachinery util/validation/ip.go IsValidIP / IsValidCIDR) -------------------------------
#
# Fields added since v1.33 (IPAddress names, ServiceCIDR cidrs) are validated strictly: what ParseIPSloppy accepts
# but netip.ParseAddr refuses has leading zeros; IPv4-mapped IPv6 is refused; and the value must be the canonical
# string (Go's ``net.IP.String()``, which Python's ``ipaddress`` matches: RFC 5952 for IPv6).

_IP_FORMAT_MSG: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_CIDR_FORMAT_MSG: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _strict_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netip.ParseAddr: no leading zeros in IPv4 octets (an IPv4 tail of IPv6 included), no zone."""
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def is_valid_ip_strict(path: Path | None, value: str) -> ErrorList:
    """Upstream ``IsValidIP``: parsable, no leading zeros, not IPv4-mapped, and in canonical form."""
    sloppy = _parse_ip_sloppy(value)
    if sloppy is None:
        return [field.invalid(path, value, detail=_IP_FORMAT_MSG).with_origin("format=ip-strict")]
    errs: ErrorList = []
    strict = _strict_ip(value)
    if strict is None:
        errs.append(field.invalid(path, value, detail="must not have leading 0s"))
    if isinstance(sloppy, ipaddress.IPv6Address) and sloppy.ipv4_mapped is not None:
        errs.append(field.invalid(path, value, detail="must not be an IPv4-mapped IPv6 address"))
    if errs:
        return [e.with_origin("format=ip-strict") for e in errs]
    if value != str(sloppy):
        detail = f"must be in canonical form ({json.dumps(str(sloppy))})"
        return [field.invalid(path, value, detail=detail).with_origin("format=ip-strict")]
    return []


def is_valid_cidr_strict(path: Path | None, value: str) -> ErrorList:
    """Upstream ``IsValidCIDR``: a subnet (no bits beyond the prefix), no leading zeros, not IPv4-mapped, and in
    canonical form."""
    addr, sep, bits = value.partition("/")
    ip = _parse_ip_sloppy(addr) if sep else None
    width = 32 if isinstance(ip, ipaddress.IPv4Address) else 128
    if ip is None or not bits.isascii() or not bits.isdigit() or len(bits) > 3 or int(bits) > width:
        return [field.invalid(path, value, detail=_CIDR_FORMAT_MSG)]
    strict = _strict_ip(addr)
    if strict is None or (len(bits) > 1 and bits.startswith("0")):
        return [field.invalid(path, value, detail="must not have leading 0s in IP or prefix length")]
    if isinstance(strict, ipaddress.IPv6Address) and strict.ipv4_mapped is not None:
        return [field.invalid(path, value, detail="must not have an IPv4-mapped IPv6 address")]
    network = ipaddress.ip_network(f"{strict}/{int(bits)}", strict=False)
    if network.network_address != strict:
        return [field.invalid(path, value, detail="must not have bits set beyond the prefix length")]
    if value != str(network):
        return [field.invalid(path, value, detail=f"must be in canonical form ({json.dumps(str(network))})")]
    return []


def ip_family_of_cidr(value: str) -> str:
    """netutils ``IPFamilyOfCIDRString``: ``IPv4``, ``IPv6`` or ``""`` when it does not parse."""
    addr, sep, _ = value.partition("/")
    ip = _parse_ip_sloppy(addr) if sep else None
    if ip is None:
        return ""
    return "IPv4" if _is_ipv4(ip) else "IPv6"
