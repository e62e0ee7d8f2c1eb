"""The Kubernetes CEL ``semver`` library at version 1 (k8s.io/apiserver pkg/cel/library/semverlib.go) for
cel-python: ``semver(s)``, ``semver(s, normalize)``, ``isSemver(s)``, ``isSemver(s, normalize)``, ``major()``,
``minor()``, ``patch()``, ``isGreaterThan``, ``isLessThan``, ``compareTo``. Parsing is blang/semver v4's strict
``Parse`` with its error texts; ``normalize`` drops a leading ``v``, fills a missing minor or patch with ``0``
and strips leading zeros, as upstream's ``normalizeVersion``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from .cel_types import error

__all__ = ["FUNCTIONS", "Semver", "compare", "parse_semver"]

_ALNUM = re.compile(r"^[0-9A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()


def _number(text: str, name: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"Invalid character(s) found in {name} number {text!r}".replace("'", '"'))
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{name.capitalize()} number must not contain leading zeroes {text!r}".replace("'", '"'))
    return int(text)


def parse_semver(text: str) -> Semver:
    """blang/semver v4 ``Parse``; ValueError with its message."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    cut = len(rest)
    for i, c in enumerate(rest):
        if c in "+-":
            cut = i
            break
    patch = _number(rest[:cut], "patch")
    pre: list[str] = []
    build: list[str] = []
    tail = rest[cut:]
    if tail.startswith("-"):
        body, _, b = tail[1:].partition("+")
        pre = body.split(".")
        build = b.split(".") if "+" in tail else []
    elif tail.startswith("+"):
        build = tail[1:].split(".")
    for p in pre:
        if not p:
            raise ValueError("Prerelease is empty")
        if not _ALNUM.match(p):
            raise ValueError(f'Invalid character(s) found in prerelease "{p}"')
        if p.isdigit() and len(p) > 1 and p[0] == "0":
            raise ValueError(f'Prerelease number must not contain leading zeroes "{p}"')
    for b in build:
        if not b:
            raise ValueError("Build meta data is empty")
        if not _ALNUM.match(b):
            raise ValueError(f'Invalid character(s) found in build meta data "{b}"')
    return Semver(major, minor, patch, tuple(pre), tuple(build))


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    core, sep, tail = text, "", ""
    for i, c in enumerate(text):
        if c in "+-":
            core, sep, tail = text[:i], c, text[i + 1 :]
            break
    nums = core.split(".")
    while len(nums) < 3:
        nums.append("0")
    nums = [n.lstrip("0") or "0" if n.isdigit() else n for n in nums]
    return ".".join(nums) + (sep + tail if sep else "")


def _pre_key(p: str) -> tuple[int, int, str]:
    return (0, int(p), "") if p.isdigit() else (1, 0, p)


def compare(a: Any, b: Any) -> int:
    if not isinstance(a, Semver) or not isinstance(b, Semver):
        raise TypeError("semver expected")
    left, right = (a.major, a.minor, a.patch), (b.major, b.minor, b.patch)
    if left != right:
        return -1 if left < right else 1
    if not a.pre or not b.pre:
        return (not a.pre) - (not b.pre) if a.pre or b.pre else 0
    ka, kb = [_pre_key(p) for p in a.pre], [_pre_key(p) for p in b.pre]
    return (ka > kb) - (ka < kb)


def _semver(s: Any, normalize: Any = None) -> Any:
    if not isinstance(s, str):
        raise TypeError("semver")
    text = _normalize(str(s)) if normalize else str(s)
    try:
        return parse_semver(text)
    except ValueError as exc:
        return error(str(exc))


def _is_semver(s: Any, normalize: Any = None) -> Any:
    if not isinstance(s, str):
        raise TypeError("isSemver")
    try:
        parse_semver(_normalize(str(s)) if normalize else str(s))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _field(name: str) -> Callable[[Any], Any]:
    def get(v: Any) -> Any:
        if not isinstance(v, Semver):
            raise TypeError(name)
        return celtypes.IntType(getattr(v, name))

    return get


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _field("major"),
    "minor": _field("minor"),
    "patch": _field("patch"),
}
