"""Label selectors, as apimachinery's ``pkg/labels`` and ``metav1.LabelSelectorAsSelector``.

Three ways in, one compiled :class:`Selector` out:

* :func:`parse` -- the syntax of ``?labelSelector=`` and ``kubectl -l`` (``a=b``, ``a!=b``, ``a in (x,y)``,
  ``a notin (x)``, ``a``, ``!a``, and ``a>1`` / ``a<1`` which upstream's parser accepts for node selectors);
* :func:`label_selector_as_selector` -- a ``metav1.LabelSelector`` (``matchLabels``, ``matchExpressions``);
* :func:`selector_from_set` -- an exact-match map (a pod's ``spec.nodeSelector``, a Service's selector).

Invariants
    * A :class:`Selector` is immutable; its requirements are sorted by key (stable, as upstream's insertion
      sort for small selectors), so ``str(selector)`` is canonical: ``b=1,a=2`` prints ``a=2,b=1``.
    * ``Selector.matches`` allocates nothing per call: each requirement is compiled once into a closure over
      precomputed values (a frozenset for ``in``/``notin``, the parsed integer for ``gt``/``lt``), because the
      scheduler matches selectors millions of times and parses them once. :attr:`Selector.matcher` is the bare
      callable for hot loops.
    * A missing label reads as ``None``, never ``""``: ``x!=a`` and ``x notin (a)`` match objects without
      ``x``; ``x=`` does not.
    * :func:`everything` (empty, matches all) and :func:`nothing` (matches none) differ but print the same
      ``""``, as upstream; a nil ``LabelSelector`` means *nothing*, an empty one *everything*.

Error messages are upstream's text verbatim (``unable to parse requirement: ...``, ``found ',', expected:
...``, field errors like ``values: Invalid value: null: for 'in', 'notin' operators, values set can't be
empty``), because the API server returns them in ``Status`` messages that clients show and match.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import Path
from kubeplane.api.validation.names import is_qualified_name, is_valid_label_value

__all__ = [
    "Labels",
    "Matcher",
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "everything",
    "format_label_selector",
    "label_selector_as_selector",
    "matches_nothing",
    "new_requirement",
    "nothing",
    "parse",
    "parse_int64",
    "parse_to_requirements",
    "selector_from_set",
    "validated_selector_from_set",
]

Labels = Mapping[str, str]
Matcher = Callable[[Labels], bool]


class Operator(enum.StrEnum):
    """Upstream ``selection.Operator``; the values are upstream's (they appear in error messages)."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


# Upstream's order: it is printed in "expected: in, notin, =, ==, !=, gt, lt" and in "supported values".
_BINARY_OPERATORS: Final = tuple(map(Operator, ("in", "notin", "=", "==", "!=", "gt", "lt")))
_VALID_OPERATORS: Final = (*_BINARY_OPERATORS, Operator.EXISTS, Operator.DOES_NOT_EXIST)
_EXACT: Final = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN})
_SYMBOLS: Final[Mapping[Operator, str]] = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}
_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """A selector that cannot be parsed or built; ``str()`` is upstream's error text.

    ``errors`` holds the field errors when the failure is a validation one (bad key, bad values, unsupported
    operator), so the API server can return them as ``Status`` causes; it is empty for syntax errors.
    """

    def __init__(self, message: str, errors: Sequence[fielderr.Error] = ()) -> None:
        super().__init__(message)
        self.errors: tuple[fielderr.Error, ...] = tuple(errors)


def parse_int64(value: str) -> int | None:
    """``value`` as Go's ``strconv.ParseInt(value, 10, 64)`` reads it, or None (ASCII digits, a sign)."""
    if _INT64_RE.fullmatch(value) is None:
        return None
    n = int(value)
    return n if -(2**63) <= n < 2**63 else None


# --- requirements ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term (upstream ``labels.Requirement``).

    Built directly it is not validated (upstream's struct literal); :func:`new_requirement` validates.
    ``values`` keep their order (the parser gives them sorted and deduplicated); the string form sorts them.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        """Upstream ``Requirement.Matches``; compile into a :class:`Selector` to match repeatedly."""
        return _compile(self)(labels)

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op is Operator.IN or op is Operator.NOT_IN:
            return f"{self.key} {op.value} ({values})"
        return f"{self.key}{_SYMBOLS.get(op, op.value)}{values}"


def _child(path: Path | None, name: str) -> Path:
    return Path(name) if path is None else path.child(name)


def _index(path: Path | None, i: int) -> Path:
    return Path("", subscript=str(i), parent=path)


def _key_error(key: str, path: Path | None) -> fielderr.Error | None:
    msgs = is_qualified_name(key)
    return fielderr.invalid(path, key, detail="; ".join(msgs)) if msgs else None


def new_requirement(key: str, operator: str, values: Sequence[str] | None, *, path: Path | None = None) -> Requirement:
    """A validated requirement (upstream ``labels.NewRequirement``); raises :class:`SelectorError`.

    Rules, in upstream's order: the key is a qualified name; ``in``/``notin`` need values; ``=``, ``==``,
    ``!=`` one; ``exists``/``!`` none; ``gt``/``lt`` one integer; every value is a valid label value.
    ``values=None`` stands for Go's nil slice and prints as ``null`` in errors, ``[]`` as ``[]``.
    """
    errs: list[fielderr.Error] = []
    key_err = _key_error(key, _child(path, "key"))
    if key_err is not None:
        errs.append(key_err)
    vals = tuple(values) if values is not None else ()
    shown: Any = list(vals) if values is not None else None
    value_path = _child(path, "values")
    op: Operator | None = Operator(operator) if operator in _VALID_OPERATORS else None
    if op is Operator.IN or op is Operator.NOT_IN:
        if not vals:
            detail = "for 'in', 'notin' operators, values set can't be empty"
            errs.append(fielderr.invalid(value_path, shown, detail=detail))
    elif op is Operator.EQUALS or op is Operator.DOUBLE_EQUALS or op is Operator.NOT_EQUALS:
        if len(vals) != 1:
            detail = "exact-match compatibility requires one single value"
            errs.append(fielderr.invalid(value_path, shown, detail=detail))
    elif op is Operator.EXISTS or op is Operator.DOES_NOT_EXIST:
        if vals:
            detail = "values set must be empty for exists and does not exist"
            errs.append(fielderr.invalid(value_path, shown, detail=detail))
    elif op is Operator.GREATER_THAN or op is Operator.LESS_THAN:
        if len(vals) != 1:
            detail = "for 'Gt', 'Lt' operators, exactly one value is required"
            errs.append(fielderr.invalid(value_path, shown, detail=detail))
        for i, v in enumerate(vals):
            if parse_int64(v) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(fielderr.invalid(_index(value_path, i), v, detail=detail))
    else:
        supported = [o.value for o in _VALID_OPERATORS]
        errs.append(fielderr.not_supported(_child(path, "operator"), operator, supported=supported))
    for i, v in enumerate(vals):
        msgs = is_valid_label_value(v)
        if msgs:
            errs.append(fielderr.invalid(_index(value_path, i).key(key), v, detail="; ".join(msgs)))
    if errs:
        errs = fielderr.dedupe(errs)
        raise SelectorError(fielderr.aggregate_message(errs), errs)
    assert op is not None
    return Requirement(key, op, vals)


def _always(_: Labels) -> bool:
    return True


def _never(_: Labels) -> bool:
    return False


def _compile(req: Requirement) -> Matcher:
    """One closure per requirement. A missing key reads as None, which equals no value and is in no set."""
    key, op, values = req.key, req.operator, req.values
    if op in _EXACT or op is Operator.NOT_IN or op is Operator.NOT_EQUALS:
        positive = op in _EXACT
        if len(values) == 1:
            value = values[0]
            if positive:
                return lambda labels: labels.get(key) == value
            return lambda labels: labels.get(key) != value
        value_set = frozenset(values)
        if positive:
            return lambda labels: labels.get(key) in value_set
        return lambda labels: labels.get(key) not in value_set
    if op is Operator.EXISTS:
        return lambda labels: key in labels
    if op is Operator.DOES_NOT_EXIST:
        return lambda labels: key not in labels
    if op is Operator.GREATER_THAN or op is Operator.LESS_THAN:
        bound = parse_int64(values[0]) if len(values) == 1 else None
        if bound is None:
            return _never  # upstream logs and returns false
        greater = op is Operator.GREATER_THAN

        def compare(labels: Labels) -> bool:
            raw = labels.get(key)
            if raw is None:
                return False
            n = parse_int64(raw)
            if n is None:
                return False
            return n > bound if greater else n < bound

        return compare
    return _never


def _compile_all(reqs: tuple[Requirement, ...]) -> Matcher:
    if not reqs:
        return _always
    if len(reqs) == 1:
        return _compile(reqs[0])
    if all(r.operator in _EXACT and len(r.values) == 1 for r in reqs):
        pairs = tuple((r.key, r.values[0]) for r in reqs)

        def all_equal(labels: Labels) -> bool:
            get = labels.get
            for k, v in pairs:  # noqa: SIM110 - all() would allocate a generator per match
                if get(k) != v:
                    return False
            return True

        return all_equal
    checks = tuple(_compile(r) for r in reqs)

    def all_of(labels: Labels) -> bool:
        for check in checks:  # noqa: SIM110 - all() would allocate a generator per match
            if not check(labels):
                return False
        return True

    return all_of


# --- selectors ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled label selector: the AND of its requirements, or *nothing* (upstream ``labels.Selector``).

    Build with :func:`parse`, :func:`label_selector_as_selector`, :func:`selector_from_set`,
    :func:`everything`, :func:`nothing` or :meth:`add`; the constructor sorts nothing and trusts its caller.
    """

    requirements: tuple[Requirement, ...] = ()
    selectable: bool = True
    """False only for :func:`nothing` (upstream's second return of ``Requirements()``)."""
    matcher: Matcher = field(init=False, repr=False, compare=False)
    """The compiled ``labels -> bool``; grab it once in hot loops."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", _compile_all(self.requirements) if self.selectable else _never)

    def matches(self, labels: Labels) -> bool:
        """True when every requirement matches ``labels`` (never, for :func:`nothing`)."""
        return self.matcher(labels)

    def empty(self) -> bool:
        """True when the selector does not restrict the selection space (``Everything``, not ``Nothing``)."""
        return self.selectable and not self.requirements

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with ``requirements`` added, re-sorted by key (stable); *nothing* stays nothing."""
        if not self.selectable:
            return self
        merged = sorted((*self.requirements, *requirements), key=_by_key)
        return Selector(tuple(merged))

    def requires_exact_match(self, label: str) -> str | None:
        """The single value ``label`` must have (``=``, ``==``, or ``in`` with one value), else None.

        As upstream, only the first requirement on ``label`` is considered.
        """
        for r in self.requirements:
            if r.key == label:
                if r.operator in _EXACT and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _by_key(r: Requirement) -> str:
    return r.key


_EVERYTHING: Final = Selector()
_NOTHING: Final = Selector(selectable=False)


def everything() -> Selector:
    """The selector that matches all labels; ``empty()`` is true."""
    return _EVERYTHING


def nothing() -> Selector:
    """The selector that matches no labels; ``empty()`` is false and its string form is ``""``."""
    return _NOTHING


def matches_nothing(selector: Selector) -> bool:
    """True only for :func:`nothing` (upstream ``MatchesNothing``: ``a=a,a!=a`` is not detected)."""
    return not selector.selectable


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """An exact-match selector over ``labels``, not validated; None or ``{}`` give :func:`everything`."""
    if not labels:
        return _EVERYTHING
    return Selector(tuple(Requirement(k, Operator.EQUALS, (v,)) for k, v in sorted(labels.items())))


def validated_selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """As :func:`selector_from_set`, validating keys and values (upstream ``ValidatedSelectorFromSet``)."""
    if not labels:
        return _EVERYTHING
    return Selector(tuple(new_requirement(k, Operator.EQUALS, [v]) for k, v in sorted(labels.items())))


# --- metav1.LabelSelector ----------------------------------------------------------------------------------

_LABEL_SELECTOR_OPS: Final[Mapping[str, Operator]] = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_as_selector(label_selector: Mapping[str, Any] | None) -> Selector:
    """A ``metav1.LabelSelector`` dict as a selector (upstream ``LabelSelectorAsSelector``).

    None (an absent selector) gives :func:`nothing`; a selector with no ``matchLabels`` and no
    ``matchExpressions`` gives :func:`everything`. Raises :class:`SelectorError` on the first bad entry, with
    upstream's messages (``"Foo" is not a valid pod selector operator``, or a :func:`new_requirement` error).
    """
    if label_selector is None:
        return _NOTHING
    if not isinstance(label_selector, Mapping):
        raise SelectorError("invalid label selector: must be an object")
    match_labels = label_selector.get("matchLabels") or {}
    expressions = label_selector.get("matchExpressions") or ()
    # Wrong JSON types would be decoding errors upstream; here they are SelectorErrors, never a crash.
    if not isinstance(match_labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()
    ):
        raise SelectorError("invalid label selector: matchLabels must be a map of strings")
    if not isinstance(expressions, Sequence) or isinstance(expressions, str):
        raise SelectorError("invalid label selector: matchExpressions must be a list")
    if not match_labels and not expressions:
        return _EVERYTHING
    reqs = [new_requirement(k, Operator.EQUALS, [v]) for k, v in match_labels.items()]
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise SelectorError("invalid label selector: each of matchExpressions must be an object")
        operator = expr.get("operator") or ""
        key = expr.get("key") or ""
        values = expr.get("values")
        if not isinstance(operator, str) or not isinstance(key, str):
            raise SelectorError("invalid label selector: key and operator must be strings")
        if values is not None and (
            not isinstance(values, Sequence) or isinstance(values, str) or not all(isinstance(v, str) for v in values)
        ):
            raise SelectorError("invalid label selector: values must be a list of strings")
        op = _LABEL_SELECTOR_OPS.get(operator)
        if op is None:
            raise SelectorError(f"{fielderr.go_quote(operator)} is not a valid pod selector operator")
        reqs.append(new_requirement(key, op, list(values) if values else None))
    reqs.sort(key=_by_key)
    return Selector(tuple(reqs))


def format_label_selector(label_selector: Mapping[str, Any] | None) -> str:
    """The selector's string form for display: ``<none>`` when empty, ``<error>`` when invalid (upstream)."""
    try:
        text = str(label_selector_as_selector(label_selector))
    except SelectorError:
        return "<error>"
    return text or "<none>"


# --- the string syntax -------------------------------------------------------------------------------------

# A token is (kind, literal). The kind of an operator or parenthesis is its own text; "in" and "notin" are
# keywords (kinds "in"/"notin") in operator position and identifiers ("ID") in value position, as upstream.
_ID: Final = "ID"
_END: Final = "END"
_KEYWORDS: Final = frozenset({")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("})
_OPERATOR_TOKENS: Final[Mapping[str, Operator]] = {
    "in": Operator.IN,
    "notin": Operator.NOT_IN,
    "=": Operator.EQUALS,
    "==": Operator.DOUBLE_EQUALS,
    "!=": Operator.NOT_EQUALS,
    ">": Operator.GREATER_THAN,
    "<": Operator.LESS_THAN,
}
_WHITESPACE: Final = frozenset(" \t\r\n")
_SPECIAL: Final = frozenset("=!(),><")
_NUL: Final = "\x00"  # upstream's lexer reads a NUL byte as end of input, so does this one


def _lex(s: str) -> list[tuple[str, str]]:
    """All tokens of ``s`` up to and including the end token (upstream ``Lexer`` + ``Parser.scan``)."""
    items: list[tuple[str, str]] = []
    n = len(s)
    pos = 0
    while True:
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or s[pos] == _NUL:
            items.append((_END, ""))
            return items
        start = pos
        if s[pos] in _SPECIAL:
            # The longest run of special characters that is a token: "!=", but "=" then "!" for "=!".
            lit = ""
            while pos < n and s[pos] in _SPECIAL:
                if s[start : pos + 1] in _KEYWORDS:
                    lit = s[start : pos + 1]
                elif lit:
                    break
                pos += 1
            pos = start + len(lit)  # every single special character is a token, so lit is never empty
            items.append((lit, lit))
        else:
            while pos < n and s[pos] not in _SPECIAL and s[pos] not in _WHITESPACE and s[pos] != _NUL:
                pos += 1
            lit = s[start:pos]
            items.append((lit if lit in _KEYWORDS else _ID, lit))
        if pos < n and s[pos] == _NUL:
            pos += 1  # upstream consumes the NUL a token stops at, and goes on after it


class _Parser:
    """Upstream's recursive-descent parser over the token list."""

    __slots__ = ("items", "pos")

    def __init__(self, selector: str) -> None:
        self.items = _lex(selector)
        self.pos = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        kind, lit = self.items[self.pos]
        if values and kind in ("in", "notin"):
            kind = _ID
        return kind, lit

    def consume(self, values: bool = True) -> tuple[str, str]:
        item = self.lookahead(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            kind, lit = self.lookahead()
            if kind == _END:
                return reqs
            if kind not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.parse_requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}", exc.errors) from None
            kind, lit = self.consume()
            if kind == _END:
                return reqs
            if kind != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self.lookahead()
            if kind not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op is not None:
            return new_requirement(key, op, [])
        kind, lit = self.consume(values=False)
        operator = _OPERATOR_TOKENS.get(kind)
        if operator is None:
            raise SelectorError(f"found '{lit}', expected: {', '.join(o.value for o in _BINARY_OPERATORS)}")
        if operator is Operator.IN or operator is Operator.NOT_IN:
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, Operator | None]:
        """The key, and ``exists``/``!`` when no binary operator follows (None: one does)."""
        op: Operator | None = None
        kind, lit = self.consume()
        if kind == "!":
            op = Operator.DOES_NOT_EXIST
            kind, lit = self.consume()
        if kind != _ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        err = _key_error(lit, None)
        if err is not None:
            raise SelectorError(str(err), [err])
        if op is None and self.lookahead()[0] in (_END, ","):
            op = Operator.EXISTS
        return lit, op

    def parse_values(self) -> set[str]:
        kind, lit = self.consume()
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        kind, lit = self.lookahead()
        if kind == ")":  # "()" is the empty value
            self.consume()
            return {""}
        if kind not in (_ID, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.parse_identifiers_list()
        self.consume()  # the ")" the list stopped at
        return values

    def parse_identifiers_list(self) -> set[str]:
        """Comma-separated, possibly empty values: ``(a,)``, ``(,a)`` and ``(a,,b)`` all hold ``""``."""
        values: set[str] = set()
        while True:
            kind, lit = self.consume()
            if kind == _ID:
                values.add(lit)
                kind2, lit2 = self.lookahead()
                if kind2 == ")":
                    return values
                if kind2 != ",":
                    raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                kind2 = self.lookahead()[0]
                if kind2 == ")":
                    values.add("")
                    return values
                if kind2 == ",":
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        if self.lookahead()[0] in (_END, ","):
            return {""}
        kind, lit = self.consume()
        if kind == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_to_requirements(selector: str) -> tuple[Requirement, ...]:
    """The requirements of ``selector``, sorted by key (upstream ``ParseToRequirements``)."""
    reqs = _Parser(selector).parse()
    reqs.sort(key=_by_key)
    return tuple(reqs)


def parse(selector: str) -> Selector:
    """Parse the label selector syntax (upstream ``labels.Parse``); raises :class:`SelectorError`.

    Grammar: ``requirement ("," requirement)*``, ``requirement ::= ["!"] KEY [op VALUE | ("in"|"notin")
    "(" VALUE ("," VALUE)* ")"]``, ``op`` one of ``=``, ``==``, ``!=``, ``>``, ``<``. Whitespace separates
    tokens; ``""`` parses to :func:`everything`. Keys must be qualified names, values label values.
    """
    return Selector(parse_to_requirements(selector))
