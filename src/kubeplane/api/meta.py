"""Object metadata helpers: name rules, generateName, UIDs, timestamps and storage keys.

Everything here mirrors what kube-apiserver does to ``metadata`` before and while it stores an object:

* **Names.** Each kind validates ``metadata.name`` with one of four rules (upstream ``ValidateNameFunc``s):
  DNS-1123 subdomain (most kinds), DNS-1123 label (namespaces), DNS-1035 label (services) or path segment
  (RBAC roles and bindings: anything but ``.``, ``..``, ``/`` and ``%``). With ``prefix=True`` the value is
  a ``generateName`` that will get a suffix, so a trailing ``-`` is allowed.
* **generateName.** The base is cut to 58 bytes and 5 characters from upstream's consonant-and-digit alphabet
  are appended, so the result never exceeds a 63-character label. Randomness is injected.
* **UIDs** are version-4 UUID strings; with an injected ``random.Random`` they are reproducible.
* **Times.** ``metav1.Time`` is RFC 3339 in UTC with whole seconds (``2026-01-02T03:04:05Z``); ``MicroTime``
  has exactly six fractional digits. Formatting truncates, as Go's ``Time.Format`` does. Parsed values are
  timezone-aware UTC datetimes.
* **Storage keys** follow kube-apiserver's etcd layout under ``/registry``: ``<root>/<prefix>/<ns>/<name>``
  for namespaced resources, ``<root>/<prefix>/<name>`` for cluster-scoped ones. Collection prefixes end in
  ``/`` so a range over ``/registry/pods/default/`` never matches namespace ``default2``.
"""

from __future__ import annotations

import enum
import json
import random
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "GENERATED_NAME_RANDOM_LENGTH",
    "MAX_GENERATED_NAME_BASE_LENGTH",
    "NAME_ALPHABET",
    "REGISTRY_ROOT",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "InvalidKeyError",
    "NameRule",
    "check_key_segments",
    "collection_prefix",
    "format_micro_time",
    "format_time",
    "generate_name",
    "is_valid_path_segment_name",
    "is_valid_path_segment_prefix",
    "new_uid",
    "object_key",
    "parse_micro_time",
    "parse_time",
    "split_key",
    "validate_annotations",
    "validate_labels",
    "validate_object_meta_names",
]

# --- names -------------------------------------------------------------------------------------------------

NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""Upstream ``util/rand`` alphabet: no vowels (no accidental words), no 0/1/3 (confusable with o/l/e)."""
GENERATED_NAME_RANDOM_LENGTH: Final = 5
MAX_GENERATED_NAME_BASE_LENGTH: Final = 63 - GENERATED_NAME_RANDOM_LENGTH
TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * (1 << 10)


def is_valid_path_segment_name(name: str) -> list[str]:
    """A name that can be a URL path segment and etcd key segment (upstream ``IsValidPathSegmentName``)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return is_valid_path_segment_prefix(name)


def is_valid_path_segment_prefix(name: str) -> list[str]:
    """As :func:`is_valid_path_segment_name` for a prefix: ``.`` and ``..`` are fine before a suffix."""
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _mask_trailing_dash(name: str) -> str:
    # Upstream replaces the last *two* characters by "a" (name[:len-2] + "a"); kept for identical verdicts.
    # The length guard avoids upstream's out-of-range slice on a lone "-".
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


class NameRule(enum.Enum):
    """Which ``ValidateNameFunc`` a kind uses for ``metadata.name``; the value is upstream's function name."""

    DNS_SUBDOMAIN = "NameIsDNSSubdomain"
    DNS_LABEL = "NameIsDNSLabel"
    DNS1035_LABEL = "NameIsDNS1035Label"
    PATH_SEGMENT = "ValidatePathSegmentName"
    RBAC = "ValidateRBACName"
    """Path-segment rules even for a ``generateName`` (upstream ignores ``prefix``): ``.`` is refused."""
    IP_ADDRESS = "ValidateIPAddressName"
    """The canonical form of an IP (networking ``ValidateIPAddressName``); a ``generateName`` is held to it too."""

    def validate(self, name: str, *, prefix: bool = False) -> list[str]:
        """Upstream's error strings for ``name``; ``prefix=True`` for a ``generateName``."""
        if self is NameRule.RBAC:
            return is_valid_path_segment_name(name)
        if self is NameRule.IP_ADDRESS:
            return [e.detail for e in names.is_valid_ip_strict(None, name)]
        if self is NameRule.PATH_SEGMENT:
            return is_valid_path_segment_prefix(name) if prefix else is_valid_path_segment_name(name)
        if prefix:
            name = _mask_trailing_dash(name)
        if self is NameRule.DNS_SUBDOMAIN:
            return names.is_dns1123_subdomain(name)
        if self is NameRule.DNS_LABEL:
            return names.is_dns1123_label(name)
        return names.is_dns1035_label(name)


def validate_object_meta_names(
    metadata: Mapping[str, object], *, rule: NameRule, namespaced: bool, path: Path | None = None
) -> ErrorList:
    """The name, generateName and namespace checks of upstream ``ValidateObjectMeta``.

    ``namespaced`` is upstream's ``requiresNamespace``: a namespaced kind needs a valid namespace (a DNS
    label), a cluster-scoped kind must not have one.
    """
    p = path if path is not None else field.new_path("metadata")
    errs: ErrorList = []
    generate = _str(metadata.get("generateName"))
    if generate:
        errs.extend(
            field.invalid(p.child("generateName"), generate, detail=m) for m in rule.validate(generate, prefix=True)
        )
    name = _str(metadata.get("name"))
    if not name:
        errs.append(field.required(p.child("name"), "name or generateName is required"))
    else:
        errs.extend(field.invalid(p.child("name"), name, detail=m) for m in rule.validate(name))
    namespace = _str(metadata.get("namespace"))
    if namespaced:
        if not namespace:
            errs.append(field.required(p.child("namespace")))
        else:
            errs.extend(
                field.invalid(p.child("namespace"), namespace, detail=m) for m in names.is_dns1123_label(namespace)
            )
    elif namespace:
        errs.append(field.forbidden(p.child("namespace"), "not allowed on this type"))
    return errs


def validate_labels(labels: Mapping[str, str], path: Path | None = None) -> ErrorList:
    """Upstream ``ValidateLabels``: keys are qualified names, values are label values.

    Errors carry the map's path (default ``metadata.labels``), not the key's, as upstream's do; one error per
    message, keys in sorted order (upstream iterates a Go map, so its order is random; ours is deterministic).
    """
    at = path if path is not None else field.new_path("metadata", "labels")
    errs: ErrorList = []
    for k in sorted(labels):
        errs.extend(field.invalid(at, k, detail=m) for m in names.is_qualified_name(k))
        v = labels[k]
        errs.extend(field.invalid(at, v, detail=m) for m in names.is_valid_label_value(v))
    return errs


def validate_annotations(annotations: Mapping[str, str], path: Path | None = None) -> ErrorList:
    """Upstream ``ValidateAnnotations``: keys are qualified names (checked lower-cased); size <= 256 KiB."""
    errs: ErrorList = []
    for k in annotations:
        errs.extend(field.invalid(path, k, detail=m) for m in names.is_qualified_name(k.lower()))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def generate_name(base: str, rng: random.Random) -> str:
    """``base`` cut to 58 bytes plus 5 random characters of :data:`NAME_ALPHABET` (upstream ``GenerateName``).

    The result is not validated: the API server validates the generated name like any other.
    """
    raw = base.encode()
    if len(raw) > MAX_GENERATED_NAME_BASE_LENGTH:
        base = raw[:MAX_GENERATED_NAME_BASE_LENGTH].decode(errors="ignore")
    return base + "".join(rng.choices(NAME_ALPHABET, k=GENERATED_NAME_RANDOM_LENGTH))


def new_uid(rng: random.Random | None = None) -> str:
    """A random (version 4) UUID string; reproducible when ``rng`` is a seeded ``random.Random``."""
    if rng is None:
        return str(uuid.uuid4())
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# --- times -------------------------------------------------------------------------------------------------

_RFC3339_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))"
)


def _to_utc(t: datetime | float) -> datetime:
    if isinstance(t, datetime):
        if t.tzinfo is None:
            raise ValueError(f"naive datetime {t.isoformat()} has no timezone; use an aware datetime")
        return t.astimezone(UTC)
    return datetime.fromtimestamp(t, UTC)


def format_time(t: datetime | float) -> str:
    """``metav1.Time`` wire form: UTC, whole seconds (truncated), ``Z``. Floats are Unix epoch seconds.

    A float's text is kept per whole second (:data:`_SECOND_TEXTS`): every write stamps managed fields or a
    timestamp with a clock's now, and a cluster's writes fall in few distinct seconds at a time. Exact:
    ``datetime.fromtimestamp`` rounds the fraction to microseconds, which moves the second only within half a
    microsecond of the next one, so only a non-negative float whose fraction is below 0.999 takes a kept text."""
    if type(t) is float and t >= 0.0:
        second = int(t)
        if t - second < 0.999:
            text = _SECOND_TEXTS.get(second)
            if text is None:
                text = _to_utc(float(second)).strftime("%Y-%m-%dT%H:%M:%SZ")
                if len(_SECOND_TEXTS) >= _SECOND_TEXTS_SIZE:
                    _SECOND_TEXTS.clear()
                _SECOND_TEXTS[second] = text
            return text
    return _to_utc(t).strftime("%Y-%m-%dT%H:%M:%SZ")


_SECOND_TEXTS: dict[int, str] = {}
_SECOND_TEXTS_SIZE: Final = 4096
"""Whole seconds -> their :func:`format_time` text, kept until this many (then it starts afresh)."""


def format_micro_time(t: datetime | float) -> str:
    """``metav1.MicroTime`` wire form: UTC with exactly six fractional digits, ``Z``. A float's date and time of
    day come from :func:`format_time`'s kept text of its whole second (an events.k8s.io Event is stamped with
    one, many per second), the microseconds appended."""
    if type(t) is float and t >= 0.0:
        dt = _to_utc(t)  # the fraction rounded to microseconds, possibly into the next second: that second's text
        return f"{format_time(dt.replace(microsecond=0).timestamp())[:-1]}.{dt.microsecond:06d}Z"
    return _to_utc(t).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: str, *, micro: bool) -> datetime:
    m = _RFC3339_RE.fullmatch(value)
    if m is None or (micro and (m.group(7) is None or len(m.group(7)) != 6)):
        layout = "2006-01-02T15:04:05.000000Z07:00" if micro else "2006-01-02T15:04:05Z07:00"
        raise ValueError(f"parsing time {value!r}: not in the form {layout}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    micros = int((frac + "000000")[:6])  # Go keeps nanoseconds; Python has microseconds: truncate
    try:
        dt = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"parsing time {value!r}: {exc}") from None
    if m.group(8) is None:
        sign = 1 if m.group(9) == "+" else -1
        hours, mins = int(m.group(10)), int(m.group(11))
        if hours > 23 or mins > 59:
            raise ValueError(f"parsing time {value!r}: time zone offset out of range")
        dt -= sign * timedelta(hours=hours, minutes=mins)
    return dt


def parse_time(value: str) -> datetime:
    """Parse a ``metav1.Time`` as Go's ``time.Parse(time.RFC3339, ...)``: any offset, optional fraction."""
    return _parse(value, micro=False)


def parse_micro_time(value: str) -> datetime:
    """Parse a ``metav1.MicroTime``: RFC 3339 with exactly six fractional digits, any offset."""
    return _parse(value, micro=True)


# --- storage keys ------------------------------------------------------------------------------------------

REGISTRY_ROOT: Final = "/registry"
"""kube-apiserver's default ``--etcd-prefix``."""


class InvalidKeyError(ValueError):
    """A name or namespace that cannot be a key segment (upstream ``NamespaceKeyFunc`` errors)."""


def _check_segment(kind: str, value: str) -> None:
    msgs = is_valid_path_segment_name(value)
    if msgs:  # upstream: fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";"))
        raise InvalidKeyError(f"{kind} parameter invalid: {json.dumps(value)}: {';'.join(msgs)}")


def check_key_segments(*, namespace: str | None, name: str) -> None:
    """Raise :class:`InvalidKeyError` when a namespace or name from a URL cannot be a key segment (upstream's
    ``NamespaceKeyFunc``: ``Name parameter invalid: "a%b": may not contain '%'``), before any storage access."""
    if namespace:
        _check_segment("Namespace", namespace)
    if name:
        _check_segment("Name", name)


def object_key(resource_prefix: str, name: str, *, namespace: str | None, root: str = REGISTRY_ROOT) -> str:
    """``<root>/<prefix>/<namespace>/<name>``, or ``<root>/<prefix>/<name>`` when ``namespace`` is None.

    Raises :class:`InvalidKeyError` for an empty namespace of a namespaced object, or a name or namespace that
    is not a valid path segment, as upstream's key functions refuse them.
    """
    if not name:
        raise InvalidKeyError("Name parameter required.")
    _check_segment("Name", name)
    if namespace is None:
        return f"{root}/{resource_prefix}/{name}"
    if not namespace:
        raise InvalidKeyError("Namespace parameter required.")
    _check_segment("Namespace", namespace)
    return f"{root}/{resource_prefix}/{namespace}/{name}"


def collection_prefix(resource_prefix: str, *, namespace: str | None = None, root: str = REGISTRY_ROOT) -> str:
    """Key prefix for a list or watch, ending in ``/``: one namespace, or every object of the resource."""
    if namespace is None:
        return f"{root}/{resource_prefix}/"
    _check_segment("Namespace", namespace)
    return f"{root}/{resource_prefix}/{namespace}/"


def split_key(key: str, resource_prefix: str, *, root: str = REGISTRY_ROOT) -> tuple[str | None, str]:
    """``(namespace, name)`` of an object key, namespace None when cluster-scoped (inverse of object_key)."""
    head = f"{root}/{resource_prefix}/"
    if not key.startswith(head):
        raise InvalidKeyError(f"key {key!r} is not under {head!r}")
    parts = key[len(head) :].split("/")
    if len(parts) == 1 and parts[0]:
        return None, parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise InvalidKeyError(f"key {key!r} is not an object key under {head!r}")
