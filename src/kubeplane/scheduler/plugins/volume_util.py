"""Look-ups of storage objects for the volume plugins, as upstream's listers answer them.

The scheduler hands plugins ``handle.list_objects(plural, namespace)`` (informers live, the cluster file offline);
these helpers turn it into upstream's ``Lister.Get`` with its NotFound errors, whose messages plugins copy into
statuses verbatim: a client-go lister's ``errors.NewNotFound(<group>.Resource("<singular>"), name)`` reads
``persistentvolumeclaim "x" not found`` for the core group and ``storageclass.storage.k8s.io "x" not found`` for
storage.k8s.io (``GroupResource.String()`` adds the group).

Also :func:`claim_volumes` and csi-translation-lib's parts the volume plugins use; upstream's
``component-helpers/storage/volume`` and ``.../ephemeral`` helpers are in :mod:`kubeplane.api.volumes`. Invariant:
nothing here mutates an object it was given (informer objects are shared).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api.views import EMPTY, meta_of, name_of, namespace_of, spec_of

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle

__all__ = [
    "IN_TREE_PLUGINS",
    "MIGRATED_PLUGINS_ANNOTATION",
    "InTreePlugin",
    "NotFoundError",
    "StorageLister",
    "claim_volumes",
    "csi_volume_handle",
    "in_tree_plugin_by_name",
    "in_tree_plugin_of",
    "is_csi_migration_on",
]


class NotFoundError(LookupError):
    """A lister's NotFound (upstream ``apierrors.IsNotFound``); ``str()`` is the API error message."""

    def __init__(self, qualified_resource: str, name: str) -> None:
        super().__init__(f'{qualified_resource} "{name}" not found')
        self.resource = qualified_resource
        self.name = name


class StorageLister:
    """Upstream's listers over ``handle.list_objects``, indexed on first use of each kind.

    Build one per scheduling cycle (or per PreFilter call): objects are read once, so a Filter that looks up
    claims of every pod on every node costs dictionary look-ups, not scans.
    """

    __slots__ = ("_by_name", "_handle", "_va_by_node")

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._by_name: dict[str, dict[tuple[str, str], Mapping[str, Any]]] = {}
        self._va_by_node: dict[str, list[Mapping[str, Any]]] | None = None

    def _get(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        index = self._by_name.get(plural)
        if index is None:
            index = {}
            namespaced = plural == "persistentvolumeclaims"
            for obj in self._handle.list_objects(plural, ""):
                # explain files the namespaced objects without a namespace under "default", as kubectl would
                ns = (namespace_of(obj) or "default") if namespaced else ""
                index[(ns, name_of(obj))] = obj
            self._by_name[plural] = index
        return index.get((namespace, name))

    def pvc(self, namespace: str, name: str) -> Mapping[str, Any]:
        """The claim; raises :class:`NotFoundError` (``persistentvolumeclaim "name" not found``)."""
        obj = self._get("persistentvolumeclaims", namespace, name)
        if obj is None:
            raise NotFoundError("persistentvolumeclaim", name)
        return obj

    def pv(self, name: str) -> Mapping[str, Any]:
        """The volume; raises :class:`NotFoundError` (``persistentvolume "name" not found``)."""
        obj = self._get("persistentvolumes", "", name)
        if obj is None:
            raise NotFoundError("persistentvolume", name)
        return obj

    def storage_class(self, name: str) -> Mapping[str, Any]:
        """The class; raises :class:`NotFoundError` (``storageclass.storage.k8s.io "name" not found``)."""
        obj = self._get("storageclasses", "", name)
        if obj is None:
            raise NotFoundError("storageclass.storage.k8s.io", name)
        return obj

    def csi_node(self, name: str) -> Mapping[str, Any] | None:
        """The CSINode named after the node, or None (upstream logs the lister error and goes on)."""
        return self._get("csinodes", "", name)

    def csi_driver(self, name: str) -> Mapping[str, Any] | None:
        return self._get("csidrivers", "", name)

    def volume_attachments_on(self, node_name: str) -> Sequence[Mapping[str, Any]]:
        """The VolumeAttachments whose ``spec.nodeName`` is ``node_name`` (upstream's ``va.spec.nodename`` index)."""
        if self._va_by_node is None:
            by_node: dict[str, list[Mapping[str, Any]]] = {}
            for va in self._handle.list_objects("volumeattachments", ""):
                by_node.setdefault(str(spec_of(va).get("nodeName") or ""), []).append(va)
            self._va_by_node = by_node
        return self._va_by_node.get(node_name, ())


def claim_volumes(pod: Mapping[str, Any]) -> Iterator[str]:
    """The claim names of the pod's ``persistentVolumeClaim`` volumes, in order."""
    for volume in spec_of(pod).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            yield str(claim.get("claimName") or "")


# --- in-tree volumes migrated to CSI (upstream k8s.io/csi-translation-lib, the parts the scheduler uses) ---------


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """An in-tree volume plugin csi-translation-lib knows: its volume source field, names and handle rule."""

    source: str
    """The field of VolumeSource / PersistentVolumeSource (``awsElasticBlockStore``, ...)."""
    in_tree_name: str
    csi_driver: str


IN_TREE_PLUGINS: Final = (
    InTreePlugin("awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    InTreePlugin("gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com"),
    InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com"),
    InTreePlugin("cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org"),
    InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    InTreePlugin("portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com"),
)
"""csi-translation-lib's plugins (every one supports inline volumes: ``IsInlineMigratable``)."""
_BY_IN_TREE_NAME: Final = {p.in_tree_name: p for p in IN_TREE_PLUGINS}
MIGRATED_PLUGINS_ANNOTATION: Final = "storage.alpha.kubernetes.io/migrated-plugins"
"""Upstream ``v1.MigratedPluginsAnnotationKey`` on CSINode."""
_UNSPECIFIED = "UNSPECIFIED"


def in_tree_plugin_of(source: Mapping[str, Any]) -> InTreePlugin | None:
    """The migratable in-tree plugin of a Volume or a PersistentVolume spec (``IsInlineMigratable``,
    ``IsPVMigratable`` with ``GetInTreePluginNameFromSpec``), or None."""
    for plugin in IN_TREE_PLUGINS:
        if source.get(plugin.source) is not None:
            return plugin
    return None


def in_tree_plugin_by_name(name: str) -> InTreePlugin | None:
    """``IsMigratableIntreePluginByName`` with ``GetCSINameFromInTreeName``."""
    return _BY_IN_TREE_NAME.get(name)


def is_csi_migration_on(csi_node: Mapping[str, Any] | None, plugin_name: str) -> bool:
    """Upstream ``nodevolumelimits.isCSIMigrationOn`` (v1.37): AWS EBS, GCE PD, Azure Disk and Cinder are
    migrated whenever the node has a CSINode; Portworx (CSIMigrationPortworx, on by default) when the CSINode's
    migrated-plugins annotation lists it; every other plugin never."""
    if csi_node is None or not plugin_name:
        return False
    if plugin_name in ("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk"):
        return True
    if plugin_name == "kubernetes.io/cinder":
        return True
    if plugin_name != "kubernetes.io/portworx-volume":
        return False
    annotations = meta_of(csi_node).get("annotations") or EMPTY
    migrated = str(annotations.get(MIGRATED_PLUGINS_ANNOTATION) or "")
    return plugin_name in (migrated.split(",") if migrated else ())


def _ebs_volume_id(volume_id: str) -> str | None:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/<id>`` and ``aws:///<id>`` -> ``<id>``."""
    if not volume_id.startswith("aws://"):
        return volume_id
    path = volume_id[len("aws://") :]
    path = path.split("/", 1)[1] if "/" in path else ""
    path = path.lstrip("/")
    if not path or "/" in path:
        return None  # upstream: "Invalid format for AWS volume"
    return path


def _gce_region(zones: list[str]) -> str | None:
    regions = {zone.rsplit("-", 1)[0] for zone in zones if "-" in zone}
    return regions.pop() if len(regions) == 1 and all("-" in z for z in zones) else None


def csi_volume_handle(
    plugin: InTreePlugin, source: Mapping[str, Any], pv: Mapping[str, Any] | None = None
) -> str | None:
    """The CSI volume handle csi-translation-lib gives an in-tree source (``TranslateInTreePVToCSI`` with ``pv``,
    ``TranslateInTreeInlineVolumeToCSI`` without), or None where it fails or has no handle rule here."""
    if plugin.source == "awsElasticBlockStore":
        return _ebs_volume_id(str(source.get("volumeID") or ""))
    if plugin.source == "gcePersistentDisk":
        pd_name = str(source.get("pdName") or "")
        labels = meta_of(pv).get("labels") or EMPTY if pv is not None else EMPTY
        zone_label = str(
            labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone") or ""
        )
        zones = zone_label.split("__") if zone_label else []
        if len(zones) == 1:
            return f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
        if len(zones) > 1:
            region = _gce_region(zones)
            return None if region is None else f"projects/{_UNSPECIFIED}/regions/{region}/disks/{pd_name}"
        return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{pd_name}"
    if plugin.source == "azureDisk":
        return str(source.get("diskURI") or "")
    if plugin.source in ("cinder", "portworxVolume"):
        return str(source.get("volumeID") or "")
    return None  # azureFile, vsphereVolume: never migrated on (is_csi_migration_on), so never asked
