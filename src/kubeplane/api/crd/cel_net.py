"""The Kubernetes CEL ``ip`` and ``cidr`` libraries (k8s.io/apiserver pkg/cel/library/ip.go, cidr.go) for
cel-python, on Python's ``ipaddress`` with Go ``net/netip``'s rules: no zones, no IPv4-mapped IPv6 addresses, no
leading zeros in IPv4 octets; ``isGlobalUnicast`` as netip's (private ranges count, 255.255.255.255 does not).
Errors are upstream's (``IP Address "x" parse error during conversion from string: ParseAddr("x"): unable to
parse IP``; ``cidr()``'s with upstream's doubled ``network address parse error during conversion from string:``
prefix); netip's own details are reproduced for IPv4 (its ``parseIPv4`` scan) and prefixes, while an invalid
IPv6 text is reported as ``unable to parse IP`` whatever netip's detail.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from .cel_types import error, is_package

__all__ = ["CIDR", "FUNCTIONS", "IP"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class IP:
    addr: Address

    def __str__(self) -> str:
        return str(self.addr)


@dataclass(frozen=True, slots=True)
class CIDR:
    addr: Address
    prefix: int

    @property
    def network(self) -> Network:
        return ipaddress.ip_network(f"{self.addr}/{self.prefix}", strict=False)

    def __str__(self) -> str:
        return f"{self.addr}/{self.prefix}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ipv4_error(s: str) -> str | None:
    """netip ``parseIPv4``'s error for ``s``, or None when it parses."""
    val, dig_len, pos = 0, 0, 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if dig_len == 1 and val == 0:
                return "IPv4 field has octet with leading zero"
            val = val * 10 + int(c)
            dig_len += 1
            if val > 255:
                return "IPv4 field has value >255"
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                return f"IPv4 field must have at least one digit (at {_quote(s[i:])})"
            if pos == 3:
                return "IPv4 address too long"
            pos += 1
            val, dig_len = 0, 0
        else:
            return f"unexpected character (at {_quote(s[i:])})"
    return "IPv4 address too short" if pos < 3 else None


def _parse_addr_error(s: str) -> str | None:
    """netip ``ParseAddr``'s error text (``ParseAddr("x"): ...``) for ``s``, or None when it parses. IPv6
    details other than a missing address are reported as ``unable to parse IP``."""
    for c in s:
        if c == ".":
            detail = _ipv4_error(s)
            break
        if c == ":":
            try:
                ipaddress.IPv6Address(s.split("%", 1)[0])
            except ValueError:
                detail = "unable to parse IP"
            else:
                detail = None if not s.endswith("%") else "zone must be a non-empty string"
            break
        if c == "%":
            detail = "missing IPv6 address"
            break
    else:
        detail = "unable to parse IP"
    return None if detail is None else f"ParseAddr({_quote(s)}): {detail}"


def parse_addr(raw: str) -> Address:
    """upstream ``parseIPAddr``; ValueError with its message."""
    problem = _parse_addr_error(raw)
    if problem is not None:
        raise ValueError(f"IP Address {_quote(raw)} parse error during conversion from string: {problem}")
    if "%" in raw:
        raise ValueError(f"IP address {_quote(raw)} with zone value is not allowed")
    addr = ipaddress.ip_address(raw)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {_quote(raw)} is not allowed")
    return addr


_CIDR_ERROR = "network address parse error during conversion from string: "


def parse_cidr(raw: str) -> CIDR:
    """upstream ``parseCIDR`` over netip ``ParsePrefix`` (the address is kept unmasked); ValueError with its
    message."""
    slash = raw.rfind("/")
    prefix = f"{_CIDR_ERROR}netip.ParsePrefix({_quote(raw)}): "
    if slash < 0:
        raise ValueError(prefix + "no '/'")
    addr_text, bits = raw[:slash], raw[slash + 1 :]
    problem = _parse_addr_error(addr_text)
    if problem is not None:
        raise ValueError(prefix + problem)
    if "%" in addr_text:
        raise ValueError(prefix + "IPv6 zones cannot be present in a prefix")
    addr = ipaddress.ip_address(addr_text)
    if (len(bits) > 1 and not ("1" <= bits[0] <= "9")) or not bits.isascii() or not bits.lstrip("+-").isdigit():
        raise ValueError(prefix + f"bad bits after slash: {_quote(bits)}")
    width = 32 if addr.version == 4 else 128
    if not 0 <= int(bits) <= width:
        raise ValueError(prefix + "prefix length out of range")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {_quote(raw)} is not allowed")
    return CIDR(addr, int(bits))


def _ip(arg: Any) -> Any:
    if isinstance(arg, CIDR):  # cidr.ip(): the prefix's address
        return IP(arg.addr)
    if not isinstance(arg, str):
        raise TypeError("ip")
    try:
        return IP(parse_addr(str(arg)))
    except ValueError as exc:
        return error(str(exc))


def _is_ip(arg: Any) -> Any:
    if not isinstance(arg, str):
        raise TypeError("isIP")
    try:
        parse_addr(str(arg))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_canonical(package: Any, arg: Any) -> Any:
    if not is_package(package, "ip") or not isinstance(arg, str):
        raise TypeError("ip.isCanonical")
    try:
        addr = parse_addr(str(arg))
    except ValueError as exc:
        return error(str(exc))
    return celtypes.BoolType(str(addr) == str(arg))


def _addr(v: Any) -> Address:
    if not isinstance(v, IP):
        raise TypeError("ip expected")
    return v.addr


def _family(v: Any) -> Any:
    if isinstance(v, CIDR):
        return celtypes.IntType(v.addr.version)
    return celtypes.IntType(_addr(v).version)


def _is_unspecified(v: Any) -> Any:
    return celtypes.BoolType(_addr(v).is_unspecified)


def _is_loopback(v: Any) -> Any:
    return celtypes.BoolType(_addr(v).is_loopback)


def _is_link_local_multicast(v: Any) -> Any:
    a = _addr(v)
    if a.version == 4:
        return celtypes.BoolType(a in ipaddress.ip_network("224.0.0.0/24"))
    return celtypes.BoolType((int(a) >> 112) & 0xFF0F == 0xFF02)


def _is_link_local_unicast(v: Any) -> Any:
    a = _addr(v)
    net = "169.254.0.0/16" if a.version == 4 else "fe80::/10"
    return celtypes.BoolType(a in ipaddress.ip_network(net))


def _is_global_unicast(v: Any) -> Any:
    a = _addr(v)
    if a.version == 4 and str(a) in ("0.0.0.0", "255.255.255.255"):
        return celtypes.BoolType(False)
    link_local = a in ipaddress.ip_network("169.254.0.0/16" if a.version == 4 else "fe80::/10")
    return celtypes.BoolType(not (a.is_unspecified or a.is_loopback or a.is_multicast or link_local))


def _cidr(arg: Any) -> Any:
    """``stringToCIDR``: parseCIDR's error under a second ``network address parse error ...`` prefix."""
    if not isinstance(arg, str):
        raise TypeError("cidr")
    try:
        return parse_cidr(str(arg))
    except ValueError as exc:
        return error(_CIDR_ERROR + str(exc))


def _is_cidr(arg: Any) -> Any:
    if not isinstance(arg, str):
        raise TypeError("isCIDR")
    try:
        parse_cidr(str(arg))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _c(v: Any) -> CIDR:
    if not isinstance(v, CIDR):
        raise TypeError("cidr expected")
    return v


def _contains_ip(c: Any, other: Any) -> Any:
    """``cidrContainsIPString``: a string that is no IP ends in ``no such overload`` (upstream passes the
    receiver, not the parse error, to ``MaybeNoSuchOverloadErr``)."""
    net = _c(c).network
    if isinstance(other, str):
        try:
            addr = parse_addr(str(other))
        except ValueError:
            raise TypeError("containsIP") from None
    else:
        addr = _addr(other)
    return celtypes.BoolType(addr.version == net.version and addr in net)


def _contains_cidr(c: Any, other: Any) -> Any:
    net = _c(c).network
    if isinstance(other, str):
        try:
            other = parse_cidr(str(other))
        except ValueError as exc:
            return error(_CIDR_ERROR + str(exc))
    inner = _c(other)
    if inner.addr.version != net.version:
        return celtypes.BoolType(False)
    return celtypes.BoolType(inner.prefix >= net.prefixlen and inner.addr in net)


def _masked(c: Any) -> Any:
    net = _c(c).network
    return CIDR(net.network_address, net.prefixlen)


def _prefix_length(c: Any) -> Any:
    return celtypes.IntType(_c(c).prefix)


def _string(arg: Any, *rest: Any) -> Any:
    """``string(ip)`` and ``string(cidr)``; the base conversion otherwise."""
    if isinstance(arg, IP | CIDR) and not rest:
        return celtypes.StringType(str(arg))
    return celtypes.StringType(arg, *rest)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "ip": _ip,
    "isIP": _is_ip,
    "isCanonical": _is_canonical,
    "family": _family,
    "isUnspecified": _is_unspecified,
    "isLoopback": _is_loopback,
    "isLinkLocalMulticast": _is_link_local_multicast,
    "isLinkLocalUnicast": _is_link_local_unicast,
    "isGlobalUnicast": _is_global_unicast,
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "masked": _masked,
    "prefixLength": _prefix_length,
    "string": _string,
}
