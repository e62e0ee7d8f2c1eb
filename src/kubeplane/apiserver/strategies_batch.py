"""The batch/v1 Job strategy, as upstream ``pkg/registry/batch/job/strategy.go`` (v1.37).

* **Create** generates the selector unless ``spec.manualSelector`` is true (``generateSelectorIfNeeded``): the
  template gets ``batch.kubernetes.io/controller-uid`` and ``controller-uid`` (the Job's uid) and
  ``batch.kubernetes.io/job-name`` and ``job-name`` (its name) -- each only when not already set, so a
  conflicting user value is rejected by validation rather than overwritten -- and ``spec.selector.matchLabels``
  gets ``batch.kubernetes.io/controller-uid``. It runs before defaulting here (the registry defaults after
  ``prepare_for_create``) so the defaulter copies the generated template labels into an empty
  ``metadata.labels``, as every read of an upstream Job shows them. Status is reset and generation is 1.
* **Update** keeps the stored status; generation moves when the spec changed. The ``/status`` subresource
  changes only status (the generic :class:`~.strategies.Strategy` behaviour).
* **Delete** without a propagationPolicy orphans the Job's pods: ``DefaultGarbageCollectionPolicy`` is
  ``OrphanDependents`` for batch/v1 "for back compatibility", so the ``orphan`` finalizer is added and the
  garbage collector strips the pods' owner references. ``kubectl delete job`` sends ``Background`` and so
  deletes the pods. (CronJob's default is ``DeleteDependents``: the generic strategy's.)
"""

from __future__ import annotations

from typing import Any

from kubeplane.api.validation.batch_job import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)

from .strategies import Obj, Strategy

__all__ = ["JobStrategy", "generate_selector"]


def generate_selector(job: Obj) -> None:
    """Upstream ``generateSelector``: labels on the template and the uid in the selector, never overwriting."""
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    spec = job.get("spec")
    if not isinstance(spec, dict):
        spec = job["spec"] = {}
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmeta = template.get("metadata")
    if not isinstance(tmeta, dict):
        tmeta = template["metadata"] = {}
    labels = tmeta.get("labels")
    if not isinstance(labels, dict):
        labels = tmeta["labels"] = {}
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match_labels = selector.get("matchLabels")
    if not isinstance(match_labels, dict):
        match_labels = selector["matchLabels"] = {}
    match_labels.setdefault(CONTROLLER_UID_LABEL, uid)


class JobStrategy(Strategy):
    """See the module docstring."""

    default_propagation_policy = "Orphan"

    def prepare_for_create(self, obj: Obj) -> None:
        spec: Any = obj.get("spec")
        manual = spec.get("manualSelector") if isinstance(spec, dict) else None
        if manual is not True:
            generate_selector(obj)
        super().prepare_for_create(obj)
