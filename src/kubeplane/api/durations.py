"""Go's ``time.Duration`` text form: ``time.ParseDuration`` and ``Duration.String()``, over integer nanoseconds.

Used wherever upstream reads or prints a duration: scheduler configuration, leader-election flags, the
protobuf Duration, kubelet event messages and the ``sim.kubeplane.io/duration`` annotation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field as fielderr

_UNITS: Final[Mapping[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # U+00B5 micro sign
    "\u03bcs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_COMPONENT: Final = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]*)")
_MAX_NS: Final = 2**63 - 1


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``: ``"1m30s"`` -> nanoseconds; raises ValueError with Go's message."""
    quoted = fielderr.go_quote(text)
    s = text
    neg = s[:1] == "-"
    if s[:1] in "+-":
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0
    while s:
        m = _COMPONENT.match(s)
        assert m is not None  # the pattern matches the empty prefix at least
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        scale = _UNITS.get(unit)
        if scale is None:
            raise ValueError(f"time: unknown unit {fielderr.go_quote(unit)} in duration {quoted}")
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX_NS + (1 if neg else 0):
            raise ValueError(f"time: invalid duration {quoted}")
        s = s[m.end() :]
    return -total if neg else total


def _frac(value: int, digits: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: ``value``'s last ``digits`` digits as ``.ddd`` without trailing zeros, and the rest."""
    frac = value % 10**digits
    rest = value // 10**digits
    if frac == 0:
        return "", rest
    return "." + str(frac).rjust(digits, "0").rstrip("0"), rest


def format_duration(ns: int) -> str:
    """Go's ``Duration.String()``: ``90_000_000_000`` -> ``"1m30s"``, 0 -> ``"0s"``, 1500 -> ``"1.5µs"``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        digits, unit = (3, "\u00b5s") if u < 1_000_000 else (6, "ms")
        frac, whole = _frac(u, digits)
        return f"{sign}{whole}{frac}{unit}"
    frac, secs = _frac(u, 9)
    out = f"{secs % 60}{frac}s"
    mins = secs // 60
    if mins:
        out = f"{mins % 60}m{out}"
        hours = mins // 60
        if hours:
            out = f"{hours}h{out}"
    return sign + out


def duration_seconds(value: Any) -> float:
    """A configuration file's duration: a Go duration (``"10m"``, ``"1h30m"``) or a number of seconds, never
    negative; raises ValueError with a one-line reason (Go's message for a malformed duration)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 2m or 30s, not {value!r}")
    seconds = float(value) if isinstance(value, int | float) else parse_duration(str(value).strip()) / 1e9
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds
