"""Taints and tolerations with upstream semantics, over wire dicts and in a precompiled form.

Matching (``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint``), in upstream's order:

1. a non-empty toleration effect must equal the taint's effect (empty matches every effect);
2. a non-empty toleration key must equal the taint's key (empty matches every key);
3. operator ``Exists`` matches any value; ``Equal`` or empty requires equal values; any other operator
   (including the ``Lt``/``Gt`` of later releases) never matches.

So ``{"operator": "Exists"}`` tolerates everything, and -- a corner validation refuses but matching allows --
an empty key with ``Equal`` matches every taint that has the same value.

:class:`CompiledTolerations` indexes a pod's tolerations once (by key, by key and value, and the wildcards)
so that checking a taint is a few dict lookups instead of a scan; the scheduler builds it once per pod version
and checks it against every node. Property tests hold it to the dict-level reference functions.

Parsing follows ``kubectl taint`` (``key=value:effect``, ``key:effect``, and ``key-`` / ``key:effect-`` for
removal) with kubectl's error texts; validation follows kube-apiserver's ``validateNodeTaints`` and
``ValidateTolerations`` with their exact field errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "EFFECT_NO_EXECUTE",
    "EFFECT_NO_SCHEDULE",
    "EFFECT_PREFER_NO_SCHEDULE",
    "TAINT_EFFECTS",
    "CompiledTolerations",
    "Taint",
    "TaintSpecError",
    "find_matching_untolerated_taint",
    "match_taint",
    "parse_taint",
    "parse_taints",
    "reorganize_taints",
    "taint_to_string",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
    "validate_taints",
    "validate_tolerations",
]

EFFECT_NO_SCHEDULE: Final = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
EFFECT_NO_EXECUTE: Final = "NoExecute"
TAINT_EFFECTS: Final = (EFFECT_NO_SCHEDULE, EFFECT_PREFER_NO_SCHEDULE, EFFECT_NO_EXECUTE)
OP_EQUAL: Final = "Equal"
OP_EXISTS: Final = "Exists"

TaintDict = Mapping[str, Any]
TolerationDict = Mapping[str, Any]


def _s(d: Mapping[str, Any], k: str) -> str:
    v = d.get(k)
    return v if isinstance(v, str) else ""


# --- reference semantics over wire dicts --------------------------------------------------------------------


def toleration_tolerates_taint(toleration: TolerationDict, taint: TaintDict) -> bool:
    """Upstream ``Toleration.ToleratesTaint``."""
    effect = _s(toleration, "effect")
    if effect and effect != _s(taint, "effect"):
        return False
    key = _s(toleration, "key")
    if key and key != _s(taint, "key"):
        return False
    op = _s(toleration, "operator")
    if op in ("", OP_EQUAL):
        return _s(toleration, "value") == _s(taint, "value")
    return op == OP_EXISTS


def tolerations_tolerate_taint(tolerations: Iterable[TolerationDict], taint: TaintDict) -> bool:
    """Whether any toleration tolerates ``taint`` (upstream ``TolerationsTolerateTaint``)."""
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Iterable[TaintDict],
    tolerations: Sequence[TolerationDict],
    *,
    include: Callable[[TaintDict], bool] | None = None,
) -> TaintDict | None:
    """The first taint passing ``include`` that no toleration tolerates, or None (all tolerated).

    Upstream ``FindMatchingUntoleratedTaint``; the scheduler's TaintToleration filter passes an ``include``
    keeping NoSchedule and NoExecute taints.
    """
    for taint in taints:
        if (include is None or include(taint)) and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def match_taint(a: TaintDict, b: TaintDict) -> bool:
    """Same key and effect: taints are unique by that pair (upstream ``Taint.MatchTaint``)."""
    return _s(a, "key") == _s(b, "key") and _s(a, "effect") == _s(b, "effect")


def taint_to_string(taint: TaintDict) -> str:
    """``key=value:effect``, or ``key:effect`` without a value (upstream ``Taint.ToString``)."""
    value = _s(taint, "value")
    if value:
        return f"{_s(taint, 'key')}={value}:{_s(taint, 'effect')}"
    return f"{_s(taint, 'key')}:{_s(taint, 'effect')}"


# --- records and the precompiled form -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    """A taint; ``time_added`` is kept in its wire form (RFC 3339) for round trips."""

    key: str
    effect: str
    value: str = ""
    time_added: str | None = None

    @classmethod
    def from_dict(cls, d: TaintDict) -> Taint:
        t = d.get("timeAdded")
        return cls(_s(d, "key"), _s(d, "effect"), _s(d, "value"), t if isinstance(t, str) else None)

    def to_dict(self) -> dict[str, str]:
        """Wire form, in the API's field order; ``value`` and ``timeAdded`` are omitted when empty."""
        d = {"key": self.key}
        if self.value:
            d["value"] = self.value
        d["effect"] = self.effect
        if self.time_added:
            d["timeAdded"] = self.time_added
        return d

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


_ALL: Final = frozenset({""})  # "every effect" marker inside an effect set


def _add(index: dict[Any, frozenset[str]], k: object, effect: str) -> None:
    cur = index.get(k, frozenset())
    index[k] = _ALL if (effect == "" or cur is _ALL) else cur | {effect}


def _hit(effects: frozenset[str] | None, effect: str) -> bool:
    return effects is not None and (effects is _ALL or effect in effects)


class CompiledTolerations:
    """A pod's tolerations indexed for constant-time ``tolerates(taint)``; verdicts as the dict functions.

    Index: effects tolerated for any key (empty key + Exists), per key (Exists), per (key, value) (Equal) and
    per value for any key (empty key + Equal). Tolerations with other operators never match and are dropped.
    """

    __slots__ = ("_any", "_any_key_value", "_key", "_key_value")

    def __init__(self, tolerations: Iterable[TolerationDict]) -> None:
        anykey: dict[None, frozenset[str]] = {}
        by_key: dict[str, frozenset[str]] = {}
        by_kv: dict[tuple[str, str], frozenset[str]] = {}
        by_value: dict[str, frozenset[str]] = {}
        for t in tolerations:
            key, op, effect = _s(t, "key"), _s(t, "operator"), _s(t, "effect")
            if op == OP_EXISTS:
                if key:
                    _add(by_key, key, effect)
                else:
                    _add(anykey, None, effect)
            elif op in ("", OP_EQUAL):
                if key:
                    _add(by_kv, (key, _s(t, "value")), effect)
                else:
                    _add(by_value, _s(t, "value"), effect)
        self._any = anykey.get(None)
        self._key = by_key
        self._key_value = by_kv
        self._any_key_value = by_value

    def tolerates(self, taint: Taint) -> bool:
        e = taint.effect
        return (
            _hit(self._any, e)
            or _hit(self._key.get(taint.key), e)
            or _hit(self._key_value.get((taint.key, taint.value)), e)
            or _hit(self._any_key_value.get(taint.value), e)
        )

    def find_untolerated(
        self, taints: Iterable[Taint], *, include: Callable[[Taint], bool] | None = None
    ) -> Taint | None:
        """First taint passing ``include`` that is not tolerated (``FindMatchingUntoleratedTaint``)."""
        for taint in taints:
            if (include is None or include(taint)) and not self.tolerates(taint):
                return taint
        return None

    def count_untolerated(self, taints: Iterable[Taint], *, effect: str) -> int:
        """How many taints of ``effect`` are not tolerated (the TaintToleration score's raw count)."""
        return sum(1 for t in taints if t.effect == effect and not self.tolerates(t))


# --- kubectl taint spec parsing -----------------------------------------------------------------------------


class TaintSpecError(ValueError):
    """A ``kubectl taint`` argument that does not parse; the message is kubectl's."""


def parse_taint(spec: str) -> Taint:
    """``key=value:effect``, ``key:effect`` or ``key`` (effect then empty), as kubectl's ``parseTaint``."""
    parts = spec.split(":")
    value = ""
    effect = ""
    if len(parts) == 1:
        key = parts[0]
    elif len(parts) == 2:
        effect = parts[1]
        if effect not in TAINT_EFFECTS:
            raise TaintSpecError(f"invalid taint effect: {effect}, unsupported taint effect")
        kv = parts[0].split("=")
        if len(kv) > 2:
            raise TaintSpecError(f"invalid taint spec: {spec}")
        key = kv[0]
        if len(kv) == 2:
            value = kv[1]
            errs = names.is_valid_label_value(value)
            if errs:
                raise TaintSpecError(f"invalid taint spec: {spec}, {'; '.join(errs)}")
    else:
        raise TaintSpecError(f"invalid taint spec: {spec}")
    errs = names.is_qualified_name(key)
    if errs:
        raise TaintSpecError(f"invalid taint spec: {spec}, {'; '.join(errs)}")
    return Taint(key, effect, value)


def _go_struct(t: Taint) -> str:
    # kubectl prints the corev1.Taint struct with %v: {Key Value Effect TimeAdded}
    return f"{{{t.key} {t.value} {t.effect} <nil>}}"


def parse_taints(specs: Sequence[str]) -> tuple[list[Taint], list[Taint]]:
    """(taints to add, taints to remove) from ``kubectl taint`` arguments; a trailing ``-`` means remove.

    Taints to add need an effect and must be unique by key and effect; taints to remove keep only key and
    effect (an empty effect removes every taint with the key).
    """
    add: list[Taint] = []
    remove: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        if spec.endswith("-"):
            t = parse_taint(spec[:-1])
            remove.append(Taint(t.key, t.effect))
            continue
        t = parse_taint(spec)
        if not t.effect:
            raise TaintSpecError(f"invalid taint spec: {spec}")
        if (t.key, t.effect) in seen:
            raise TaintSpecError(f"duplicated taints with the same key and effect: {_go_struct(t)}")
        seen.add((t.key, t.effect))
        add.append(t)
    return add, remove


def reorganize_taints(
    existing: Iterable[Taint], *, add: Sequence[Taint], remove: Sequence[Taint], overwrite: bool = False
) -> tuple[str, list[Taint], list[str]]:
    """A node's new taints after ``kubectl taint``: ``(operation, taints, errors)``, as kubectl's.

    New taints come first, then old taints not replaced (same key and effect); removals with an effect drop
    that pair, without one every taint of the key. ``operation`` is ``modified``, ``tainted`` or
    ``untainted``; each removal that matched nothing gives ``taint "<k:e>" not found``.
    """
    old = list(existing)
    new = list(add)
    for o in old:
        if not any(n.key == o.key and n.effect == o.effect for n in new):
            new.append(o)
    added = len(old) != len(new)
    errors: list[str] = []
    removed = False
    for r in remove:
        before = len(new)
        if r.effect:
            new = [t for t in new if not (t.key == r.key and t.effect == r.effect)]
        else:
            new = [t for t in new if t.key != r.key]
        removed = len(new) != before  # as upstream, only the last removal decides "deleted"
        if not removed:
            errors.append(f"taint {field.go_quote(str(r))} not found")
    if (added and removed) or overwrite:
        return "modified", new, errors
    if added:
        return "tainted", new, errors
    return "untainted", new, errors


# --- API validation -----------------------------------------------------------------------------------------


def _validate_effect(effect: str, path: Path, *, allow_empty: bool) -> ErrorList:
    if not effect and not allow_empty:
        return [field.required(path)]
    if effect in TAINT_EFFECTS:
        return []
    return [field.not_supported(path, effect, supported=TAINT_EFFECTS)]


def validate_taints(taints: Sequence[TaintDict], path: Path) -> ErrorList:
    """Upstream ``validateNodeTaints`` (``spec.taints``): key, value, effect, uniqueness by key and effect."""
    errs: ErrorList = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        p = path.index(i)
        key, value, effect = _s(t, "key"), _s(t, "value"), _s(t, "effect")
        errs.extend(field.invalid(p.child("key"), key, detail=m) for m in names.is_qualified_name(key))
        msgs = names.is_valid_label_value(value)
        if msgs:
            errs.append(field.invalid(p.child("value"), value, detail=";".join(msgs)))
        errs.extend(_validate_effect(effect, p.child("effect"), allow_empty=False))
        if (key, effect) in seen:
            dup = field.duplicate(p, Taint.from_dict(t).to_dict())  # core.Taint's JSON as the bad value
            errs.append(dataclasses.replace(dup, detail="taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return errs


def _toleration_struct(t: TolerationDict) -> dict[str, Any]:
    # core.Toleration's JSON: every field omitempty, in declaration order.
    out: dict[str, Any] = {}
    for k in ("key", "operator", "value", "effect"):
        if _s(t, k):
            out[k] = _s(t, k)
    if t.get("tolerationSeconds") is not None:
        out["tolerationSeconds"] = t["tolerationSeconds"]
    return out


_EMPTY_KEY_MSG: Final = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'


def validate_tolerations(tolerations: Sequence[TolerationDict], path: Path) -> ErrorList:
    """Upstream ``ValidateTolerations``, including its use of ``.operator`` for value errors."""
    errs: ErrorList = []
    for i, t in enumerate(tolerations):
        p = path.index(i)
        key, op, value, effect = _s(t, "key"), _s(t, "operator"), _s(t, "value"), _s(t, "effect")
        if key:
            errs.extend(field.invalid(p.child("key"), key, detail=m) for m in names.is_qualified_name(key))
        if not key and op != OP_EXISTS:
            errs.append(
                field.invalid(
                    p.child("operator"),
                    op,
                    detail=_EMPTY_KEY_MSG,
                )
            )
        if t.get("tolerationSeconds") is not None and effect != EFFECT_NO_EXECUTE:
            errs.append(
                field.invalid(
                    p.child("effect"),
                    effect,
                    detail="effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if op in ("", OP_EQUAL):
            msgs = names.is_valid_label_value(value)
            if msgs:
                errs.append(field.invalid(p.child("operator"), value, detail=";".join(msgs)))
        elif op == OP_EXISTS:
            if value:
                errs.append(
                    field.invalid(
                        p.child("operator"),
                        _toleration_struct(t),
                        detail="value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(field.not_supported(p.child("operator"), op, supported=(OP_EQUAL, OP_EXISTS)))
        if effect:
            errs.extend(_validate_effect(effect, p.child("effect"), allow_empty=True))
    return errs
