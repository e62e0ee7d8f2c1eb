"""DRA CEL device selectors: compiled once per expression text, evaluated per device with a bounded cost.

Upstream: staging/src/k8s.io/dynamic-resource-allocation/cel (compile.go ``CompileCELExpression`` and
``DeviceMatches``, cache.go) on the Kubernetes base CEL environment (k8s.io/apiserver pkg/cel/library:
strings, lists, regex, quantity, semver ...; here :mod:`kubeplane.api.crd.cel_library`, shared with CRD rules),
plus ``cel.bind`` (cel-go ``ext.Bindings``) and the ``device`` variable (:mod:`.cel_device`). Invariants:

* :func:`compile_selector` raises :class:`SelectorCompileError` whose ``message`` is the detail the API shows
  after ``Invalid value: "<expression>": `` (``compilation failed: ERROR: <input>:1:1: Syntax error ...``,
  ``undeclared reference to 'x' (in container '')``, ``undefined field 'x'``, ``must evaluate to bool or the
  unknown type, not int``); results, errors included, are cached by expression text (an LRU);
* :meth:`CompiledSelector.evaluate` returns the selector's boolean or raises :class:`SelectorRuntimeError` with
  cel-go's runtime message (``no such key: model``, ``no such overload``, ``operation cancelled: actual cost
  limit exceeded`` past :data:`CEL_SELECTOR_EXPRESSION_MAX_COST`, ``CEL result of type int could not be converted
  to bool ...``) - never anything else, so one device's failure is reported, not fatal;
* :attr:`CompiledSelector.max_cost` is a worst-case estimate (:mod:`.cel_estimate`) that admission compares with
  the limit, as upstream's ``MaxCost``.

cel-python has no type checker: type errors cel-go reports at compile time beyond the above surface at
evaluation as runtime errors.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, base_functions

from kubeplane.api.crd.cel_comprehensions import TWO_VARIABLE, is_two_variable
from kubeplane.api.crd.cel_cost import CostExceeded, CostingEvaluator, Tracker
from kubeplane.api.crd.cel_library import FUNCTIONS, PACKAGES
from kubeplane.api.crd.cel_types import LibraryError

from . import cel_estimate
from .cel_device import DeviceAttributeError, DeviceView, attribute_value, split_qualified_name

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "CompiledSelector",
    "DeviceView",
    "SelectorCompileError",
    "SelectorRuntimeError",
    "attribute_value",
    "compile_selector",
    "split_qualified_name",
]

CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
"""resourceapi.CELSelectorExpressionMaxCost: the runtime cost limit of one evaluation, and admission's limit on
the estimated worst case."""

_DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"}) | TWO_VARIABLE
_COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"}) | TWO_VARIABLE
_KNOWN = frozenset(base_functions) | frozenset(FUNCTIONS) | _MACROS
_TYPE_NAMES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"}
    | {"duration", "timestamp"}
)
_VARIABLES = frozenset({"device"}) | _TYPE_NAMES | frozenset(PACKAGES)
_ENV = celpy.Environment()
_CANCELLED = "operation cancelled: actual cost limit exceeded"


class SelectorCompileError(ValueError):
    """The expression does not compile; ``message`` is upstream's error detail (after ``Invalid value: ...: ``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SelectorRuntimeError(RuntimeError):
    """The expression failed on one device; ``message`` is cel-go's runtime error text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# -- compilation -------------------------------------------------------------------------------------------------


def _located(source: str, line: int, column: int, message: str) -> str:
    """cel-go's ``issues.String()`` for one issue: position (1-based column), source line, caret."""
    lines = source.splitlines() or [""]
    text = lines[min(max(line, 1), len(lines)) - 1]
    return f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * max(column - 1, 0)}^"


def _ident(tree: Any) -> str | None:
    """The name when ``tree`` is a plain identifier (through the grammar's single-child chains)."""
    while not isinstance(tree, str) and len(tree.children) == 1 and tree.data != "ident":
        tree = tree.children[0]
    if isinstance(tree, str) or tree.data != "ident":
        return None
    return str(tree.children[0])


def _exprs(tree: Any) -> list[Any]:
    args = tree.children[2] if len(tree.children) == 3 else None
    return [] if args is None else [c for c in args.children if not isinstance(c, str)]


def is_bind(tree: Any) -> bool:
    """Whether a ``member_dot_arg`` node is ``cel.bind(var, init, body)``."""
    return (
        tree.data == "member_dot_arg"
        and str(tree.children[1]) == "bind"
        and _ident(tree.children[0]) == "cel"
        and len(_exprs(tree)) == 3
    )


def _issues(tree: Any, bound: frozenset[str]) -> Iterator[tuple[Any, str]]:
    """(token, message) for references cel-go's checker refuses, in source order: undeclared variables and
    functions (``device``, the packages, type names, comprehension and ``cel.bind`` variables are declared)
    and fields ``kubernetes.DRADevice`` does not have."""
    children = tree.children
    tokens = [c for c in children if isinstance(c, str)]
    subtrees = [c for c in children if not isinstance(c, str)]
    if tree.data == "ident":
        if tokens and str(tokens[0]) not in bound:
            yield tokens[0], f"undeclared reference to '{tokens[0]}' (in container '')"
        return
    if tree.data == "member_dot" and _ident(subtrees[0]) == "device" and "device" in bound:
        field_token = tokens[0]
        if str(field_token) not in _DEVICE_FIELDS and "device" not in _shadowed(bound):
            yield field_token, f"undefined field '{field_token}'"
            return
    if is_bind(tree):
        var, init, body = _exprs(tree)
        var_name = _ident(var) or ""
        yield from _issues(init, bound)
        yield from _issues(body, bound | {var_name} | ({"\0device"} if var_name == "device" else set()))
        return
    if tree.data in ("ident_arg", "member_dot_arg") and tokens and str(tokens[0]) not in _KNOWN:
        yield tokens[0], f"undeclared reference to '{tokens[0]}' (in container '')"
    if tree.data == "member_dot_arg" and tokens and str(tokens[0]) in _COMPREHENSIONS and len(subtrees) == 2:
        target, args = subtrees
        yield from _issues(target, bound)
        exprs = [c for c in args.children if not isinstance(c, str)]
        count = 2 if is_two_variable(tree) else 1
        names = [n for n in (_ident(e) for e in exprs[:count]) if n]
        inner = bound | frozenset(names) | frozenset("\0" + n for n in names if n == "device")
        for expr in exprs[count:]:
            yield from _issues(expr, inner)
        return
    for sub in subtrees:
        yield from _issues(sub, bound)


def _shadowed(bound: frozenset[str]) -> frozenset[str]:
    """Variables rebound by a macro or ``cel.bind`` (marked with a NUL prefix in ``bound``)."""
    return frozenset(b[1:] for b in bound if b.startswith("\0"))


_LITERAL_TYPES = (
    (re.compile(r"^[rR]?[bB]"), "bytes"),
    (re.compile(r'^[rR]?["\']'), "string"),
    (re.compile(r"^(true|false)$"), "bool"),
    (re.compile(r"^null$"), "null_type"),
    (re.compile(r"^(0x[0-9a-fA-F]+|[0-9]+)[uU]$"), "uint"),
    (re.compile(r"^(0x[0-9a-fA-F]+|[0-9]+)$"), "int"),
    (re.compile(r"^[0-9.eE+-]+$"), "double"),
)


def _output_type(tree: Any) -> str | None:
    """The static type of a literal or ``device.driver`` expression (what cel-go's checker surely knows);
    None when it cannot tell (then evaluation decides)."""
    node = tree
    while not isinstance(node, str) and len(node.children) == 1 and node.data not in ("literal", "ident"):
        node = node.children[0]
    if isinstance(node, str):
        return None
    if node.data == "literal":
        text = str(node.children[0])
        return next((name for pattern, name in _LITERAL_TYPES if pattern.match(text)), None)
    if node.data == "unary" and len(node.children) == 2 and str(node.children[0]) == "-":
        inner = _output_type(node.children[1])
        return inner if inner in ("int", "double") else None
    if node.data == "member_dot" and _ident(node.children[0]) == "device":
        return {"driver": "string", "allowMultipleAllocations": "bool"}.get(str(node.children[1]))
    if node.data in ("list_lit", "map_lit"):
        return None
    return None


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A compiled selector: its program, the source, and the estimated worst-case cost."""

    expression: str
    program: celpy.Runner
    max_cost: int
    activation: Any  # the program's base activation (functions); each evaluation clones it with ``device``

    def evaluate(self, device: DeviceView, *, cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST) -> bool:
        """Whether ``device`` matches; :class:`SelectorRuntimeError` with cel-go's message otherwise. The
        verdict is memoised on the (immutable) device."""
        key = (self.expression, cost_limit)
        known = device.memo.get(key)
        if known is None:
            known = device.memo[key] = self._evaluate(device, cost_limit)
        if isinstance(known, str):
            raise SelectorRuntimeError(known)
        return known

    def _evaluate(self, device: DeviceView, cost_limit: int) -> bool | str:
        try:
            variable = device.cel_value()
        except DeviceAttributeError as exc:
            return str(exc)
        evaluator = _Evaluator(self.program.ast, self.activation, Tracker(cost_limit))
        try:
            result = evaluator.evaluate(_activation(variable))
        except CostExceeded:
            return _CANCELLED
        except CELEvalError as exc:
            return runtime_message(exc)
        except Exception as exc:  # cel-python's own failures are the device's, never the caller's crash
            return str(exc) or type(exc).__name__
        if isinstance(result, bool | celtypes.BoolType):
            return bool(result)
        kind = type_name(result)
        return (
            f"CEL result of type {kind} could not be converted to bool: type conversion error from '{kind}' to 'bool'"
        )

    def cost(self, device: DeviceView) -> int:
        """The actual cost of one evaluation on ``device`` (for tests and benches); errors count too."""
        evaluator = _Evaluator(self.program.ast, self.activation, Tracker(CEL_SELECTOR_EXPRESSION_MAX_COST))
        with contextlib.suppress(Exception):  # the cost so far is the answer
            evaluator.evaluate(_activation(device.cel_value()))
        return evaluator.tracker.cost


def _activation(device: Any) -> dict[str, Any]:
    return {"device": device, **PACKAGES}


def type_name(value: Any) -> str:
    """cel-go's ``Type().TypeName()`` for a value."""
    from kubeplane.api.crd.cel_quantity import Quantity
    from kubeplane.api.crd.cel_semver import Semver

    if isinstance(value, celtypes.BoolType):
        return "bool"
    if isinstance(value, celtypes.UintType):
        return "uint"
    if isinstance(value, celtypes.IntType):
        return "int"
    if isinstance(value, celtypes.DoubleType):
        return "double"
    if isinstance(value, celtypes.StringType):
        return "string"
    if isinstance(value, celtypes.BytesType):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    if value is None:
        return "null_type"
    return type(value).__name__


class _Evaluator(CostingEvaluator):
    """The CRD engine's costing interpreter plus ``cel.bind`` (ext.Bindings)."""

    def sub_evaluator(self, ast: Any) -> Any:
        return _Evaluator(ast, self.activation, self.tracker)

    def member_dot_arg(self, tree: Any) -> Any:
        if is_bind(tree):
            var, init, body = _exprs(tree)
            value = self.visit(init)
            if isinstance(value, CELEvalError):
                return value
            try:
                return self.sub_evaluator(body).evaluate({_ident(var) or "": value})
            except CELEvalError as exc:
                return exc
        if str(tree.children[1]) in _COMPREHENSIONS and len(tree.children) == 3:
            tracker = self.tracker
            before = tracker.cost
            target = self.visit(tree.children[0])
            if isinstance(target, CELEvalError):
                return target
            if not isinstance(target, list | dict):
                return CELEvalError(f"got '{_go_type(target)}', expected iterable type", LibraryError, ())
            tracker.cost = before  # the macro evaluates its range again, and counts it then
        return super().member_dot_arg(tree)


def _go_type(value: Any) -> str:
    """The Go type cel-go names in ``got '...', expected iterable type``."""
    kind = type_name(value)
    if kind == "kubernetes.Semver":
        return "cel.Semver"
    if kind == "kubernetes.Quantity":
        return "cel.Quantity"
    return "types." + kind.capitalize()


def runtime_message(exc: CELEvalError) -> str:
    """cel-go's runtime error text for what cel-python raised."""
    text = str(exc.args[0]) if exc.args else str(exc)
    cause = exc.args[1] if len(exc.args) > 1 else None
    detail = exc.args[2] if len(exc.args) > 2 else ()
    if cause is LibraryError:
        return text
    if cause is KeyError:
        if isinstance(detail, tuple) and detail:
            return f"no such key: {detail[0]}"
        m = re.search(r"'([^']*)'", text)
        return f"no such key: {m.group(1)}" if m else "no such key"
    if "no matching overload" in text or "no such overload" in text or cause is TypeError:
        return "no such overload"
    if cause is ZeroDivisionError:
        return "division by zero" if "divide" in text else "modulus by zero"
    if cause is IndexError:
        return "index out of bounds"
    return text


@lru_cache(maxsize=4096)
def _compile(expression: str) -> CompiledSelector | SelectorCompileError:
    try:
        tree = _ENV.compile(expression)
    except CELParseError as exc:
        line = int(getattr(exc, "line", 1) or 1)
        col = int(getattr(exc, "column", 0) or 0)
        return SelectorCompileError("compilation failed: " + _located(expression, line, col + 1, "Syntax error"))
    for token, message in _issues(tree, _VARIABLES):
        line, column = int(getattr(token, "line", 1) or 1), int(getattr(token, "column", 1) or 1)
        if message.startswith("undefined field"):
            column -= 1  # cel-go places a selection at its dot
        return SelectorCompileError("compilation failed: " + _located(expression, line, column, message))
    kind = _output_type(tree)
    if kind is not None and kind != "bool":
        return SelectorCompileError(f"must evaluate to bool or the unknown type, not {kind}")
    program = _ENV.program(tree, functions=dict(FUNCTIONS))
    return CompiledSelector(expression, program, cel_estimate.max_cost(tree), program.new_activation())


def compile_selector(expression: str) -> CompiledSelector:
    """The compiled selector, from the cache when this text was compiled before; raises
    :class:`SelectorCompileError` (also cached) when it does not compile."""
    result = _compile(expression)
    if isinstance(result, SelectorCompileError):
        raise SelectorCompileError(result.message)
    return result
