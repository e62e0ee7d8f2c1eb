// The pod view: the scheduling cycle for one pod, computed server-side by kubeplane.scheduler.explain on the
// cluster as it is now (GET /ui/explain): PreFilter, each node x Filter plugin verdict, each node x Score plugin
// raw / normalised / weighted score, the total and the chosen node; for a pod that fits nowhere the preemption
// dry run and what-if's verified suggestions. The node table sorts by any column and can be cut to the feasible
// nodes or to the nodes one Filter plugin rejected. The pod's phase and node and its events are live (watch);
// the cycle is re-run when the pod changes.
import { el, Informer, request, uiCall } from "./api.js";
import { confirmDialog } from "./confirm.js";
import { errorBox } from "./errors.js";

function statusText(s) {
  // A Filter plugin's verdict as text: "" when it passed or had nothing to check (Skip: its PreFilter said so).
  if (!s || s.code === "Success" || s.code === "Skip") return "";
  return (s.reasons || [s.code]).join("; ");
}

function rejects(s) {
  return !!s && s.code !== "Success" && s.code !== "Skip";
}

function autoscalerPart(a) {
  // explain's "autoscaler" part (kubeplane.autoscaler.explaining, given by the CLI): each node group's template
  // verdict, the TriggeredScaleUp group and the upcoming nodes' expected Ready times, or NotTriggerScaleUp's reasons.
  const out = [el("h2", {}, "Autoscaler")];
  if (a.error) return [...out, el("p", { class: "message error", id: "autoscaler" }, a.error)];
  const rows = (a.groups || []).map((g) => el("tr", { "data-group": g.name, class: g.helps ? "selected" : "rejected" },
    el("th", { scope: "row" }, g.name),
    el("td", { class: "num" }, `${g.size}/${g.maxSize}`),
    el("td", { class: g.fits ? "pass" : "fail" }, g.fits ? "✓ fits" : g.reasons.join("; ")),
    el("td", {}, g.helps ? "yes" : g.fits ? g.reasons.join("; ") : "no"),
    el("td", { class: "num" }, `${g.provisioningDelay}s`)));
  out.push(el("div", { class: "table-scroll" }, el("table", { class: "grid", id: "autoscaler-groups" },
    el("thead", {}, el("tr", {}, ["Node group", "Nodes / max", "Template node (Filter)", "Can help", "Provisioning delay"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows))));
  const t = a.triggered;
  if (t) {
    out.push(el("p", { id: "autoscaler-triggered" }, `${t.message} at ${t.time}`));
    out.push((a.upcoming || []).length
      ? el("ul", { id: "autoscaler-upcoming" }, a.upcoming.map((u) => el("li", {}, `upcoming node ${u.node} (${u.group}): expected Ready at ${u.expectedReady}`)))
      : el("p", {}, "no upcoming node (the new nodes are Ready)"));
  }
  if (a.notTriggered) out.push(el("p", { id: "autoscaler-not-triggered", class: "message error" }, `${a.notTriggered.message} at ${a.notTriggered.time}`));
  if (!t && !a.notTriggered) out.push(el("p", {}, "no scale-up event for this pod yet"));
  return out;
}

export function mount(container, params, store) {
  const { namespace, name } = params;
  const key = `${namespace}/${name}`;
  const head = el("div", { class: "pod-head", id: "pod-status", role: "status" });
  const result = el("div", { id: "pod-cycle" }, el("p", {}, "Running the scheduling cycle…"));
  const eventsList = el("ol", { class: "timeline", id: "pod-events" });
  const rerun = el("button", { type: "button", id: "rerun" }, "Re-run cycle");
  const deleteButton = el("button", { type: "button", id: "delete-pod", class: "danger" }, "Delete pod");
  const deleted = el("div", { id: "pod-message", class: "message", role: "status" });
  deleteButton.addEventListener("click", async () => {
    if (!(await confirmDialog(`Delete pod "${name}" in namespace ${namespace}?`))) return;
    try {
      await request("DELETE", `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`);
      deleted.className = "message ok";
      deleted.textContent = `pod "${name}" deleted`; // kubectl delete's line
    } catch (err) { deleted.className = "message error"; deleted.replaceChildren(errorBox(err)); }
  });
  container.append(el("section", { class: "pod-view" },
    el("p", {}, el("a", { href: "#/cluster" }, "← cluster")),
    el("h1", {}, `Pod ${key}`), head,
    el("div", { class: "actions" }, rerun,
      el("a", { href: `#/objects?path=${encodeURIComponent(`/api/v1/namespaces/${namespace}/pods/${name}`)}` }, "Edit YAML"), deleteButton),
    deleted, result,
    el("h2", {}, "Events"), eventsList));

  const view = { sort: "node", desc: false, cut: "all", data: null };

  function renderHead() {
    const p = store.pods.items.get(key);
    if (!p) { head.textContent = store.pods.synced ? "The pod does not exist (any more)." : "Loading…"; return; }
    head.replaceChildren(...[
      el("span", { class: `phase ${p.phase}`, id: "pod-phase" }, p.phase),
      p.nodeName ? el("span", {}, " on ", el("a", { id: "pod-node", href: `#/node/${encodeURIComponent(p.nodeName)}` }, p.nodeName)) : el("span", {}, " not bound"),
      p.nominatedNodeName ? el("span", {}, ` (nominated: ${p.nominatedNodeName})`) : null,
    ].filter(Boolean));
  }

  function renderCycle() {
    const data = view.data;
    if (!data) return;
    if (data.error) { result.replaceChildren(el("p", { class: "message error" }, data.error)); return; }
    const x = data.explain;
    const filterNames = [...new Set(Object.values(x.nodes).flatMap((n) => Object.keys(n.filters)))];
    const scorePlugins = x.scorePlugins || [];
    let rows = Object.entries(x.nodes).map(([node, n]) => ({ node, ...n, feasible: Object.keys(n.filters).length > 0 && !Object.values(n.filters).some(rejects) }));
    if (view.cut === "feasible") rows = rows.filter((r) => r.feasible);
    else if (view.cut.startsWith("rejected:")) {
      const plugin = view.cut.slice("rejected:".length);
      rows = rows.filter((r) => rejects(r.filters[plugin]));
    }
    const value = (r, col) => {
      if (col === "node") return r.node;
      if (col === "total") return r.total;
      if (col === "feasible") return r.feasible ? 1 : 0;
      if (col.startsWith("score:")) { const s = r.scores[col.slice(6)]; return s ? s.normalized * s.weight : -1; }
      if (col.startsWith("filter:")) return statusText(r.filters[col.slice(7)]);
      return 0;
    };
    rows.sort((a, b) => {
      const va = value(a, view.sort), vb = value(b, view.sort);
      const c = typeof va === "number" ? va - vb : String(va).localeCompare(String(vb), undefined, { numeric: true });
      return view.desc ? -c : c;
    });
    const th = (label, col) => el("th", { scope: "col", "aria-sort": view.sort === col ? (view.desc ? "descending" : "ascending") : "none" },
      el("button", { type: "button", class: "sort", "data-col": col, onclick: () => {
        if (view.sort === col) view.desc = !view.desc; else { view.sort = col; view.desc = col === "total"; }
        renderCycle();
      } }, label));
    const header = el("tr", {}, th("Node", "node"), th("Feasible", "feasible"),
      filterNames.map((f) => th(f, `filter:${f}`)),
      scorePlugins.map((s) => th(`${s.name} (×${s.weight})`, `score:${s.name}`)), th("Total", "total"));
    const body = rows.map((r) => el("tr", { "data-node": r.node, class: r.node === x.selected ? "selected" : r.feasible ? "" : "rejected" },
      el("th", { scope: "row" }, r.node === x.selected ? `★ ${r.node}` : r.node, r.examined === false ? el("span", { class: "muted" }, " (not examined)") : null),
      el("td", {}, r.feasible ? "yes" : "no"),
      filterNames.map((f) => {
        const s = r.filters[f];
        const text = statusText(s);
        const detail = r.details && r.details[f];
        const mark = !s ? "–" : s.code === "Skip" ? "skip" : "✓";
        return el("td", { class: text ? "fail" : s && s.code === "Skip" ? "skip" : "pass", "data-plugin": f }, text || mark, detail ? el("div", { class: "detail" }, detail) : null);
      }),
      scorePlugins.map((sp) => {
        const s = r.scores[sp.name];
        return el("td", { class: "num", "data-plugin": sp.name }, s ? `${s.raw} → ${s.normalized} → ${s.normalized * s.weight}${s.skipped ? " (skipped)" : ""}` : "");
      }),
      el("td", { class: "num" }, r.feasible ? String(r.total) : "")));
    const cut = el("select", { id: "node-cut", "aria-label": "show nodes", onchange: (e) => { view.cut = e.target.value; renderCycle(); } },
      el("option", { value: "all", selected: view.cut === "all" }, "all nodes"),
      el("option", { value: "feasible", selected: view.cut === "feasible" }, "feasible"),
      filterNames.map((f) => el("option", { value: `rejected:${f}`, selected: view.cut === `rejected:${f}` }, `rejected by ${f}`)));
    const preFilter = Object.entries(x.preFilter || {});
    const parts = [
      el("p", { class: "verdict", id: "verdict" }, x.selected ? `Chosen node: ${x.selected}` : `Fits nowhere: ${x.message}`),
      x.boundTo ? el("p", {}, `Bound to ${x.boundTo}; the table is where the scheduler would place it now.`) : null,
      preFilter.length ? el("p", { class: "prefilter" }, "PreFilter: ", preFilter.map(([n, s]) => `${n} ${s.code === "Skip" ? "skip" : statusText(s) || "✓"}`).join(" · ")) : null,
      el("div", { class: "toolbar" }, el("label", {}, "Show ", cut), el("span", {}, `${rows.length} node(s)`)),
      el("div", { class: "table-scroll" }, el("table", { class: "grid cycle", id: "cycle-table" }, el("thead", {}, header), el("tbody", {}, body))),
    ];
    if (x.preemption) {
      const c = Object.entries(x.preemption.candidates || {});
      parts.push(el("h2", {}, "Preemption (dry run)"),
        el("p", { id: "preemption" }, `nominated node: ${x.preemption.nominatedNode || "none"}; ${x.preemption.message || ""}`),
        c.length ? el("ul", {}, c.map(([node, v]) => el("li", {}, `${node}: victims ${v.victims.join(", ") || "none"}; PDB violations ${v.pdbViolations}`))) : el("p", {}, "no candidates"));
    }
    if (data.whatIf) {
      const changes = data.whatIf.changes || [];
      parts.push(el("h2", {}, "What if (verified suggestions)"),
        changes.length ? el("ul", { id: "what-if" }, changes.map((c) => el("li", {}, `${c.change} → fits on ${(c.nodes_that_fit || []).join(", ")}`))) : el("p", {}, "no single change found"));
    }
    if (x.autoscaler) parts.push(...autoscalerPart(x.autoscaler));
    if (data.gang) parts.push(el("h2", {}, "Gang"), el("pre", {}, JSON.stringify(data.gang, null, 2)));
    result.replaceChildren(...parts.filter(Boolean));
  }

  let running = false, again = false;
  async function run() {
    if (running) { again = true; return; }
    running = true;
    try {
      const q = new URLSearchParams({ namespace, name });
      const response = await uiCall("GET", `/ui/explain?${q}`);
      const body = await response.json();
      view.data = response.ok ? body : { error: body.message || `HTTP ${response.status}` };
      renderCycle();
    } finally {
      running = false;
      if (again) { again = false; run(); }
    }
  }
  rerun.addEventListener("click", run);

  const events = new Informer(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
    fieldSelector: `involvedObject.name=${name}`,
  });
  const renderEvents = () => {
    const list = [...events.items.values()].map((e) => ({
      // an events.k8s.io Event (the scheduler's) counts repeats in its series, as kubectl describe reads it
      time: e.lastTimestamp || (e.series && e.series.lastObservedTime) || e.eventTime || e.metadata.creationTimestamp || "",
      type: e.type, reason: e.reason, from: (e.source && e.source.component) || e.reportingComponent || "",
      message: e.message, count: (e.series && e.series.count) || e.count || 1,
    })).sort((a, b) => a.time.localeCompare(b.time));
    eventsList.replaceChildren(...(list.length ? list.map((e) => el("li", { class: e.type === "Warning" ? "warning" : "" },
      el("time", {}, e.time), ` ${e.type} ${e.reason}${e.count > 1 ? ` (x${e.count})` : ""} from ${e.from}: `, e.message)) : [el("li", {}, "none")]));
  };
  events.subscribe(renderEvents);
  events.start();

  let lastSeen = "";
  const onPods = () => {
    renderHead();
    const p = store.pods.items.get(key);
    const sig = p ? `${p.phase}|${p.nodeName}|${p.nominatedNodeName}` : "";
    if (sig !== lastSeen) { lastSeen = sig; run(); }
  };
  const subs = [store.pods.subscribe(onPods)];
  renderHead();
  if (!store.pods.synced) run();
  else onPods();
  return () => { subs.forEach((u) => u()); events.stop(); };
}
