"""storage.k8s.io/v1 defaulting: upstream ``pkg/apis/storage/v1/defaults.go`` (v1.37).

* ``SetDefaults_StorageClass``: ``reclaimPolicy: Delete``, ``volumeBindingMode: Immediate``.
* ``SetDefaults_CSIDriver`` with its gates at their v1.37 values (CSIVolumeFSGroupPolicy, CSIInlineVolume GA;
  SELinuxMountReadWriteOncePod on): ``attachRequired: true``, ``podInfoOnMount: false``, ``storageCapacity:
  false``, ``fsGroupPolicy: ReadWriteOnceWithFSType``, ``volumeLifecycleModes: [Persistent]``,
  ``requiresRepublish: false``, ``seLinuxMount: false``.

CSINode, CSIStorageCapacity and VolumeAttachment have no defaulters upstream. Same contract as
:mod:`kubeplane.api.defaults`: in place, idempotent, never raising on malformed input.
"""

from __future__ import annotations

from kubeplane.api.defaults_workloads import JSONObject, _ensure, _set_nil

__all__ = ["set_defaults_csi_driver", "set_defaults_storage_class"]


def set_defaults_storage_class(storage_class: JSONObject) -> None:
    """``SetDefaults_StorageClass``."""
    _set_nil(storage_class, "reclaimPolicy", "Delete")
    _set_nil(storage_class, "volumeBindingMode", "Immediate")


def set_defaults_csi_driver(driver: JSONObject) -> None:
    """``SetDefaults_CSIDriver``: each pointer only when nil; the modes when the list is empty."""
    spec = _ensure(driver, "spec")
    if spec is None:
        return
    _set_nil(spec, "attachRequired", True)
    _set_nil(spec, "podInfoOnMount", False)
    _set_nil(spec, "storageCapacity", False)
    _set_nil(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    modes = spec.get("volumeLifecycleModes")
    if modes is None or modes == []:
        spec["volumeLifecycleModes"] = ["Persistent"]
    _set_nil(spec, "requiresRepublish", False)
    _set_nil(spec, "seLinuxMount", False)
