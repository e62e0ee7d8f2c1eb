"""Vector Score plugins' normalised scores, range-checked and summed together (the framework's Score step).

Split from :mod:`.runtime` (one concept: the checked weighted sum). Invariant: the first out-of-range score, in
plugin order, is the error, with upstream's message; otherwise ``total`` gains each plugin's weighted scores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, Status

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray

__all__ = ["settle"]


def settle(total: IntArray, pending: list[tuple[str, IntArray, int]]) -> Status | None:
    """Add the ``(plugin, normalised scores, weight)`` of ``pending`` to ``total`` (in place) and empty it; the
    error of the first plugin with a score outside [MIN_NODE_SCORE, MAX_NODE_SCORE] instead (``total`` is then
    meaningless: the cycle fails)."""
    if not pending:
        return None
    if len(pending) == 1:
        stack = pending[0][1][np.newaxis, :]
    else:  # one concatenation (np.stack's Python-level checks cost twice as much for a handful of arrays)
        stack = np.concatenate([raw for _name, raw, _weight in pending]).reshape(len(pending), -1)
    # One reduction checks both bounds: with MIN_NODE_SCORE 0, a score is in range exactly when, read as unsigned
    # (a negative int64 is then above 2**63), it is at most MAX_NODE_SCORE.
    if stack.view(np.uint64).max() > MAX_NODE_SCORE:  # rare: the error's plugin and value, in upstream's order
        high, low = stack.max(axis=1), stack.min(axis=1)
        i = int(np.flatnonzero((high > MAX_NODE_SCORE) | (low < MIN_NODE_SCORE))[0])  # the first in plugin order
        value = int(high[i]) if high[i] > MAX_NODE_SCORE else int(low[i])
        name = pending[i][0]
        pending.clear()
        return Status.from_error(
            f"plugin {name!r} returns an invalid score {value}, it should in the range of "
            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
        )
    if len(pending) == 1:
        total += pending[0][1] * pending[0][2]
    else:
        total += np.array([weight for _name, _raw, weight in pending], np.int64) @ stack
    pending.clear()
    return None
