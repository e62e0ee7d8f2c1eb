// A node: its labels, taints, conditions, allocation and pods, and the kubectl-like actions on it, each one API
// call a kubectl user would recognise: cordon/uncordon (`kubectl cordon`: strategic merge patch of
// spec.unschedulable), label (`kubectl label`: merge patch of metadata.labels, "key-" removes), taint
// (`kubectl taint`: strategic merge patch of spec.taints with the whole new list, "key:Effect-" removes), drain
// (`kubectl drain`: ./drain.js).
import { el, request } from "./api.js";
import { allocation } from "./cluster.js";
import { drainPanel } from "./drain.js";
import { formatAmount, parseQuantity } from "./resources.js";

const SMP = "application/strategic-merge-patch+json";
const MERGE = "application/merge-patch+json";

export function parseLabelArgs(text) {
  const labels = {};
  for (const arg of text.split(/\s+/).filter(Boolean)) {
    if (arg.endsWith("-")) labels[arg.slice(0, -1)] = null;
    else {
      const i = arg.indexOf("=");
      if (i <= 0) throw new Error(`invalid label "${arg}": want key=value or key-`);
      labels[arg.slice(0, i)] = arg.slice(i + 1);
    }
  }
  return labels;
}

export function applyTaintArgs(taints, text) {
  let out = taints.map((t) => ({ ...t }));
  for (const arg of text.split(/\s+/).filter(Boolean)) {
    const remove = arg.endsWith("-");
    const body = remove ? arg.slice(0, -1) : arg;
    const m = /^([^=:]+)(?:=([^:]*))?(?::(NoSchedule|PreferNoSchedule|NoExecute))?$/.exec(body);
    if (!m || (!remove && !m[3])) throw new Error(`invalid taint "${arg}": want key[=value]:Effect or key[:Effect]-`);
    const [, key, value, effect] = m;
    if (remove) out = out.filter((t) => !(t.key === key && (!effect || t.effect === effect)));
    else {
      out = out.filter((t) => !(t.key === key && t.effect === effect));
      out.push(value ? { key, value, effect } : { key, effect });
    }
  }
  return out;
}

export function mount(container, params, store) {
  const name = params.name;
  const path = `/api/v1/nodes/${encodeURIComponent(name)}`;
  const message = el("p", { class: "message", id: "node-message", role: "status" });
  const body = el("div", {});
  const labelInput = el("input", { id: "label-args", placeholder: "kgc=a   (key- removes)", "aria-label": "labels" });
  const taintInput = el("input", { id: "taint-args", placeholder: "key=value:NoSchedule   (key:NoSchedule- removes)", "aria-label": "taints" });
  const cordonButton = el("button", { id: "cordon", type: "button" }, "Cordon");
  async function act(fn, done) {
    message.className = "message";
    try { await fn(); message.textContent = done; } catch (err) { message.className = "message error"; message.textContent = err.message; }
  }
  cordonButton.addEventListener("click", () => {
    const node = store.nodes.items.get(name);
    const cordon = !(node && node.unschedulable);
    act(() => request("PATCH", path, { body: { spec: { unschedulable: cordon ? true : null } }, contentType: SMP }),
      `node/${name} ${cordon ? "cordoned" : "uncordoned"}`);
  });
  const labelForm = el("form", { class: "inline", id: "label-form", onsubmit: (e) => {
    e.preventDefault();
    act(() => request("PATCH", path, { body: { metadata: { labels: parseLabelArgs(labelInput.value) } }, contentType: MERGE }),
      `node/${name} labeled`);
  } }, el("label", { for: "label-args" }, "Label "), labelInput, el("button", { type: "submit" }, "Apply labels"));
  const taintForm = el("form", { class: "inline", id: "taint-form", onsubmit: (e) => {
    e.preventDefault();
    act(async () => {
      const live = await request("GET", path);
      const taints = applyTaintArgs((live.spec && live.spec.taints) || [], taintInput.value);
      await request("PATCH", path, { body: { spec: { taints } }, contentType: SMP });
    }, `node/${name} tainted`);
  } }, el("label", { for: "taint-args" }, "Taint "), taintInput, el("button", { type: "submit" }, "Apply taints"));
  const [drainForm, stopDrain] = drainPanel(name, store);
  container.append(el("section", { class: "node-view" },
    el("p", {}, el("a", { href: "#/cluster" }, "← cluster")),
    el("h1", {}, `Node ${name}`),
    el("div", { class: "actions" }, cordonButton, labelForm, taintForm,
      el("a", { href: `#/objects?path=${encodeURIComponent(path)}` }, "Edit YAML")),
    message, drainForm, body));

  function render() {
    const node = store.nodes.items.get(name);
    if (!node) { body.replaceChildren(el("p", {}, store.nodes.synced ? "No such node." : "Loading…")); return; }
    cordonButton.textContent = node.unschedulable ? "Uncordon" : "Cordon";
    const a = allocation(store.pods.items).get(name) || { requests: {}, pods: 0 };
    const pods = [...store.pods.items.values()].filter((p) => p.nodeName === name)
      .sort((x, y) => `${x.metadata.namespace}/${x.metadata.name}`.localeCompare(`${y.metadata.namespace}/${y.metadata.name}`));
    const rows = Object.entries(node.allocatable).map(([k, v]) => {
      const total = k === "cpu" ? Math.round(parseQuantity(v) * 1000) : parseQuantity(v);
      const used = k === "pods" ? a.pods : a.requests[k] || 0;
      return el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, k === "pods" ? used : formatAmount(k, used)),
        el("td", {}, k === "pods" ? total : formatAmount(k, total)));
    });
    body.replaceChildren(
      el("h2", {}, "Labels"),
      el("ul", { id: "node-labels", class: "kv" }, Object.entries(node.metadata.labels).map(([k, v]) => el("li", {}, `${k}=${v}`))),
      el("h2", {}, "Taints"),
      el("ul", { id: "node-taints", class: "kv" }, node.taints.length ? node.taints.map((t) => el("li", {}, `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`)) : el("li", {}, "none")),
      el("h2", {}, "Conditions"),
      el("ul", { class: "kv" }, node.conditions.map((c) => el("li", {}, `${c.type}=${c.status}${c.reason ? " (" + c.reason + ")" : ""}`))),
      el("h2", {}, "Allocation"),
      el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "resource"), el("th", {}, "requested"), el("th", {}, "allocatable"))), el("tbody", {}, rows)),
      el("h2", {}, `Pods (${pods.length})`),
      el("ul", { id: "node-pods" }, pods.map((p) => el("li", {},
        el("a", { href: `#/pod/${encodeURIComponent(p.metadata.namespace)}/${encodeURIComponent(p.metadata.name)}` }, `${p.metadata.namespace}/${p.metadata.name}`),
        ` ${p.phase}`))));
  }
  const subs = [store.nodes.subscribe(render), store.pods.subscribe(render)];
  render();
  return () => { subs.forEach((u) => u()); stopDrain(); };
}
