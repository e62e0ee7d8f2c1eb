"""Microbenchmark: what the Node authorizer costs per decision, and why its graph is maintained incrementally.

Over an in-process registry with P pods on N nodes (each pod with a secret, a configmap and a PVC): ``build``
(the first decision, which builds the graph from the caches; ms), ``decide_idle`` (a graph decision with no write
since the last one: a refresh that finds every cache unchanged, plus the lookup), ``decide_after_write`` (a
decision right after one pod status write: the refresh applies that one event), ``rebuild`` (what the same
decision would cost if the graph were rebuilt from the caches whenever a revision moved, the alternative the
incremental design avoids; ms), ``static_rule`` (a decision from the static node rules, no graph). Prints one
JSON object per line: ``{"bench": "node_authz", "metric": ..., "value": ..., "unit": ..., "quick", "pods"}``.
Run: ``.venv/bin/python bench/node_authz_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from kubeplane.apiserver.auth.authorizer import Attributes, Decision
from kubeplane.apiserver.auth.node import NodeAuthorizer
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.local import LocalClient


async def main(quick: bool) -> None:
    client = await LocalClient.in_memory()
    pods_info = client.resource("pods")
    nodes, per_node = (10, 20) if quick else (100, 50)
    for n in range(nodes):
        for i in range(per_node):
            name = f"p{n}-{i}"
            pod = {
                "metadata": {"name": name},
                "spec": {
                    "nodeName": f"node{n}",
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "env": [
                                {"name": "E", "valueFrom": {"configMapKeyRef": {"name": f"cm-{name}", "key": "k"}}}
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "s", "secret": {"secretName": f"s-{name}"}},
                        {"name": "v", "persistentVolumeClaim": {"claimName": f"pvc-{name}"}},
                    ],
                },
            }
            await client.create(pods_info, pod, namespace="default")
    pods = nodes * per_node
    authorizer = NodeAuthorizer(client.registry)
    user = UserInfo("system:node:node0", groups=("system:nodes",))
    secret = Attributes(user=user, verb="get", namespace="default", resource="secrets", name="s-p0-0")
    rule = Attributes(user=user, verb="create", namespace="default", resource="events")
    n = 200 if quick else 2000

    def report(metric: str, value: float, unit: str) -> None:
        print(
            json.dumps(
                {
                    "bench": "node_authz",
                    "metric": metric,
                    "value": round(value, 2),
                    "unit": unit,
                    "quick": quick,
                    "pods": pods,
                }
            )
        )

    start = time.perf_counter()
    assert authorizer.authorize(secret)[0] is Decision.ALLOW
    report("build", (time.perf_counter() - start) * 1e3, "ms")

    start = time.perf_counter()
    for _ in range(n):
        authorizer.authorize(secret)
    report("decide_idle", (time.perf_counter() - start) / n * 1e6, "us/op")

    target = await client.get(pods_info, "p0-1", namespace="default")
    spent = 0.0
    for i in range(n):
        target.setdefault("status", {})["message"] = f"m{i}"
        target = await client.update(pods_info, target, namespace="default", subresource="status")
        start = time.perf_counter()
        authorizer.authorize(secret)
        spent += time.perf_counter() - start
    report("decide_after_write", spent / n * 1e6, "us/op")

    rounds = 5 if quick else 20
    start = time.perf_counter()
    for _ in range(rounds):
        authorizer.graph._applied.clear()  # forget what was applied: the next refresh rebuilds every kind
        authorizer.authorize(secret)
    report("rebuild", (time.perf_counter() - start) / rounds * 1e3, "ms")

    start = time.perf_counter()
    for _ in range(n):
        authorizer.authorize(rule)
    report("static_rule", (time.perf_counter() - start) / n * 1e6, "us/op")
    await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer pods and iterations")
    asyncio.run(main(parser.parse_args().quick))
