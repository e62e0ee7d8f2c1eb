"""Typed plugin args: a ``pluginConfig[].args`` object decoded strictly into the dataclass a plugin declares.

In-tree plugins have their args decoded by :mod:`kubeplane.scheduler.config.args`; an out-of-tree plugin may
declare a dataclass instead (see :func:`args_type_of`) and receives an instance of it rather than a mapping.
Decoding follows the configuration package's rules and error style, so a problem is one line naming the field
path from the top of the file:

* member names are the fields' names in lowerCamelCase (``pod_count_limit`` and ``podCountLimit`` both read
  ``podCountLimit``), or ``field(metadata={"json": "name"})``;
* a member the dataclass does not have is ``strict decoding error: unknown field "<path>"``;
* a field without a default is required (``<path>: Required value``); ``null`` reads as absent;
* a member of the wrong type is ``<path>: Invalid value: "x": must be of type integer``;
* after construction the dataclass may check values in ``__post_init__`` by raising :class:`InvalidArgs`
  (``<path>.<field>: Invalid value: <value>: <detail>``) or ``ValueError`` (reported at the args path).

Supported annotations: ``bool``, ``int`` (not a bool), ``float`` (an integer is accepted), ``str``, ``Any``
(taken as decoded), ``X | None``, ``Literal[...]`` of strings/ints, ``list[X]``/``Sequence[X]`` (a list),
``tuple[X, ...]`` (a tuple), ``dict[str, X]``/``Mapping[str, X]`` (a dict), and nested dataclasses. Every
problem in one args object is reported, not only the first; decoding never raises for bad input.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Union, cast

from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import OMIT_VALUE, Path

__all__ = ["InvalidArgs", "args_type_of", "decode_args", "member_name"]

_CAMEL: Final = re.compile(r"_([a-z0-9])")


class InvalidArgs(ValueError):
    """Raised by an args dataclass's ``__post_init__``: ``field`` (its member name, e.g. ``"podCountLimit"`` or
    ``"limitRatio[cpu]"``) has the invalid ``value`` because ``detail``; rendered as a field ``Invalid value``."""

    def __init__(self, field: str, value: object, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.value = value
        self.detail = detail


def member_name(f: dataclasses.Field[Any]) -> str:
    """The args member a dataclass field reads: ``metadata["json"]``, else the name in lowerCamelCase."""
    explicit = f.metadata.get("json")
    if isinstance(explicit, str) and explicit:
        return explicit
    return _CAMEL.sub(lambda m: m.group(1).upper(), f.name)


def args_type_of(cls: type, factory: Callable[..., object] | None = None) -> type | None:
    """The args dataclass a plugin declares, or None when it takes plain ``Mapping`` args.

    ``cls.Args`` wins when it is a dataclass; otherwise the annotation of the factory's first parameter is used
    when it resolves to a dataclass (``def new(args: MyArgs, handle: Handle) -> MyPlugin``). Annotations that
    cannot be resolved count as "no declaration", never as an error: plain-mapping plugins must keep working.
    """
    declared = getattr(cls, "Args", None)
    if isinstance(declared, type) and dataclasses.is_dataclass(declared):
        return declared
    if factory is None:
        return None
    try:
        # A class's own hints are its attributes: a constructor's parameter annotations are on __init__.
        hints = typing.get_type_hints(cast(Any, factory).__init__ if isinstance(factory, type) else factory)
        params = list(inspect.signature(factory).parameters)
    except (NameError, TypeError, ValueError):
        return None
    if not params:
        return None
    first = hints.get(params[0])
    if isinstance(first, type) and dataclasses.is_dataclass(first):
        return first
    return None


def decode_args(args_type: type, raw: object, path: Path) -> tuple[Any, list[str]]:
    """Decode ``raw`` (the ``args`` member, None when absent) into ``args_type`` at ``path``.

    Returns ``(instance, [])`` or ``(None, errors)``: one line per problem, each naming its field path.
    """
    errs: list[str] = []
    value = _decode_dataclass(args_type, {} if raw is None else raw, path, errs)
    if errs:
        return None, errs
    return value, []


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is str:
        return "string"
    if origin in (list, tuple, Sequence, typing.Sequence):
        return "array"
    return "object"


def _bad_type(path: Path, value: object, tp: Any, errs: list[str]) -> None:
    errs.append(str(fielderr.type_invalid(path, value, detail=f"must be of type {_type_name(tp)}")))


def _decode(tp: Any, value: object, path: Path, errs: list[str]) -> Any:
    """``value`` as ``tp``; on a problem an error is appended and None returned."""
    origin = typing.get_origin(tp)
    targs = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in targs:
            return None
        rest = [a for a in targs if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"unsupported args annotation {tp!r}: only X | None unions are supported")
        return _decode(rest[0], value, path, errs)
    if origin is Literal:
        if not any(type(value) is type(t) and value == t for t in targs):  # True is not 1 here
            errs.append(str(fielderr.not_supported(path, value, supported=tuple(str(t) for t in targs))))
            return None
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif origin in (list, tuple, Sequence, typing.Sequence):
        if isinstance(value, list):
            item_tp = targs[0] if targs else Any
            items = [_decode(item_tp, item, path.index(i), errs) for i, item in enumerate(value)]
            return tuple(items) if origin is tuple else items
    elif origin in (dict, Mapping, typing.Mapping):
        if isinstance(value, Mapping):
            key_tp, item_tp = targs if targs else (str, Any)
            if key_tp is not str:
                raise TypeError(f"unsupported args annotation {tp!r}: mapping keys must be str")
            return {str(k): _decode(item_tp, v, path.key(str(k)), errs) for k, v in value.items()}
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, Mapping):
            return _decode_dataclass(tp, value, path, errs)
    else:
        raise TypeError(f"unsupported args annotation {tp!r}")
    _bad_type(path, value, tp, errs)
    return None


def _decode_dataclass(tp: type, value: object, path: Path, errs: list[str]) -> Any:
    if not isinstance(value, Mapping):
        _bad_type(path, value, tp, errs)
        return None
    hints = typing.get_type_hints(tp)
    fields = [f for f in dataclasses.fields(tp) if f.init]
    known = {member_name(f) for f in fields}
    before = len(errs)
    kwargs: dict[str, Any] = {}
    for f in fields:
        member = member_name(f)
        raw = value.get(member)
        at = path.child(member)
        if raw is None:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                errs.append(str(fielderr.required(at)))
            continue
        kwargs[f.name] = _decode(hints[f.name], raw, at, errs)
    for key in value:
        if key not in known:
            errs.append(f"strict decoding error: unknown field {fielderr.go_quote(str(path.child(str(key))))}")
    if len(errs) > before:
        return None
    try:
        return tp(**kwargs)
    except InvalidArgs as exc:
        errs.append(str(fielderr.invalid(path.child(exc.field), exc.value, detail=exc.detail)))
    except (ValueError, TypeError) as exc:
        errs.append(str(fielderr.invalid(path, OMIT_VALUE, detail=str(exc))))
    return None
