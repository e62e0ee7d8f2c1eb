"""A pod's scheduling signature for one profile (upstream ``frameworkImpl.computeBatchablePlugins`` and
``SignPod`` in pkg/scheduler/framework/runtime/framework.go).

Invariant: two pods with equal signatures get the same Filter verdicts and the same scores on the same nodes in
the same state, as far as the profile's plugins can tell (each plugin names what it reads:
:mod:`kubeplane.scheduler.plugins.signers`). ``None`` means "no signature": the pod can be compared with no other.

* The candidate plugins are the profile's PreFilter, Filter, PreScore and Score plugins, each once, in that order.
  If any of them cannot sign (neither an in-tree signer nor its own ``sign_pod``), the profile signs no pod
  (upstream logs "Disabling signatures for profile because plugins do not support it"). kubeplane has no
  extenders (upstream disables signatures for a profile with extenders too).
* The signature object starts with the pod's schedulerName; each plugin adds its fragments. The first plugin that
  returns a non-success status makes the pod unsignable (``None``), so the cheap refusals decide fast.
* The object is encoded as canonical JSON (keys sorted, as Go's ``json.Marshal`` of a map); equality of the text
  is equality of signatures.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from kubeplane.scheduler.framework.interface import Code
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.signers import IN_TREE_SIGNERS, MAY_REFUSE, SCHEDULER_NAME, SignFn

__all__ = ["PodSigner"]

log = logging.getLogger("kubeplane.scheduler")

_IN_TREE_MODULE = "kubeplane.scheduler.plugins."
_MAY_REFUSE = frozenset(IN_TREE_SIGNERS[name] for name in MAY_REFUSE)


def _signer_of(plugin: Any) -> SignFn | None:
    own = getattr(plugin, "sign_pod", None)
    if callable(own):
        return lambda _plugin, pod, _gates: own(pod)
    if type(plugin).__module__.startswith(_IN_TREE_MODULE):
        return IN_TREE_SIGNERS.get(plugin.name())
    return None


class PodSigner:
    """The signer of one profile: its batchable plugins, resolved once."""

    def __init__(self, fwk: Framework, gates: Mapping[str, bool] | None = None) -> None:
        self.gates = gates
        self.plugins: list[tuple[Any, SignFn]] = []
        self.unsupported: list[str] = []
        seen: set[str] = set()
        candidates = [*fwk.pre_filter_plugins, *fwk.filter_plugins, *fwk.pre_score_plugins, *fwk.score_plugins]
        for plugin in candidates:
            name = plugin.name()
            if name in seen:
                continue
            seen.add(name)
            fn = _signer_of(plugin)
            if fn is None:
                self.unsupported.append(name)
            else:
                self.plugins.append((plugin, fn))
        # The plugins that may refuse a pod go first: the result is the same in any order (a refusal anywhere is
        # None; fragments are keyed and plugins sharing a key write the same value), and a refused pod costs one
        # call instead of building every other fragment first.
        self.plugins.sort(key=lambda entry: entry[1] not in _MAY_REFUSE)
        self.enabled = not self.unsupported
        if not self.enabled:
            log.info(
                "Disabling signatures for profile %s because plugins do not support it: %s",
                fwk.profile_name,
                ", ".join(self.unsupported),
            )

    def sign(self, pod: PodInfo) -> str | None:
        """The pod's signature, or None when the profile or one of its plugins cannot sign it."""
        if not self.enabled:
            return None
        sig: dict[str, Any] = {SCHEDULER_NAME: pod.scheduler_name}
        gates = self.gates
        for plugin, fn in self.plugins:
            fragments, status = fn(plugin, pod, gates)
            if status is not None and status.code != Code.SUCCESS:
                return None
            for key, value in fragments:
                sig[key] = value
        return json.dumps(sig, sort_keys=True, separators=(",", ":"))
