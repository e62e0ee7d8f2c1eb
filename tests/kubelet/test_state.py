"""The fleet's shared state: the pod task registry (upstream's pod workers keep one goroutine per pod UID)."""

from __future__ import annotations

import asyncio

from kubeplane.kubelet.state import PodTasks


async def _forever(log: list[str], name: str) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        log.append(f"{name} cancelled")
        raise


async def test_spawning_under_a_key_cancels_the_task_it_replaces() -> None:
    tasks, log = PodTasks(), list[str]()
    tasks.spawn("uid", _forever(log, "start"))
    await asyncio.sleep(0)
    tasks.spawn("uid", _forever(log, "terminate"))  # a deletion replaces the start-up task
    await asyncio.sleep(0)
    assert log == ["start cancelled"]
    assert len(list(tasks.all())) == 1
    tasks.cancel("uid")
    await asyncio.sleep(0)
    assert log == ["start cancelled", "terminate cancelled"]
    assert list(tasks.all()) == []


async def test_a_finished_task_removes_itself_only_if_still_registered() -> None:
    tasks, log = PodTasks(), list[str]()
    done = asyncio.Event()

    async def quick() -> None:
        await done.wait()

    tasks.spawn("old", quick())
    old = tasks.pop("old")
    assert old is not None
    tasks.adopt("new", old)  # a re-created mirror pod takes over the running task under its new UID
    tasks.spawn("old", _forever(log, "other"))
    other = tasks.pop("old")
    assert other is not None
    tasks.adopt("old", other)
    done.set()
    await old
    await asyncio.sleep(0)
    assert tasks.pop("old") is other  # the finished task did not remove the live one registered under its key
    other.cancel()
    await asyncio.sleep(0)
    assert log == ["other cancelled"]
