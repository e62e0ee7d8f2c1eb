#!/usr/bin/env python3
"""Replays kube-scheduler's plugin test tables (upstream/*.json, see FORMAT.md) through `kubeplane explain`.

Usage: run.py KUBEPLANE_CMD THRESHOLD PLUGIN[,PLUGIN...] CASEFILE...
  e.g. python tests/scheduler/conformance/run.py .venv/bin/kubeplane 0.99 TaintToleration,NodeAffinity \
       tests/scheduler/conformance/upstream/*.json
Each case becomes three files (cluster list, pod, a KubeSchedulerConfiguration enabling only the plugin under
test at the extension points the case exercises) and one `explain -o json` call. Prints a summary; the last line
is the figure. Exit 0 when passed/total >= THRESHOLD.

The shared runner, typed and lint-clean; its behaviour is the original's (stdlib only, runnable as a script).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

POINTS: dict[str, dict[str, list[str]]] = {  # extension points each in-tree plugin implements (upstream)
    "NodeResourcesFit": {"filter": ["preFilter", "filter"], "score": ["preScore", "score"]},
    "NodeResourcesBalancedAllocation": {"score": ["preScore", "score"]},
    "NodePorts": {"filter": ["preFilter", "filter"]},
    "NodeName": {"filter": ["filter"]},
    "NodeUnschedulable": {"filter": ["filter"]},
    "TaintToleration": {"filter": ["filter"], "score": ["preScore", "score"]},
    "NodeAffinity": {"filter": ["preFilter", "filter"], "score": ["preScore", "score"]},
    "ImageLocality": {"score": ["score"]},
    "InterPodAffinity": {"filter": ["preFilter", "filter"], "score": ["preScore", "score"]},
    "PodTopologySpread": {"filter": ["preFilter", "filter"], "score": ["preScore", "score"]},
    "VolumeRestrictions": {"filter": ["preFilter", "filter"]},
    "VolumeZone": {"filter": ["preFilter", "filter"]},
    "NodeVolumeLimits": {"filter": ["preFilter", "filter"]},
    "VolumeBinding": {"filter": ["preFilter", "filter"], "score": ["preFilter", "filter", "preScore", "score"]},
    "DynamicResources": {
        "filter": ["preEnqueue", "preFilter", "filter"],
        "score": ["preEnqueue", "preFilter", "filter", "preScore", "score"],
        "schedule": ["preEnqueue", "preFilter", "filter", "postFilter", "preScore", "score", "reserve", "preBind"],
    },
}


def config_for(case: dict[str, Any]) -> dict[str, Any]:
    plugin = case["plugin"]
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}]}
    }
    for point in POINTS[plugin][case["kind"]]:
        entry: dict[str, Any] = {"name": plugin}
        if point == "score":
            entry["weight"] = 1
        plugins[point] = {"enabled": [entry]}
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if case.get("pluginArgs"):
        profile["pluginConfig"] = [{"name": plugin, "args": case["pluginArgs"]}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


def _filter_matches(case: dict[str, Any], out: dict[str, Any]) -> tuple[bool, str]:
    nodes = out.get("nodes", {})
    plugin = case["plugin"]
    for node, want in case["expect"]["filter"].items():
        got = (nodes.get(node, {}).get("filters", {}) or {}).get(plugin)
        if got is None:  # a PreFilter rejection may be reported without per-node filter results
            got = (out.get("preFilter", {}) or {}).get(plugin) or {"code": "Success"}
        code = "Success" if got.get("code") == "Skip" else got.get("code")  # a skipped plugin passes the node
        if code != want["code"]:
            return False, f"{node}: code {got.get('code')} != {want['code']} ({got.get('reasons')})"
        if "reasons" in want:
            have = list(got.get("reasons", []))
            if case.get("statusCheck") == "message-contains":  # upstream asserts a substring only
                if not all(any(w in h for h in have) for w in want["reasons"]):
                    return False, f"{node}: reasons {have} do not contain {want['reasons']}"
            elif have != want["reasons"]:
                return False, f"{node}: reasons {have} != {want['reasons']}"
    return True, ""


def explain_args(case: dict[str, Any], tmp: str) -> list[str]:
    """Write the case's three files into ``tmp``; the ``kubeplane explain`` arguments that evaluate it."""
    pod = json.loads(json.dumps(case["pod"]))
    if case["plugin"] != "NodeName":
        pod.get("spec", {}).pop("nodeName", None)
    items = list(case.get("namespaces") or []) + list(case.get("objects") or []) + case["nodes"] + case["existingPods"]
    files = {
        "cluster.json": {"apiVersion": "v1", "kind": "List", "items": items},
        "pod.json": pod,
        "config.json": config_for(case),
    }
    for name, obj in files.items():
        Path(tmp, name).write_text(json.dumps(obj))
    return [
        *("explain", "--cluster", f"{tmp}/cluster.json", "--pod", f"{tmp}/pod.json"),
        *("--config", f"{tmp}/config.json", "-o", "json"),
    ]


def run_case(cmd: list[str], case: dict[str, Any], tmp: str) -> tuple[bool, str]:
    p = subprocess.run(
        [*cmd, *explain_args(case, tmp)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    try:
        out: dict[str, Any] = json.loads(p.stdout)
    except ValueError:
        return False, f"no JSON (rc={p.returncode}): {(p.stderr or p.stdout)[-300:]}"
    return check(case, out)


def check(case: dict[str, Any], out: dict[str, Any]) -> tuple[bool, str]:
    """Whether explain's JSON answer ``out`` is what the upstream case expects, and why not."""
    if case["kind"] == "filter":
        return _filter_matches(case, out)
    if case["kind"] == "schedule":
        sel = out.get("selected")
        want = case["expect"].get("anyOf")
        if want is None:
            return (sel is None), f"selected {sel}, want unschedulable"
        return (sel in want), f"selected {sel}, want one of {want}"
    nodes = out.get("nodes", {})
    for node, want_score in case["expect"]["scores"].items():
        got = ((nodes.get(node, {}).get("scores", {}) or {}).get(case["plugin"]) or {}).get("normalized")
        rejected = ((nodes.get(node, {}).get("filters", {}) or {}).get(case["plugin"]) or {}).get("code")
        if got is None and want_score == 0 and rejected not in (None, "Success", "Skip"):
            continue  # upstream scores a node its Filter rejected as 0; a full cycle never scores it
        if got != want_score:
            return False, f"{node}: score {got} != {want_score}"
    return True, ""


def main() -> None:
    cmd, threshold, plugins, files = sys.argv[1].split(), float(sys.argv[2]), set(sys.argv[3].split(",")), sys.argv[4:]
    total = passed = 0
    log_path = os.path.join(tempfile.gettempdir(), f"conformance-{sys.argv[3].replace(',', '_')[:60]}.log")
    per: dict[tuple[str, str], list[int]] = {}
    with open(log_path, "w") as log:
        for path in files:
            for case in json.loads(Path(path).read_text())["cases"]:
                if case["plugin"] not in plugins:
                    continue
                total += 1
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        ok, why = run_case(cmd, case, tmp)
                    except Exception as e:  # a crash or timeout is a failure, not a runner error
                        ok, why = False, f"{type(e).__name__}: {e}"
                k = (case["plugin"], case["kind"])
                per.setdefault(k, [0, 0])
                per[k][1] += 1
                if ok:
                    passed += 1
                    per[k][0] += 1
                else:
                    log.write(f"FAIL {case['id']} [{case['upstream_name']}]: {why}\n")
    for (pl, kind), (ok_count, n) in sorted(per.items()):
        print(f"{pl:34s} {kind:6s} {ok_count}/{n}")
    ratio = passed / total if total else 0.0
    print(f"upstream conformance {passed}/{total} = {ratio:.1%} (threshold {threshold:.0%}); failures in {log_path}")
    sys.exit(0 if total and ratio >= threshold else 1)


if __name__ == "__main__":
    main()
