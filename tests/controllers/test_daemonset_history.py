"""A DaemonSet's ControllerRevisions (upstream ``pkg/controller/daemon/update.go`` constructHistory,
cleanupHistory, dedupCurHistories; ``daemon_controller_test.go`` TestDaemonSetUpdatesPods's history checks and
``update_test.go`` TestConstructHistory / TestDedupCurHistories / TestCleanupHistory)."""

from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.controllers.controller_utils import compute_hash
from kubeplane.controllers.daemonset_history import get_patch, match
from kubeplane.controllers.daemonset_util import HASH_LABEL
from tests.controllers.harness import eventually
from tests.controllers.test_daemonset import NS, Env, add_ds, add_node, pods, wait_for_nodes
from tests.controllers.test_daemonset import env as env  # noqa: PLC0414 (the fixture)


async def _revisions(env: Env) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await env.client.list(env.res("controllerrevisions"), namespace=NS))["items"]
    return sorted(items, key=lambda r: r["revision"])


async def _set_image(env: Env, image: str) -> dict[str, Any]:
    ds = await env.client.get(env.res("daemonsets"), "agent", namespace=NS)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
    updated: dict[str, Any] = await env.client.update(env.res("daemonsets"), ds, namespace=NS)
    return updated


async def test_construct_history_snapshots_each_template(env: Env) -> None:
    """TestConstructHistory / snapshot: revision 1 for the first template, named ``<ds>-<hash>``, owned by the
    set, data = getPatch; pods carry the revision's hash; a new template is revision 2; going back to the first
    template moves its revision to 3 (no new revision)."""
    await add_node(env, "n1")
    ds = await add_ds(env, updateStrategy={"type": "OnDelete"})
    await wait_for_nodes(env, {"n1"})
    first_hash = compute_hash(ds["spec"]["template"], None)
    revisions = await eventually(lambda: _revisions(env), what="a revision")
    assert [(r["metadata"]["name"], r["revision"]) for r in revisions] == [(f"agent-{first_hash}", 1)]
    first = revisions[0]
    assert first["metadata"]["labels"] == {"app": "agent", HASH_LABEL: first_hash}
    assert first["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    assert first["data"] == get_patch(ds)
    assert first["data"]["spec"]["template"]["$patch"] == "replace"
    assert match(ds, first)
    assert (await pods(env))[0]["metadata"]["labels"][HASH_LABEL] == first_hash

    ds2 = await _set_image(env, "agent:2")

    async def two() -> bool:
        return [r["revision"] for r in await _revisions(env)] == [1, 2]

    await eventually(two, what="revision 2")
    assert (await _revisions(env))[1]["metadata"]["labels"][HASH_LABEL] == compute_hash(ds2["spec"]["template"], None)

    await _set_image(env, "agent:1")

    async def rolled_back() -> bool:
        revs = await _revisions(env)
        return [(r["metadata"]["name"], r["revision"]) for r in revs][-1] == (f"agent-{first_hash}", 3)

    await eventually(rolled_back, what="the first revision moved to 3")
    assert len(await _revisions(env)) == 2


async def test_cleanup_history_keeps_the_limit_and_live_hashes(env: Env) -> None:
    """TestCleanupHistory: with revisionHistoryLimit 1, old revisions beyond one are deleted oldest first,
    never one a pod still uses (OnDelete keeps the first pod on revision 1), which still counts as kept."""
    await add_node(env, "n1")
    await add_ds(env, updateStrategy={"type": "OnDelete"}, revisionHistoryLimit=1)
    await wait_for_nodes(env, {"n1"})
    for image in ("agent:2", "agent:3", "agent:4"):
        await _set_image(env, image)
        await asyncio.sleep(0.05)

    async def pruned() -> list[int] | None:
        numbers = [r["revision"] for r in await _revisions(env)]
        return numbers if numbers == [1, 4] else None

    # Three old revisions, limit 1: two must go, oldest first; 1 is live (the pod uses it) and is skipped, so
    # 2 and 3 go and the live one stands in for the limit (upstream counts it among the kept); 4 is current.
    assert await eventually(pruned, what="history pruned to the limit") == [1, 4]


async def test_orphan_revision_is_adopted_and_reused(env: Env) -> None:
    """controlledHistories / ClaimControllerRevisions: a revision that lost its owner reference (an orphan
    matching the selector) is adopted again, and since its data matches the template it stays the current
    revision: no second one is created."""
    await add_node(env, "n1")
    ds = await add_ds(env, updateStrategy={"type": "OnDelete"})
    await wait_for_nodes(env, {"n1"})
    revision = (await eventually(lambda: _revisions(env), what="a revision"))[0]
    revision["metadata"]["ownerReferences"] = []
    await env.client.update(env.res("controllerrevisions"), revision, namespace=NS)

    async def adopted() -> dict[str, Any] | None:
        revs = await _revisions(env)
        refs = revs[0]["metadata"].get("ownerReferences") if len(revs) == 1 else None
        return revs[0] if refs else None

    again = await eventually(adopted, what="the orphan adopted")
    assert again is not None
    assert again["metadata"]["name"] == revision["metadata"]["name"]
    assert again["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    assert again["revision"] == 1
