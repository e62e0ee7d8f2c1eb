"""What the Job and TTL-after-finished controller tests share: a Job controller over the in-memory API server
on a fake clock, Job builders (the selector set by hand, ``manualSelector: true``, since defaulting is the API's
job), and the kubelet's side written by hand (a pod finishing with a phase and container exit codes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.client.interface import Obj
from kubeplane.controllers.job import JobController
from kubeplane.controllers.job_util import JOB_TRACKING_FINALIZER
from tests.controllers import harness

NS = "default"


def job_obj(name: str = "pi", *, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    """A Job with a hand-set selector (``manualSelector``) and a one-container template, restartPolicy Never."""
    labels = labels or {"job-name": name}
    template_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    template_spec.update(spec.pop("template_spec", {}))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": template_spec},
            **spec,
        },
    }


def terminated(exit_code: int, at: str, name: str = "c") -> Obj:
    return {"name": name, "state": {"terminated": {"exitCode": exit_code, "finishedAt": at}}}


@dataclass
class JobEnv(harness.Env[JobController]):
    async def create_job(self, body: Obj) -> Obj:
        return await self.client.create(self.res("jobs"), body, namespace=NS)

    async def job(self, name: str = "pi") -> Obj:
        return await self.client.get(self.res("jobs"), name, namespace=NS)

    async def pods(self, *, active_only: bool = False) -> list[Obj]:
        items: list[Obj] = (await self.client.list(self.res("pods"), namespace=NS))["items"]
        if active_only:
            items = [
                p
                for p in items
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and not p["metadata"].get("deletionTimestamp")
            ]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    async def finish(
        self,
        pod: Obj | str,
        phase: str = "Succeeded",
        *,
        exit_code: int | None = None,
        conditions: list[Obj] | None = None,
    ) -> None:
        """What a kubelet writes when the pod's container ends: the phase and a terminated container status."""
        name = pod if isinstance(pod, str) else pod["metadata"]["name"]
        code = (0 if phase == "Succeeded" else 1) if exit_code is None else exit_code
        at = apimeta.format_time(self.clock.now())
        status: Obj = {"phase": phase, "containerStatuses": [terminated(code, at)]}
        if conditions is not None:
            status["conditions"] = conditions
        await self.client.patch(self.res("pods"), name, {"status": status}, namespace=NS, subresource="status")

    async def until(self, check: Callable[[], Awaitable[bool]], what: str, *, step: float = 1.0) -> None:
        """Poll, moving the fake clock ``step`` s per miss (pod events batch Job syncs by 1 s, as upstream)."""
        await self.advance_until(check, what, step=step, tries=300)

    async def until_pods(self, n: int, *, active_only: bool = True) -> list[Obj]:
        async def check() -> bool:
            return len(await self.pods(active_only=active_only)) == n

        await self.until(check, f"{n} pods")
        return await self.pods(active_only=active_only)

    async def until_condition(self, cond_type: str, name: str = "pi") -> Obj:
        found: Obj = {}

        async def check() -> bool:
            nonlocal found
            job = await self.job(name)
            for cond in (job.get("status") or {}).get("conditions") or ():
                if cond["type"] == cond_type and cond["status"] == "True":
                    found = job
                    return True
            return False

        await self.until(check, f"condition {cond_type}")
        return found

    async def events(self, reason: str) -> list[str]:
        await self.ctx.recorder("job-controller").flush()
        await asyncio.sleep(0)
        items = (await self.client.list(self.res("events"), namespace=NS))["items"]
        return sorted(e["message"] for e in items if e["reason"] == reason)


def condition(job: Obj, cond_type: str) -> Obj | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond["type"] == cond_type:
            return dict(cond)
    return None


def running_job_controller(**kw: Any) -> Any:
    return harness.running(JobController, env_cls=JobEnv, **kw)


async def job_env() -> AsyncIterator[JobEnv]:
    async with running_job_controller() as env:
        yield env


__all__ = ["JOB_TRACKING_FINALIZER", "NS", "JobEnv", "condition", "job_env", "job_obj", "running_job_controller"]
