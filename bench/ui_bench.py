"""The web UI at scale (issue 24): a 5,000-node / 50,000-pod cluster (memory store, loaded in-process through the
registry by ``bench/ui_cluster.py``) opened in headless Chromium (Debian's ``/usr/bin/chromium`` via Playwright).

Figures (one JSON line each, ``{"bench": "ui", "metric", "value", "unit", "quick", "nodes", "pods"}``):

* ``load_cluster_s``: seconds to create the objects through the registry (setup, not the UI);
* ``cluster_view_ready_ms``: from navigation start until the cluster view shows every node and pod (the summary
  says "N of N nodes · M pods") and the visible tiles are painted, measured in the page (``performance.now()``);
* ``pod_view_ready_ms``: from the click on a Pending pod until its scheduling cycle table is shown (the server
  runs the whole cycle, preemption dry run and what-if on the cluster);
* ``bound_pod_view_ready_ms``: the same for a Running pod (no preemption, no what-if);
* ``scroll_frame_ms``: mean wall time per scroll step (scrollTop moved by a screen, then two animation frames:
  at least two frame intervals however cheap the render);
* ``scroll_main_thread_ms``: the main thread's script + style + layout time per scroll step (CDP metrics): what
  re-rendering the visible tiles costs;
* ``js_heap_mb``: the page's JS heap after loading (CDP ``Performance.getMetrics`` ``JSHeapUsedSize``);
* ``dom_nodes``: elements in the document with the cluster view shown (bounded: only visible tiles exist).

Run: ``PYTHONPATH=src .venv/bin/python bench/ui_bench.py [--quick]`` (--quick: 500 nodes / 5,000 pods).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from ui_cluster import big_cluster

SCROLL_STEPS = 20


def chromium() -> str:
    found = shutil.which(os.environ.get("KUBEPLANE_CHROMIUM", "") or "chromium") or "/usr/bin/chromium"
    if not Path(found).exists():
        raise SystemExit("headless chromium is missing: `make chromium` installs Debian's package")
    return found


def login(browser: Any, address: str, token: str) -> Any:
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(600_000)
    page.goto(f"{address}/ui/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/ui/")
    return page


def ready_condition(nodes: int, pods: int) -> str:
    return (
        "() => { const s = document.querySelector('#cluster-summary');"
        f" return !!s && s.textContent.startsWith('{nodes} of {nodes} nodes · {pods} pods')"
        " && document.querySelectorAll('#node-grid .tile').length > 0; }"
    )


def measure(nodes: int, pods: int, quick: bool) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    out: list[dict[str, Any]] = []

    def figure(metric: str, value: float, unit: str) -> None:
        out.append(
            {"bench": "ui", "metric": metric, "value": round(value, 2), "unit": unit, "quick": quick}
            | {"nodes": nodes, "pods": pods}
        )

    with tempfile.TemporaryDirectory() as tmp, big_cluster(Path(tmp), nodes, pods) as (address, token, loaded):
        figure("load_cluster_s", loaded, "s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), headless=True, args=["--no-sandbox"])
            page = login(browser, address, token)
            page.wait_for_function(ready_condition(nodes, pods), polling="raf")
            # a fresh navigation, cookies set: what a user sees when opening the UI
            page.goto(f"{address}/ui/#/cluster")
            page.wait_for_function(ready_condition(nodes, pods), polling="raf")
            figure("cluster_view_ready_ms", page.evaluate("() => performance.now()"), "ms")
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            figure("js_heap_mb", metrics["JSHeapUsedSize"] / 2**20, "MB")
            figure("dom_nodes", page.evaluate("() => document.getElementsByTagName('*').length"), "elements")
            busy = ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
            before = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            per_step = page.evaluate(
                """async (steps) => {
                  const grid = document.querySelector('#node-grid');
                  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
                  const start = performance.now();
                  for (let i = 1; i <= steps; i++) {
                    grid.scrollTop = i * grid.clientHeight; await frame(); await frame();
                  }
                  return (performance.now() - start) / steps;
                }""",
                SCROLL_STEPS,
            )
            figure("scroll_frame_ms", per_step, "ms")
            after = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            spent = sum(after[k] - before[k] for k in busy)
            figure("scroll_main_thread_ms", max(spent * 1000 / SCROLL_STEPS, 0.01), "ms")
            for metric, via_node, selector in (
                ("pod_view_ready_ms", False, "#pending-pods li[data-pod] a"),
                ("bound_pod_view_ready_ms", True, "#node-pods a"),
            ):
                page.goto(f"{address}/ui/#/cluster")
                page.wait_for_function(ready_condition(nodes, pods), polling="raf")
                if via_node:
                    page.evaluate("() => { window.location.hash = '#/node/node-00001'; }")
                page.wait_for_selector(selector)
                start = time.perf_counter()
                page.click(selector)
                page.wait_for_selector("#cycle-table, #pod-cycle .message.error")
                figure(metric, (time.perf_counter() - start) * 1000, "ms")
            browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 nodes / 5,000 pods")
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--pods", type=int, default=0)
    args = parser.parse_args()
    nodes = args.nodes or (500 if args.quick else 5000)
    pods = args.pods or (5000 if args.quick else 50000)
    for line in measure(nodes, pods, args.quick):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
