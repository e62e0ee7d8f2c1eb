"""Example out-of-tree kube-scheduler plugins for kubeplane (see ``docs/scheduler-plugins.md``): seed 002's four.

CheckPodCountLimit and CheckPodLimitResources are Filter plugins with typed args; CheckCSIStorageCapacity
(PreFilter + Filter) and LvmVolumeCapacity (Filter) are storage plugins reading claims, classes, volumes and
capacities through ``Handle.list_objects``. All four are registered through the ``kubeplane.scheduler.plugins``
entry points declared in this distribution's ``pyproject.toml``.
"""

from kubeplane_example_plugins.csi_storage_capacity import CheckCSIStorageCapacity
from kubeplane_example_plugins.lvm_volume_capacity import LvmVolumeCapacity, LvmVolumeCapacityArgs
from kubeplane_example_plugins.pod_count_limit import CheckPodCountLimit, CheckPodCountLimitArgs
from kubeplane_example_plugins.pod_limit_resources import CheckPodLimitResources, CheckPodLimitResourcesArgs

__all__ = [
    "CheckCSIStorageCapacity",
    "CheckPodCountLimit",
    "CheckPodCountLimitArgs",
    "CheckPodLimitResources",
    "CheckPodLimitResourcesArgs",
    "LvmVolumeCapacity",
    "LvmVolumeCapacityArgs",
]
