"""kube-scheduler's configuration (``kubescheduler.config.k8s.io/v1``, as of Kubernetes v1.37).

:func:`load_config` / :func:`parse_config` read a ``KubeSchedulerConfiguration`` the way kube-scheduler does:
strict decoding, upstream v1 defaulting (including the default plugin set, :data:`UPSTREAM_DEFAULT_PLUGINS`,
and the defaulted args of every in-tree plugin), and upstream validation, every problem reported at once in
a :class:`ConfigError`. The default plugin set follows kube-scheduler's ``--feature-gates``
(:func:`parse_feature_gates`, keyword ``feature_gates`` of the loaders; v1.37's defaults unless given).
:func:`resolve_plugins` then expands a profile against the plugins a registry
provides into the ordered per-extension-point lists the framework runs (upstream ``NewFramework``).
"""

from kubeplane.scheduler.config.features import (
    DEFAULT_GATES,
    FeatureGateError,
    FeatureGates,
    parse_feature_gates,
)
from kubeplane.scheduler.config.loading import default_config, load_config, parse_config
from kubeplane.scheduler.config.plugins import (
    UPSTREAM_DEFAULT_PLUGINS,
    UPSTREAM_IN_TREE_PLUGINS,
    ResolvedPlugins,
    resolve_plugins,
    validate_queue_sort_shared,
)
from kubeplane.scheduler.config.types import (
    EXTENSION_POINTS,
    ClientConnection,
    ConfigError,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)

__all__ = [
    "DEFAULT_GATES",
    "EXTENSION_POINTS",
    "UPSTREAM_DEFAULT_PLUGINS",
    "UPSTREAM_IN_TREE_PLUGINS",
    "ClientConnection",
    "ConfigError",
    "FeatureGateError",
    "FeatureGates",
    "KubeSchedulerConfiguration",
    "LeaderElection",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "ResolvedPlugins",
    "default_config",
    "load_config",
    "parse_config",
    "parse_feature_gates",
    "resolve_plugins",
    "validate_queue_sort_shared",
]
