"""Example out-of-tree kube-scheduler plugins for kubeplane (see ``docs/scheduler-plugins.md``).

Both are Filter plugins with typed args, registered through the ``kubeplane.scheduler.plugins`` entry points
declared in this distribution's ``pyproject.toml``.
"""

from kubeplane_example_plugins.pod_count_limit import CheckPodCountLimit, CheckPodCountLimitArgs
from kubeplane_example_plugins.pod_limit_resources import CheckPodLimitResources, CheckPodLimitResourcesArgs

__all__ = ["CheckPodCountLimit", "CheckPodCountLimitArgs", "CheckPodLimitResources", "CheckPodLimitResourcesArgs"]
