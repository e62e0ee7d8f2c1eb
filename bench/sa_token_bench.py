"""Microbenchmark: what a ServiceAccount token costs the API server, per request and per TokenRequest.

Over an in-process registry with one ServiceAccount: ``authenticate`` (the bearer-token check every request with
a ServiceAccount token pays: RS256 verify, claim checks, the account looked up in the watch cache, no result
cache), ``sign`` (the JWT of one TokenRequest) and ``tokenrequest`` (the whole TokenRequest handler). Prints one
JSON object per line: ``{"bench": "sa_token", "metric": "<case>", "value": <us per op>, "unit": "us/op",
"quick"}``. Run: ``.venv/bin/python bench/sa_token_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from kubeplane.apiserver.tokenrequest import create_token
from kubeplane.apiserver.tokens import authenticate, issuer_of
from kubeplane.client.local import LocalClient


async def main(quick: bool) -> None:
    client = await LocalClient.in_memory()
    registry = client.registry
    sa = client.resource("serviceaccounts")
    await client.create(sa, {"metadata": {"name": "default"}}, namespace="default")
    reply = await create_token(registry, "default", "default", {"spec": {}})
    token = reply["status"]["token"]
    issuer = issuer_of(registry)
    claims = issuer.verify(token, now=registry.now())
    n = 200 if quick else 2000

    def report(metric: str, seconds: float) -> None:
        line = {"bench": "sa_token", "metric": metric, "value": round(seconds / n * 1e6, 2), "unit": "us/op"}
        print(json.dumps({**line, "quick": quick}))

    start = time.perf_counter()
    for _ in range(n):
        authenticate(registry, token)
    report("authenticate", time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(n):
        issuer.sign(claims)
    report("sign", time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(n):
        await create_token(registry, "default", "default", {"spec": {}})
    report("tokenrequest", time.perf_counter() - start)
    await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    asyncio.run(main(parser.parse_args().quick))
