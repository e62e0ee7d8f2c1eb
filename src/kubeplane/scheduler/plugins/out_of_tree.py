"""Out-of-tree plugins: Python classes found through entry points or named by import path in the configuration.

Two sources, both merged into the registry the scheduler and ``kubeplane explain`` build profiles from
(:func:`kubeplane.scheduler.plugins.registry.registry_for`):

* entry points of the group :data:`ENTRY_POINT_GROUP` of every installed distribution, the entry point's name
  being the plugin name (``CheckPodCountLimit = "kubeplane_example_plugins.pod_count_limit:CheckPodCountLimit"``);
* the configuration's ``outOfTreeRegistry`` (a kubeplane extension of ``KubeSchedulerConfiguration``):
  ``{PluginName: "package.module:Attribute"}``.

The target (``module:Attribute``, attribute paths may be dotted) is either a plugin **class**, built by its
``new(args, handle)`` classmethod/staticmethod when it has one and by ``cls(args, handle)`` otherwise, or a
**factory** function ``new(args, handle) -> PluginClass`` whose return annotation names the plugin class (the
class is needed to know its extension points without constructing it). The class must have ``name()`` and
implement at least one extension point; a ``NAME`` class attribute, when present, must equal the registered
name. Typed args are found by :func:`kubeplane.scheduler.framework.plugin_args.args_type_of`.

Every problem (an import that fails, a target that is not a plugin, a name registered twice, a name of an
in-tree plugin) is one line naming where the plugin came from; loading collects them all and never stops at
the first. Invariant: nothing here constructs a plugin; importing the target module is the only side effect.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.framework.plugin_args import args_type_of
from kubeplane.scheduler.framework.registry import Registry, extension_points_of

__all__ = ["ENTRY_POINT_GROUP", "PluginLoadError", "load_entry_points", "load_import_paths", "resolve_target"]

ENTRY_POINT_GROUP: Final = "kubeplane.scheduler.plugins"


class PluginLoadError(Exception):
    """A target that cannot be used as a plugin; the message is one line, without the "where" prefix."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def import_target(spec: str) -> object:
    """The object ``spec`` (``"package.module:Attr.sub"``) names; raises :class:`PluginLoadError`."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PluginLoadError('must be "package.module:Attribute"')
    try:
        obj: object = importlib.import_module(module_name)
    except Exception as exc:  # an import runs arbitrary code: report whatever it raised, in one line
        raise PluginLoadError(
            f"cannot import module {fielderr.go_quote(module_name)}: {type(exc).__name__}: {_one_line(str(exc))}"
        ) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginLoadError(
                f"module {fielderr.go_quote(module_name)} has no attribute {fielderr.go_quote(attr)}"
            ) from None
    return obj


def resolve_target(name: str, target: object) -> tuple[type, Callable[[Any, Any], Any], type | None]:
    """``(plugin class, factory, args dataclass or None)`` of a class or factory registered as ``name``.

    Raises :class:`PluginLoadError` when ``target`` is not usable as a plugin (see the module docstring).
    """
    factory: Callable[[Any, Any], Any]
    if isinstance(target, type):
        cls = target
        new = getattr(cls, "new", None)
        factory = new if callable(new) else cls
    elif callable(target):
        factory = target
        try:
            returned = typing.get_type_hints(target).get("return")
        except Exception as exc:  # unresolvable annotations: say so rather than guess
            raise PluginLoadError(f"cannot read the annotations of factory {_qualname(target)}: {exc}") from None
        if not isinstance(returned, type):
            raise PluginLoadError(
                f"factory {_qualname(target)} must annotate its return type with the plugin class "
                "(the class says which extension points the plugin implements)"
            )
        cls = returned
    else:
        raise PluginLoadError(f"the target is a value of type {type(target).__name__}, not a plugin class or factory")
    if not callable(getattr(cls, "name", None)):
        raise PluginLoadError(f"class {_qualname(cls)} has no name() method: it is not a scheduler plugin")
    if not extension_points_of(cls):
        raise PluginLoadError(
            f"class {_qualname(cls)} implements no extension point (pre_filter, filter, score, ...): "
            "it is not a scheduler plugin"
        )
    declared = getattr(cls, "NAME", None)
    if isinstance(declared, str) and declared != name:
        raise PluginLoadError(
            f"class {_qualname(cls)} declares NAME {fielderr.go_quote(declared)}, not {fielderr.go_quote(name)}"
        )
    return cls, factory, args_type_of(cls, factory)


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _register(
    registry: Registry, name: str, target: object, origin: str, reserved: Collection[str], errors: list[str], at: str
) -> None:
    """Register ``target`` as ``name`` or append one error line prefixed with ``at``."""
    if name in reserved or name in registry:
        existing = registry.entry(name)
        where = "in-tree" if existing is None or existing.origin == "in-tree" else existing.origin
        what = "an in-tree plugin" if where == "in-tree" else f"the plugin registered by {where}"
        errors.append(f"{at}: plugin name {fielderr.go_quote(name)} is already taken by {what}")
        return
    try:
        cls, factory, args_type = resolve_target(name, target)
    except PluginLoadError as exc:
        errors.append(f"{at}: {exc}")
        return
    registry.register(name, cls, factory, args_type=args_type, origin=origin)


def load_entry_points(registry: Registry, reserved: Collection[str], errors: list[str]) -> None:
    """Add every plugin of the :data:`ENTRY_POINT_GROUP` entry points to ``registry``; problems go to ``errors``.

    ``reserved`` are names no out-of-tree plugin may take (upstream's in-tree names kubeplane lacks).
    Entry points are visited sorted by name then distribution, so errors come in a stable order.
    """
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for ep in sorted(eps, key=lambda e: (e.name, e.value, _dist(e))):
        origin = f"entry point {ep.name} = {fielderr.go_quote(ep.value)} of {_dist(ep)}"
        try:
            target = import_target(ep.value)
        except PluginLoadError as exc:
            errors.append(f"{origin}: {exc}")
            continue
        _register(registry, ep.name, target, origin, reserved, errors, origin)


def load_import_paths(
    registry: Registry, paths: Mapping[str, str], reserved: Collection[str], errors: list[str]
) -> None:
    """Add the plugins of a configuration's ``outOfTreeRegistry`` to ``registry``; problems go to ``errors``.

    Each error is ``outOfTreeRegistry.<Name>: Invalid value: "<path>": <problem>``.
    """
    base = fielderr.new_path("outOfTreeRegistry")
    for name, spec in paths.items():
        at = base.child(name)
        origin = f"outOfTreeRegistry.{name}"
        try:
            target = import_target(spec)
        except PluginLoadError as exc:
            errors.append(str(fielderr.invalid(at, spec, detail=str(exc))))
            continue
        problems: list[str] = []
        _register(registry, name, target, origin, reserved, problems, "")
        errors.extend(str(fielderr.invalid(at, spec, detail=p.removeprefix(": "))) for p in problems)


def _dist(ep: importlib.metadata.EntryPoint) -> str:
    dist = ep.dist
    if dist is None:
        return "an unknown distribution"
    return f"distribution {dist.name} {dist.version}"
