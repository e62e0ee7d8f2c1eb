"""Regenerate the screenshots of docs/ui.md: each view of the web UI on the seeds' cluster, in headless Chromium.

Starts ``kubeplane up`` (its own temporary data dir, port 0 on 127.0.0.1, TLS), applies the seeds'
``myapp-deploy.yaml`` (three Running pods) and ``myapp1.yaml`` (nodeSelector kgc=a: Pending), then logs in with the
cluster's token and saves ``docs/ui/{login,cluster,pod,node,objects,delete,scheduler,drain}.png``. The cluster is
stopped by its PID.

    PYTHONPATH=src .venv/bin/python tools/ui_screenshots.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SEEDS = ROOT / "examples" / "seeds"


HELD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: held}
spec:
  schedulingGates: [{name: example.com/hold}]
  containers: [{name: c, image: soscscs/myapp:v1, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""
MOST_ALLOCATED = (ROOT / "examples" / "sim" / "most-allocated.yaml").read_text(encoding="utf-8")
"""The bin-packing example's configuration (NodeResourcesFit MostAllocated)."""


def _kubectl(data_dir: Path, *args: str, stdin: str | None = None) -> str:
    command = [str(BIN / "kubectl"), "--kubeconfig", str(data_dir / "kubeconfig"), "--cache-dir", str(data_dir / "c")]
    done = subprocess.run([*command, *args], input=stdin, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def _token(kubeconfig: Path) -> tuple[str, str]:
    from kubeplane.client.kubeconfig import load_kubeconfig

    config = load_kubeconfig(kubeconfig)
    assert config.token is not None
    return config.server, config.token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which(os.environ.get("KUBEPLANE_CHROMIUM", "") or "chromium") or "/usr/bin/chromium"
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        log = open(Path(tmp) / "up.log", "wb")  # noqa: SIM115 - kept for the process
        process = subprocess.Popen(
            [str(BIN / "kubeplane"), "up", "--data-dir", str(data_dir), "--port", "0", "--pull-delay", "0.1"],
            stdout=log,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + 90
            while not (data_dir / "kubeconfig").exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit((Path(tmp) / "up.log").read_text())
                time.sleep(0.1)
            address, token = _token(data_dir / "kubeconfig")
            _kubectl(data_dir, "apply", "-f", str(SEEDS / "myapp-deploy.yaml"))
            _kubectl(data_dir, "apply", "-f", str(SEEDS / "myapp1.yaml"))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 860})
                page = context.new_page()
                page.set_default_timeout(45_000)
                page.goto(f"{address}/ui/")
                page.wait_for_url("**/ui/login")
                page.screenshot(path=str(args.out / "login.png"))
                page.fill("#token", token)
                page.click("button[type=submit]")
                page.wait_for_selector("#pending-pods li[data-pod^='default/myapp1-'] .reason:has-text('0/3 nodes')")
                page.wait_for_function(
                    "() => [...document.querySelectorAll('#node-grid .tile')].length === 3 &&"
                    " document.querySelector('#cluster-summary').textContent.includes('6 pods')"
                )
                page.screenshot(path=str(args.out / "cluster.png"))
                pod = page.get_attribute("#pending-pods li[data-pod^='default/myapp1-']", "data-pod") or ""
                page.goto(f"{address}/ui/#/pod/{pod}")
                page.wait_for_selector("#cycle-table")
                page.wait_for_selector("#pod-events li.warning")
                page.screenshot(path=str(args.out / "pod.png"), full_page=True)
                page.goto(f"{address}/ui/#/node/node01")
                page.wait_for_selector("#node-pods li")
                page.screenshot(path=str(args.out / "node.png"), full_page=True)
                page.goto(f"{address}/ui/#/objects?path=/apis/apps/v1/namespaces/default/deployments/myapp1")
                page.wait_for_function("() => document.querySelector('#yaml').value.includes('myapp1')")
                text = page.input_value("#yaml")
                page.fill("#yaml", text.replace("spec:\n", "spec:\n  replica: 3\n", 1))
                page.click("#apply")
                page.wait_for_selector("#object-message.error")
                page.screenshot(path=str(args.out / "objects.png"))
                page.click("#delete")
                page.wait_for_selector("dialog#confirm[open]")
                page.screenshot(path=str(args.out / "delete.png"))
                page.click("#confirm-no")
                _kubectl(data_dir, "apply", "-f", "-", stdin=HELD_POD)
                page.goto(f"{address}/ui/#/scheduler")
                page.wait_for_selector("section.profile")
                page.fill("#sched-yaml", MOST_ALLOCATED)
                page.click("#try")
                page.wait_for_selector("tr[data-pod='default/held'] td.tried")
                page.screenshot(path=str(args.out / "scheduler.png"), full_page=True)
                page.goto(f"{address}/ui/#/node/node02")
                page.check("#drain-ignore-daemonsets")
                page.click("#drain")
                page.wait_for_selector("#drain-output li:text-is('node/node02 drained')")
                page.screenshot(path=str(args.out / "drain.png"), full_page=True)
                _kubectl(data_dir, "uncordon", "node02")
                browser.close()
        finally:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            log.close()
    for name in ("login", "cluster", "pod", "node", "objects", "delete", "scheduler", "drain"):
        print(args.out / f"{name}.png")


if __name__ == "__main__":
    main()
