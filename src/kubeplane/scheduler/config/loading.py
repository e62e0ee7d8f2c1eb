"""Reading a ``KubeSchedulerConfiguration`` file: decode strictly, default, validate.

:func:`parse_config` takes the decoded YAML/JSON document. Decoding is strict like upstream's scheme
(``serializer.EnableStrict``): ``apiVersion`` must be ``kubescheduler.config.k8s.io/v1`` and ``kind``
``KubeSchedulerConfiguration``, an unknown member anywhere (in-tree plugin args included) is an error naming
its path (``strict decoding error: unknown field "profiles[0].foo"``) and a member of the wrong type is one
too. Decoding problems are all reported together and stop there (a half-read file cannot be defaulted
meaningfully); otherwise the configuration is defaulted (:mod:`.defaults`) and every validation problem is
reported together (:mod:`.validation`).

kubeplane extension: ``outOfTreeRegistry`` (top level), an object of plugin name -> ``"package.module:Attribute"``
naming an out-of-tree plugin class or factory (see ``docs/scheduler-plugins.md``); validated here, imported
only when profiles are built.

Accepted but not kept: ``enableProfiling``/``enableContentionProfiling`` (kubeplane serves no pprof). Refused
with a ``Forbidden`` error: ``extenders`` (see :mod:`.validation`), ``percentageOfPlacementsToScore`` and the
workload-scheduling plugin points (``placementGenerate``, ``placementScore``, ``placementFeasible``,
``podGroupPostFilter``), whose feature gates are off by default in v1.37 and which kubeplane does not run.

:func:`load_config` reads a file (``.json`` as JSON, anything else as YAML); a file that cannot be read or
parsed gives a one-line :class:`ConfigError`. A file with no document at all (empty, or only comments) means
"no configuration": :func:`default_config`, as kube-scheduler without ``--config``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from kubeplane.api import yamlio
from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.config.args import ARGS_PLUGINS, decode_args
from kubeplane.scheduler.config.defaults import RawConfig, RawPluginConfig, RawProfile, apply_defaults
from kubeplane.scheduler.config.features import DEFAULT_GATES, FeatureGates
from kubeplane.scheduler.config.types import (
    API_VERSION,
    EXTENSION_POINTS,
    KIND,
    MULTI_POINT,
    ConfigError,
    Fields,
    KubeSchedulerConfiguration,
    PluginRef,
    Plugins,
    PluginSet,
)
from kubeplane.scheduler.config.validation import validate

__all__ = ["decode", "default_config", "load_config", "parse_config"]

_WORKLOAD_POINTS: Final = ("placementGenerate", "placementScore", "placementFeasible", "podGroupPostFilter")
_WORKLOAD_DETAIL: Final = "workload scheduling is not supported (its feature gates are off by default in v1.37)"


def _forbidden(path: fielderr.Path, detail: str) -> str:
    return str(fielderr.forbidden(path, detail))


def _plugin_refs(items: list[Fields] | None) -> tuple[PluginRef, ...]:
    refs: list[PluginRef] = []
    for item in items or ():
        refs.append(PluginRef(item.string("name") or "", item.integer("weight")))
        item.finish()
    return tuple(refs)


def _plugin_set(f: Fields | None) -> PluginSet:
    if f is None:
        return PluginSet()
    ps = PluginSet(_plugin_refs(f.objects("enabled")), _plugin_refs(f.objects("disabled")))
    f.finish()
    return ps


def _plugins(f: Fields | None, unsupported: list[str]) -> Plugins:
    if f is None:
        return Plugins()
    sets = {point: _plugin_set(f.obj(point)) for point in (*EXTENSION_POINTS, MULTI_POINT)}
    for point in _WORKLOAD_POINTS:
        if _plugin_set(f.obj(point)).enabled:
            unsupported.append(_forbidden(f.at(point), _WORKLOAD_DETAIL))
    f.finish()
    return Plugins.from_points(sets)


def _plugin_config(f: Fields, errs: list[str]) -> RawPluginConfig:
    name = f.string("name") or ""
    raw = f.raw("args")
    f.finish()
    if name in ARGS_PLUGINS:
        return RawPluginConfig(name, decode_args(name, raw, f.at("args"), errs), typed=True)
    if raw is not None and not isinstance(raw, Mapping):
        errs.append(str(fielderr.type_invalid(f.at("args"), raw, detail="must be of type object")))
        raw = None
    return RawPluginConfig(name, copy.deepcopy(dict(raw or {})), typed=False)


def _profile(f: Fields, unsupported: list[str]) -> RawProfile:
    profile = RawProfile(
        scheduler_name=f.string("schedulerName"),
        percentage_of_nodes_to_score=f.integer("percentageOfNodesToScore"),
        plugins=_plugins(f.obj("plugins"), unsupported),
        plugin_config=[_plugin_config(e, f.errs) for e in f.objects("pluginConfig") or ()],
    )
    if f.integer("percentageOfPlacementsToScore") is not None:
        unsupported.append(_forbidden(f.at("percentageOfPlacementsToScore"), _WORKLOAD_DETAIL))
    f.finish()
    return profile


def _members(f: Fields | None, readers: Mapping[str, str]) -> dict[str, Any]:
    """Read the members of a component-base struct by kind (``string``, ``duration``, ...)."""
    if f is None:
        return {}
    out: dict[str, Any] = {}
    for key, kind in readers.items():
        value = getattr(f, kind)(key)
        if value is not None:
            out[key] = value
    f.finish()
    return out


_LEADER_ELECTION: Final = {
    "leaderElect": "boolean",
    "leaseDuration": "duration",
    "renewDeadline": "duration",
    "retryPeriod": "duration",
    "resourceLock": "string",
    "resourceName": "string",
    "resourceNamespace": "string",
}
_CLIENT_CONNECTION: Final = {
    "kubeconfig": "string",
    "acceptContentTypes": "string",
    "contentType": "string",
    "qps": "number",
    "burst": "integer",
}


def _header(f: Fields) -> None:
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = f.string(key)
        if not value:
            f.errs.append(str(fielderr.required(f.at(key), f"must be {fielderr.go_quote(want)}")))
        elif value != want:
            f.errs.append(str(fielderr.not_supported(f.at(key), value, supported=(want,))))


def decode(data: Mapping[str, Any]) -> RawConfig:
    """Decode a document strictly into a :class:`~.defaults.RawConfig`; raises :class:`ConfigError`."""
    if not isinstance(data, Mapping):
        raise ConfigError([f"the configuration must be an object, not {type(data).__name__}"])
    errs: list[str] = []
    f = Fields(data, None, errs)
    _header(f)
    raw = RawConfig(
        parallelism=f.integer("parallelism"),
        percentage_of_nodes_to_score=f.integer("percentageOfNodesToScore"),
        pod_initial_backoff_seconds=f.integer("podInitialBackoffSeconds", bits=64),
        pod_max_backoff_seconds=f.integer("podMaxBackoffSeconds", bits=64),
        leader_election=_members(f.obj("leaderElection"), _LEADER_ELECTION),
        client_connection=_members(f.obj("clientConnection"), _CLIENT_CONNECTION),
        delay_cache_until_active=bool(f.boolean("delayCacheUntilActive")),
    )
    raw.profiles = [_profile(p, raw.unsupported) for p in f.objects("profiles") or ()]
    f.boolean("enableProfiling")
    f.boolean("enableContentionProfiling")
    if f.integer("percentageOfPlacementsToScore") is not None:
        raw.unsupported.append(_forbidden(f.at("percentageOfPlacementsToScore"), _WORKLOAD_DETAIL))
    extenders = f.raw("extenders")
    if extenders is not None and not isinstance(extenders, list):
        errs.append(str(fielderr.type_invalid(f.at("extenders"), extenders, detail="must be of type array")))
    elif extenders:
        detail = "extenders are not supported by kubeplane; implement the extension as a scheduler plugin"
        raw.unsupported.append(_forbidden(f.at("extenders"), detail))
    raw.out_of_tree_registry = _out_of_tree_registry(f)
    f.finish()
    if errs:
        raise ConfigError(dict.fromkeys(errs))
    return raw


def _out_of_tree_registry(f: Fields) -> dict[str, str]:
    """The kubeplane extension ``outOfTreeRegistry``: an object of plugin name -> import path string."""
    value = f.raw("outOfTreeRegistry")
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        f.errs.append(str(fielderr.type_invalid(f.at("outOfTreeRegistry"), value, detail="must be of type object")))
        return {}
    out: dict[str, str] = {}
    for name, spec in value.items():
        if isinstance(spec, str):
            out[str(name)] = spec
        else:
            at = f.at("outOfTreeRegistry").child(str(name))
            f.errs.append(str(fielderr.type_invalid(at, spec, detail="must be of type string")))
    return out


def parse_config(data: Mapping[str, Any], *, feature_gates: FeatureGates | None = None) -> KubeSchedulerConfiguration:
    """Decode, default and validate a ``KubeSchedulerConfiguration`` document (see the module docstring).

    ``feature_gates`` (kube-scheduler's ``--feature-gates``, :func:`~.features.parse_feature_gates`) decide the
    default plugin set; v1.37's defaults when None. Raises :class:`ConfigError` listing every problem, one line
    each.
    """
    raw = decode(data)
    cfg = apply_defaults(raw, feature_gates or DEFAULT_GATES)
    errors = validate(raw, cfg)
    if errors:
        raise ConfigError(errors)
    return cfg


def default_config(*, feature_gates: FeatureGates | None = None) -> KubeSchedulerConfiguration:
    """The configuration kube-scheduler runs without a file: one ``default-scheduler`` profile, all defaults."""
    return parse_config({"apiVersion": API_VERSION, "kind": KIND}, feature_gates=feature_gates)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parse(path: Path, text: str) -> object:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{path}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]) from None
    try:
        return yamlio.load(text)
    except yaml.MarkedYAMLError as exc:
        where = f" (line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1})" if exc.problem_mark else ""
        problem = ", ".join(part for part in (exc.context, exc.problem) if part) or "malformed document"
        raise ConfigError([f"{path}: invalid YAML: {_one_line(problem)}{where}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: invalid YAML: {_one_line(str(exc))}"]) from None


def load_config(
    path: str | os.PathLike[str], *, feature_gates: FeatureGates | None = None
) -> KubeSchedulerConfiguration:
    """Read, parse and :func:`parse_config` the file at ``path`` (YAML, or JSON for ``*.json``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{p}: no such file"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{p}: not a UTF-8 text file"]) from None
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read: {exc.strerror or exc}"]) from None
    data = _parse(p, text) if text.strip() else None
    if data is None:
        return default_config(feature_gates=feature_gates)
    if not isinstance(data, Mapping):
        raise ConfigError([f"{p}: the configuration must be an object, not {type(data).__name__}"])
    return parse_config(data, feature_gates=feature_gates)
