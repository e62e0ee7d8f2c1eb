// The cluster view: every node as a tile (allocation bars: requests of the pods bound to it against its
// allocatable; taints, conditions, cordon), the Pending pods with their last FailedScheduling message, and
// filters by namespace, node label selector and node name. The node grid is virtualised: only the rows in
// the viewport (and one above and below) exist in the DOM, so 5,000 nodes cost what 30 do.
import { el } from "./api.js";
import { formatAmount, parseQuantity as parseQ } from "./resources.js";

const TILE_W = 300;
const TILE_H = 206;
const MAX_MARKS = 60; // pods drawn as marks on a tile; past it the tile says "+N" (the node view lists them all)
const PHASES = ["Running", "Pending", "Terminating", "Succeeded", "Failed", "Unknown"];
const GAP = 10;
const STANDARD = new Set(["cpu", "memory", "pods", "ephemeral-storage"]);

export function allocation(pods) {
  // nodeName -> { requests: {resource: amount}, pods: count, phases: {phase: count} }; terminal pods hold
  // nothing but are still counted in `phases` (they are on the node until deleted, as `kubectl get pods -o wide`).
  const byNode = new Map();
  for (const p of pods.values()) {
    if (!p.nodeName) continue;
    let a = byNode.get(p.nodeName);
    if (!a) { a = { requests: {}, pods: 0, phases: {} }; byNode.set(p.nodeName, a); }
    const phase = p.metadata.deletionTimestamp ? "Terminating" : p.phase;
    a.phases[phase] = (a.phases[phase] || 0) + 1;
    if (p.phase === "Succeeded" || p.phase === "Failed") continue;
    a.pods += 1;
    for (const [k, v] of Object.entries(p.requests)) a.requests[k] = (a.requests[k] || 0) + v;
  }
  return byNode;
}

export function lastFailures(events) {
  const out = new Map();
  for (const e of events.values()) {
    const seen = out.get(e.pod);
    if (!seen || e.time >= seen.time) out.set(e.pod, e);
  }
  return out;
}

function matchesSelector(labels, selector) {
  for (const term of selector.split(",").map((s) => s.trim()).filter(Boolean)) {
    let m;
    if ((m = /^([^!=]+)!=(.*)$/.exec(term))) { if (labels[m[1].trim()] === m[2].trim()) return false; }
    else if ((m = /^([^=]+)==?(.*)$/.exec(term))) { if (labels[m[1].trim()] !== m[2].trim()) return false; }
    else if (term.startsWith("!")) { if (term.slice(1) in labels) return false; }
    else if (!(term in labels)) return false;
  }
  return true;
}

function bar(resource, used, total) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : used > 0 ? 100 : 0;
  const label = resource === "pods" ? `${used}/${total}` : `${formatAmount(resource, used)}/${formatAmount(resource, total)}`;
  const level = pct >= 90 ? "high" : pct >= 70 ? "mid" : "low";
  const fill = el("span", { class: `bar-fill ${level}` });
  fill.style.width = `${pct.toFixed(1)}%`; // CSSOM, not a style attribute: the CSP allows no inline styles
  return el("div", { class: "bar-row" },
    el("span", { class: "bar-name" }, resource),
    el("span", { class: "bar", role: "meter", "aria-label": `${resource} requested`, "aria-valuemin": "0",
      "aria-valuemax": String(total), "aria-valuenow": String(used) },
      fill),
    el("span", { class: "bar-value" }, label));
}

// The node's pods as marks coloured by phase (Terminating: being deleted), at most MAX_MARKS of them: a tile costs
// the same DOM whatever the pods, and only visible tiles exist. The text equivalent is the marks' label.
function podMarks(phases) {
  const counts = PHASES.map((ph) => [ph, phases[ph] || 0]).filter(([, n]) => n > 0);
  const total = counts.reduce((n, [, c]) => n + c, 0);
  const text = total ? counts.map(([ph, n]) => `${n} ${ph}`).join(", ") : "no pods";
  const marks = [];
  for (const [ph, n] of counts) {
    for (let i = 0; i < n && marks.length < MAX_MARKS; i++) marks.push(el("span", { class: `mark ${ph}` }));
  }
  if (total > marks.length) marks.push(el("span", { class: "more" }, `+${total - marks.length}`));
  return el("div", { class: "pod-marks", role: "img", "aria-label": `pods: ${text}`, title: `pods: ${text}` }, marks);
}

function tile(node, alloc) {
  const a = alloc.get(node.metadata.name) || { requests: {}, pods: 0, phases: {} };
  const allocatable = {};
  for (const [k, v] of Object.entries(node.allocatable)) allocatable[k] = k === "cpu" ? Math.round(parseQ(v) * 1000) : parseQ(v);
  const bars = [
    bar("cpu", a.requests.cpu || 0, allocatable.cpu || 0),
    bar("memory", a.requests.memory || 0, allocatable.memory || 0),
    bar("pods", a.pods, allocatable.pods || 0),
  ];
  for (const k of Object.keys(allocatable).sort()) {
    if (!STANDARD.has(k) && !k.startsWith("hugepages-") && allocatable[k] > 0) bars.push(bar(k, a.requests[k] || 0, allocatable[k]));
  }
  const ready = node.conditions.find((c) => c.type === "Ready");
  const badges = [];
  badges.push(el("span", { class: `badge ${ready && ready.status === "True" ? "ok" : "bad"}` }, ready && ready.status === "True" ? "Ready" : "NotReady"));
  for (const c of node.conditions) {
    if (c.type !== "Ready" && c.status === "True") badges.push(el("span", { class: "badge bad" }, c.type));
  }
  if (node.unschedulable) badges.push(el("span", { class: "badge warn" }, "SchedulingDisabled"));
  const taints = node.taints.map((t) => el("li", {}, `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`));
  return el("a", { class: "tile", href: `#/node/${encodeURIComponent(node.metadata.name)}`, "data-node": node.metadata.name },
    el("div", { class: "tile-head" }, el("strong", {}, node.metadata.name), el("span", { class: "badges" }, badges)),
    el("div", { class: "bars" }, bars),
    podMarks(a.phases),
    taints.length ? el("ul", { class: "taints", "aria-label": "taints" }, taints) : el("div", { class: "taints none" }, "no taints"));
}


export function mount(container, params, store) {
  const state = { namespace: params.namespace || "", label: params.label || "", node: params.node || "" };
  const nsSelect = el("select", { id: "filter-namespace", "aria-label": "namespace" });
  const labelInput = el("input", { id: "filter-label", type: "search", placeholder: "node labels, e.g. kgc=a", "aria-label": "node label selector", value: state.label });
  const nodeInput = el("input", { id: "filter-node", type: "search", placeholder: "node name", "aria-label": "node name", value: state.node });
  const scopeInput = el("input", { id: "scope-namespace", type: "search", placeholder: "all namespaces", "aria-label": "list pods in namespace", value: store.namespace });
  const notice = el("div", { class: "access-notice", id: "access-notice", role: "alert" });
  const summary = el("p", { class: "summary", id: "cluster-summary", role: "status" });
  const scroller = el("div", { class: "grid-scroll", id: "node-grid", tabindex: "0", "aria-label": "nodes" });
  const spacer = el("div", { class: "grid-spacer" });
  scroller.append(spacer);
  const pendingList = el("ul", { class: "pending", id: "pending-pods" });
  container.append(
    el("section", { class: "cluster" },
      el("h1", { class: "visually-hidden" }, "Cluster"),
      el("div", { class: "toolbar" },
        el("label", {}, "List in ", scopeInput),
        el("label", {}, "Namespace ", nsSelect), el("label", {}, "Labels ", labelInput), el("label", {}, "Node ", nodeInput)),
      notice,
      summary,
      el("div", { class: "cluster-body" },
        scroller,
        el("aside", { class: "pending-panel", "aria-labelledby": "pending-title" },
          el("h2", { id: "pending-title" }, "Pending pods"), pendingList))));

  let alloc = new Map();
  let visibleNodes = [];
  let dirty = true;
  let onScreen = new Map(); // node name -> its tile element, for the tiles in the DOM now

  function recompute() {
    alloc = allocation(store.pods.items);
    const nodes = [...store.nodes.items.values()]
      .filter((n) => matchesSelector(n.metadata.labels, state.label) && n.metadata.name.includes(state.node))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name, undefined, { numeric: true }));
    visibleNodes = nodes;
    const namespaces = new Set([...store.pods.items.values()].map((p) => p.metadata.namespace));
    const current = [...nsSelect.options].map((o) => o.value).join(",");
    const wanted = ["", ...[...namespaces].sort()];
    if (current !== wanted.join(",")) {
      nsSelect.replaceChildren(...wanted.map((ns) => el("option", { value: ns, selected: ns === state.namespace }, ns || "all namespaces")));
    }
    const failures = lastFailures(store.failed.items);
    const pending = [...store.pods.items.values()]
      .filter((p) => !p.nodeName && p.phase === "Pending" && !p.metadata.deletionTimestamp)
      .filter((p) => !state.namespace || p.metadata.namespace === state.namespace)
      .sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
    const shown = pending.slice(0, 200);
    pendingList.replaceChildren(...shown.map((p) => {
      const key = `${p.metadata.namespace}/${p.metadata.name}`;
      const failure = failures.get(key);
      return el("li", { "data-pod": key },
        el("a", { href: `#/pod/${encodeURIComponent(p.metadata.namespace)}/${encodeURIComponent(p.metadata.name)}` }, key),
        el("div", { class: "reason" }, failure ? failure.message : "not yet scheduled"));
    }));
    if (pending.length > shown.length) pendingList.append(el("li", {}, `… and ${pending.length - shown.length} more`));
    if (!pending.length) pendingList.append(el("li", { class: "none" }, "none"));
    const podsShown = [...store.pods.items.values()].filter((p) => !state.namespace || p.metadata.namespace === state.namespace).length;
    // What this identity may not list, in the API's own words (RBAC decides; the UI hides nothing else).
    const denied = [store.nodes, store.pods, store.failed].map((i) => i.forbidden).filter(Boolean);
    notice.replaceChildren(...denied.map((m) => el("p", {}, m)));
    notice.hidden = !denied.length;
    for (const t of onScreen.values()) t.remove();
    onScreen = new Map();
    summary.textContent = `${visibleNodes.length} of ${store.nodes.items.size} nodes · ${podsShown} pods · ${pending.length} pending`;
    dirty = false;
  }

  function render() {
    if (dirty) recompute();
    const width = scroller.clientWidth || 1200;
    const cols = Math.max(1, Math.floor((width - GAP) / (TILE_W + GAP)));
    const rows = Math.ceil(visibleNodes.length / cols);
    spacer.style.height = `${rows * (TILE_H + GAP) + GAP}px`;
    const first = Math.max(0, Math.floor(scroller.scrollTop / (TILE_H + GAP)) - 1);
    const last = Math.min(rows, Math.ceil((scroller.scrollTop + scroller.clientHeight) / (TILE_H + GAP)) + 1);
    // Tiles still in view keep their elements (only moved); the rest are built. The cache holds only what is
    // on screen and is emptied on every recompute (the data changed), so it never grows with the cluster.
    const keep = new Map();
    for (let r = first; r < last; r++) {
      for (let c = 0; c < cols; c++) {
        const n = visibleNodes[r * cols + c];
        if (!n) break;
        const t = onScreen.get(n.metadata.name) || tile(n, alloc);
        t.style.transform = `translate(${GAP + c * (TILE_W + GAP)}px, ${GAP + r * (TILE_H + GAP)}px)`;
        keep.set(n.metadata.name, t);
      }
    }
    for (const [name, t] of onScreen) if (keep.get(name) !== t) t.remove();
    for (const t of keep.values()) if (t.parentNode !== spacer) spacer.append(t);
    // document order = visual order, so Tab walks the tiles row by row
    let previous = null;
    for (const t of keep.values()) {
      if (previous ? previous.nextSibling !== t : spacer.firstChild !== t) spacer.insertBefore(t, previous ? previous.nextSibling : spacer.firstChild);
      previous = t;
    }
    onScreen = keep;
  }

  let frame = 0;
  const schedule = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); }); };
  const changed = () => { dirty = true; schedule(); };
  const writeHash = () => {
    const q = new URLSearchParams(Object.entries(state).filter(([, v]) => v));
    history.replaceState(null, "", `#/cluster${q.toString() ? "?" + q : ""}`);
  };
  scopeInput.addEventListener("change", () => { store.scope(scopeInput.value.trim()); changed(); });
  nsSelect.addEventListener("change", () => { state.namespace = nsSelect.value; writeHash(); changed(); });
  labelInput.addEventListener("input", () => { state.label = labelInput.value; writeHash(); changed(); });
  nodeInput.addEventListener("input", () => { state.node = nodeInput.value; writeHash(); changed(); });
  scroller.addEventListener("scroll", schedule, { passive: true });
  window.addEventListener("resize", schedule);
  const subs = [store.nodes.subscribe(changed), store.pods.subscribe(changed), store.failed.subscribe(changed)];
  changed();
  return () => { subs.forEach((u) => u()); window.removeEventListener("resize", schedule); if (frame) cancelAnimationFrame(frame); };
}
