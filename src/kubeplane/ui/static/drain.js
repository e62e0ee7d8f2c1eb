// `kubectl drain NODE` as the node view runs it (staging/src/k8s.io/kubectl/pkg/drain, v1.37): cordon, list the
// node's pods (fieldSelector spec.nodeName), run kubectl's pod filters in kubectl's order (skip-deleted,
// DaemonSet, mirror, local storage, unreplicated) and, when no filter reported an error, evict each remaining pod
// through the eviction API (policy/v1 Eviction on pods/NAME/eviction). A 429 (a PodDisruptionBudget refuses) is
// reported with kubectl's line and retried every 5 s, as kubectl does, until it succeeds, the drain is stopped
// or the timeout passes; a 404 means the pod is gone already. Then it waits for the evicted pods (by UID) to
// disappear and says "node/NAME drained". Filter errors evict nothing (the node stays cordoned), as kubectl.
import { el, request, APIError } from "./api.js";

export const RETRY_MS = 5000;
const MIRROR = "kubernetes.io/config.mirror";
const DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
const DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods";
const LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)";
const LOCAL_STORAGE_WARNING = "deleting Pods with local storage";
const UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)";
const UNMANAGED_WARNING = "deleting Pods that declare no controller";

const terminal = (pod) => ["Succeeded", "Failed"].includes((pod.status || {}).phase);
const controllerOf = (pod) => ((pod.metadata || {}).ownerReferences || []).find((r) => r.controller) || null;

// One pod through kubectl's filters: {delete, reason: Okay|Skip|Warning|Error, message}. `daemonSetExists(ns,
// name)` answers whether the DaemonSet of a DaemonSet-managed pod still exists (kubectl GETs it).
export async function filterPod(pod, options, daemonSetExists) {
  let status = { delete: true, reason: "Okay", message: "" };
  const filters = [
    async () => {
      const ref = controllerOf(pod);
      if (!ref || ref.kind !== "DaemonSet" || terminal(pod)) return null;
      if (!(await daemonSetExists(pod.metadata.namespace, ref.name))) {
        const message = `daemonsets.apps "${ref.name}" not found`;
        return options.force ? { delete: true, reason: "Warning", message } : { delete: false, reason: "Error", message };
      }
      if (!options.ignoreDaemonsets) return { delete: false, reason: "Error", message: DAEMONSET_FATAL };
      return { delete: false, reason: "Warning", message: DAEMONSET_WARNING };
    },
    async () => (MIRROR in ((pod.metadata || {}).annotations || {}) ? { delete: false, reason: "Skip", message: "" } : null),
    async () => {
      if (!((pod.spec || {}).volumes || []).some((v) => v.emptyDir) || terminal(pod)) return null;
      if (!options.deleteEmptydirData) return { delete: false, reason: "Error", message: LOCAL_STORAGE_FATAL };
      return { delete: true, reason: "Warning", message: LOCAL_STORAGE_WARNING };
    },
    async () => {
      if (terminal(pod) || controllerOf(pod)) return null;
      if (options.force) return { delete: true, reason: "Warning", message: UNMANAGED_WARNING };
      return { delete: false, reason: "Error", message: UNMANAGED_FATAL };
    },
  ];
  // kubectl: filters run in order; a filter that says "do not delete" ends the run, later warnings replace earlier.
  for (const f of filters) {
    const s = await f();
    if (!s) continue;
    status = s;
    if (!s.delete) break;
  }
  return status;
}

// kubectl's PodDeleteList.errors() and Warnings(): one line per message with the pods it concerns.
export function summarise(results) {
  const group = (reason) => {
    const by = new Map();
    for (const { pod, status } of results) {
      if (status.reason !== reason) continue;
      const msg = status.message || "unexpected error";
      if (!by.has(msg)) by.set(msg, []);
      by.get(msg).push(`${pod.metadata.namespace}/${pod.metadata.name}`);
    }
    return by;
  };
  const errors = [...group("Error")].map(([msg, pods]) =>
    `${msg.toLowerCase().startsWith("cannot delete") ? msg : `cannot delete ${msg}`}: ${pods.join(", ")}`);
  const warnings = [...group("Warning")].map(([msg, pods]) => `${msg}: ${pods.join(", ")}`);
  return { errors, warnings };
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  if (signal) signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

// Drain `node`. options: {force, ignoreDaemonsets, deleteEmptydirData, timeoutSeconds (0: none, as kubectl)};
// say(line, kind) reports progress ("info" | "warning" | "error"); gone(pod) -> bool tells whether an evicted pod
// (namespace, name, uid) has left the API (the view's informer). Returns true when drained.
export async function drain(node, options, { say, gone, signal }) {
  const deadline = options.timeoutSeconds > 0 ? Date.now() + options.timeoutSeconds * 1000 : Infinity;
  const nodePath = `/api/v1/nodes/${encodeURIComponent(node)}`;
  const live = await request("GET", nodePath);
  if (!(live.spec || {}).unschedulable) {
    await request("PATCH", nodePath, { body: { spec: { unschedulable: true } }, contentType: "application/strategic-merge-patch+json" });
    say(`node/${node} cordoned`, "info");
  } else say(`node/${node} already cordoned`, "info");
  const list = await request("GET", "/api/v1/pods", { query: { fieldSelector: `spec.nodeName=${node}` } });
  const dsCache = new Map();
  const daemonSetExists = async (ns, name) => {
    const k = `${ns}/${name}`;
    if (!dsCache.has(k)) {
      try { await request("GET", `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/daemonsets/${encodeURIComponent(name)}`); dsCache.set(k, true); } catch (err) {
        if (err instanceof APIError && err.status === 404) dsCache.set(k, false); else throw err;
      }
    }
    return dsCache.get(k);
  };
  const results = [];
  for (const pod of list.items) results.push({ pod, status: await filterPod(pod, options, daemonSetExists) });
  const { errors, warnings } = summarise(results);
  if (errors.length) {
    say(`error: unable to drain node "${node}" due to error: ${errors.join(", ")}`, "error");
    return false;
  }
  for (const w of warnings) say(`Warning: ${w}`, "warning");
  const evict = results.filter((r) => r.status.delete).map((r) => r.pod);
  for (const pod of evict) say(`evicting pod ${pod.metadata.namespace}/${pod.metadata.name}`, "info");
  await Promise.all(evict.map(async (pod) => {
    const { namespace, name } = pod.metadata;
    for (;;) {
      if (signal && signal.aborted) throw new Error("drain stopped");
      try {
        await request("POST", `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/eviction`, {
          body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace } },
        });
        return;
      } catch (err) {
        if (err instanceof APIError && err.status === 404) return;
        if (!(err instanceof APIError) || err.status !== 429) throw err;
        if (Date.now() + RETRY_MS > deadline) throw new Error(`global timeout reached: ${options.timeoutSeconds}s`);
        say(`error when evicting pods/"${name}" -n "${namespace}" (will retry after 5s): ${err.message}`, "error");
        await sleep(RETRY_MS, signal);
      }
    }
  }));
  for (const pod of evict) {
    while (!gone(pod)) {
      if (signal && signal.aborted) throw new Error("drain stopped");
      if (Date.now() > deadline) throw new Error(`global timeout reached: ${options.timeoutSeconds}s`);
      await sleep(200, signal);
    }
    say(`pod/${pod.metadata.name} evicted`, "info");
  }
  say(`node/${node} drained`, "info");
  return true;
}

// The node view's drain panel: kubectl's flags as checkboxes, a Drain button, and kubectl's output lines (a live
// log region). Returns [element, stop] (stop aborts a running drain when the view goes away).
export function drainPanel(node, store) {
  const box = (id, flag) => el("label", { class: "check" }, el("input", { type: "checkbox", id }), ` ${flag}`);
  const timeout = el("input", { id: "drain-timeout", type: "number", min: "0", value: "0", size: "5" });
  const output = el("ol", { id: "drain-output", class: "drain-output", role: "log", "aria-live": "polite", "aria-label": "drain output" });
  const button = el("button", { type: "submit", id: "drain" }, "Drain");
  let abort = null;
  const form = el("form", { class: "drain", id: "drain-form", "aria-label": "drain" },
    el("fieldset", {}, el("legend", {}, "Drain (kubectl drain)"),
      box("drain-ignore-daemonsets", "--ignore-daemonsets"),
      box("drain-delete-emptydir-data", "--delete-emptydir-data"),
      box("drain-force", "--force"),
      el("label", { for: "drain-timeout" }, " --timeout (s, 0: none) "), timeout, " ", button),
    output);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (abort) return;
    abort = new AbortController();
    button.disabled = true;
    output.replaceChildren();
    const say = (line, kind) => output.append(el("li", { class: kind }, line));
    const options = {
      force: form.querySelector("#drain-force").checked,
      ignoreDaemonsets: form.querySelector("#drain-ignore-daemonsets").checked,
      deleteEmptydirData: form.querySelector("#drain-delete-emptydir-data").checked,
      timeoutSeconds: Number(timeout.value) || 0,
    };
    const gone = (pod) => {
      const p = store.pods.items.get(`${pod.metadata.namespace}/${pod.metadata.name}`);
      return !p || p.metadata.uid !== pod.metadata.uid;
    };
    try { await drain(node, options, { say, gone, signal: abort.signal }); } catch (err) { say(`error: ${err.message}`, "error"); } finally {
      abort = null;
      button.disabled = false;
    }
  });
  return [form, () => { if (abort) abort.abort(); }];
}
