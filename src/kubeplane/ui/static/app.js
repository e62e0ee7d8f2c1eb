// The UI's shell: the shared informers (nodes, pods, FailedScheduling events), started once, and a hash router
// (#/cluster, #/node/NAME, #/pod/NS/NAME, #/objects, #/scheduler) that mounts one view at a time. A view is
// { mount(container, params) -> unmount() }.
import { Informer, uiCall } from "./api.js";
import { podRequests } from "./resources.js";
import * as cluster from "./cluster.js";
import * as node from "./node.js";
import * as pod from "./pod.js";
import * as objects from "./objects.js";
import * as scheduler from "./scheduler.js";
import * as runs from "./runs.js";
import * as noapi from "./noapi.js";

function trimNode(n) {
  const spec = n.spec || {};
  const status = n.status || {};
  return {
    metadata: { name: n.metadata.name, labels: n.metadata.labels || {}, resourceVersion: n.metadata.resourceVersion },
    unschedulable: !!spec.unschedulable,
    taints: spec.taints || [],
    allocatable: status.allocatable || {},
    conditions: (status.conditions || []).map((c) => ({ type: c.type, status: c.status, reason: c.reason || "" })),
  };
}

function trimPod(p) {
  const spec = p.spec || {};
  const status = p.status || {};
  const scheduled = (status.conditions || []).find((c) => c.type === "PodScheduled");
  return {
    metadata: {
      name: p.metadata.name, namespace: p.metadata.namespace, labels: p.metadata.labels || {},
      uid: p.metadata.uid, deletionTimestamp: p.metadata.deletionTimestamp,
    },
    nodeName: spec.nodeName || "",
    nominatedNodeName: status.nominatedNodeName || "",
    phase: status.phase || "Pending",
    requests: podRequests(spec),
    unschedulable: !!(scheduled && scheduled.status === "False"),
    schedulerName: spec.schedulerName || "default-scheduler",
  };
}

function trimEvent(e) {
  const io = e.involvedObject || {};
  return {
    metadata: { name: e.metadata.name, namespace: e.metadata.namespace },
    pod: `${io.namespace || e.metadata.namespace}/${io.name}`,
    message: e.message || "",
    time: e.lastTimestamp || (e.series && e.series.lastObservedTime) || e.eventTime || e.metadata.creationTimestamp || "",
  };
}

export const store = {
  nodes: new Informer("/api/v1/nodes", { trim: trimNode }),
  pods: new Informer("/api/v1/pods", { trim: trimPod }),
  failed: new Informer("/api/v1/events", { trim: trimEvent, fieldSelector: "reason=FailedScheduling" }),
  // The namespace the pods and events are listed in ("": all). A ServiceAccount starts in its own namespace,
  // which is where its RoleBindings usually let it read; anyone may re-scope from the cluster view.
  namespace: "",
  scope(namespace) {
    const base = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}` : "/api/v1";
    this.namespace = namespace;
    this.pods.setPath(`${base}/pods`);
    this.failed.setPath(`${base}/events`);
  },
};
const informers = [store.nodes, store.pods, store.failed];

async function whoami() {
  try {
    const response = await uiCall("GET", "/ui/whoami");
    return response.ok ? await response.json() : {};
  } catch { return {}; }
}
const me = await whoami();
// `kubeplane ui --runs DIR` without --kubeconfig: no Kubernetes API (noapi.js says so in place of its views).
const hasAPI = me.api !== false;
const serviceAccount = /^system:serviceaccount:([^:]+):/.exec(me.user || "");
if (serviceAccount) store.scope(serviceAccount[1]);
if (hasAPI) for (const informer of informers) informer.start();
else for (const a of document.querySelectorAll("nav a")) a.hidden = !noapi.OFFLINE.test(a.getAttribute("href"));

const routes = [
  [/^#\/node\/([^/]+)$/, node, (m) => ({ name: decodeURIComponent(m[1]) })],
  [/^#\/pod\/([^/]+)\/([^/]+)$/, pod, (m) => ({ namespace: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]) })],
  [/^#\/scheduler$/, scheduler, () => ({})],
  [/^#\/runs$/, runs, () => ({})],
  [/^#\/runs\/(.+)$/, runs, (m) => ({ id: decodeURIComponent(m[1]) })],
  [/^#\/objects(?:\?(.*))?$/, objects, (m) => Object.fromEntries(new URLSearchParams(m[1] || ""))],
  [/^(?:#\/cluster(?:\?(.*))?)?$/, cluster, (m) => Object.fromEntries(new URLSearchParams(m[1] || ""))],
];

let unmount = null;
function route() {
  // without an API the first view is the simulation runs' (when that view is there), else noapi.js's note
  const home = !hasAPI && routes.some(([pattern]) => pattern.test("#/runs"));
  const hash = window.location.hash || (home ? "#/runs" : "#/cluster");
  const container = document.getElementById("view");
  if (unmount) { unmount(); unmount = null; }
  container.replaceChildren();
  for (const [pattern, view, params] of routes) {
    const m = pattern.exec(hash);
    if (m) {
      const shown = hasAPI || noapi.OFFLINE.test(hash) ? view : noapi;
      unmount = shown.mount(container, params(m), store) || null;
      for (const a of document.querySelectorAll("nav a")) {
        a.toggleAttribute("aria-current", hash.startsWith(a.getAttribute("href")));
      }
      return;
    }
  }
  container.textContent = "No such view.";
}
runs.probe();
window.addEventListener("hashchange", route);
route();
