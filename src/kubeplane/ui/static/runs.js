// The Runs view: `kubeplane sim` output directories under the UI's runs directory (`/ui/runs`, see ui/runs.py).
// #/runs lists them (scenario, kind, labels, seeds, headline figures); #/runs/<id> shows one run or comparison:
// its headline and summary tables, the scenario's actions and interactive charts (charts.js) of its time series,
// a comparison overlaying one line per label. Everything is read-only.
import { el, uiCall } from "./api.js";
import { lineChart, formatValue, COLOURS } from "./charts.js";

const DASHES = ["", "6 3", "2 3", "8 3 2 3"];
// The autoscaling table's rows, side by side (as the HTML report's: kubeplane.sim.report_autoscaling.COMPARED).
const AUTOSCALING = ["cost", "node_hours", "nodes_added", "nodes_removed", "pending_time_p50", "pending_time_p90",
  "pending_time_p99", "descheduler_evictions"];
const GROUP_FIELDS = ["node_hours", "cost", "nodes_added", "nodes_removed", "nodes_peak", "nodes_at_end"];

// Shows the nav link only when the server has a runs directory (/ui/whoami's "runs"; GET /ui/runs is a 404
// Status otherwise, which the probe avoids asking for: a 404 is a console error in the browser).
export async function probe() {
  const link = document.getElementById("nav-runs");
  if (!link) return;
  try {
    const response = await uiCall("GET", "/ui/whoami");
    link.hidden = !(response.ok && (await response.json()).runs);
  } catch { link.hidden = true; }
}

async function getJSON(path) {
  const response = await uiCall("GET", path);
  const body = await response.json().catch(() => ({ message: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(body.message || `HTTP ${response.status}`);
  return body;
}

const runLink = (id) => `#/runs/${encodeURIComponent(id)}`;
const cell = (v) => el("td", { class: typeof v === "number" ? "num" : "" }, formatValue(v));

function headlineText(item) {
  const parts = [];
  for (const [label, figures] of Object.entries(item.headline || {})) {
    const text = Object.entries(figures).map(([k, v]) => `${k} ${formatValue(v)}`).join(", ");
    if (text) parts.push(item.kind === "comparison" ? `${label}: ${text}` : text);
  }
  return parts;
}

function mountList(container) {
  const message = el("p", { class: "message", role: "status", id: "runs-message" }, "Loading…");
  const body = el("div", {});
  container.append(el("h1", {}, "Simulation runs"), message, body);
  let alive = true;
  getJSON("/ui/runs").then((doc) => {
    if (!alive) return;
    message.textContent = `${doc.runs.length} run${doc.runs.length === 1 ? "" : "s"} under ${doc.root}` +
      (doc.truncated ? " (the first ones only)" : "");
    if (!doc.runs.length) { body.append(el("p", { class: "hint" }, "Write some with `kubeplane sim run SCENARIO --out DIR`.")); return; }
    const rows = doc.runs.map((r) => el("tr", { "data-run": r.id },
      el("th", { scope: "row" }, el("a", { href: runLink(r.id) }, r.scenario || r.id)),
      el("td", {}, r.kind),
      el("td", {}, r.error ? el("span", { class: "message error" }, r.error) : (r.labels || []).join(", ")),
      el("td", {}, [...new Set(Object.values(r.seeds || {}))].join(", ")),
      el("td", {}, ...headlineText(r).map((t) => el("div", {}, t))),
      el("td", {}, el("code", {}, r.id))));
    body.append(el("table", { class: "grid", id: "runs-table" },
      el("caption", { class: "visually-hidden" }, "Simulation runs"),
      el("thead", {}, el("tr", {}, ...["Scenario", "Kind", "Label(s)", "Seed", "Headline", "Directory"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)));
  }).catch((err) => { if (alive) { message.className = "message error"; message.textContent = err.message; } });
  return () => { alive = false; };
}

function metricTable(id, caption, metrics, doc) {
  const labels = doc.labels;
  return el("table", { class: "grid", id },
    el("caption", { class: "visually-hidden" }, caption),
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "metric"), ...labels.map((l) => el("th", { scope: "col" }, l)))),
    el("tbody", {}, metrics.map((m) => el("tr", {}, el("th", { scope: "row" }, el("code", {}, m)),
      ...labels.map((l) => cell((doc.summaries[l] || {})[m]))))));
}

// Runs with node groups or a descheduler: cost, node-hours, nodes added/removed and pending-time percentiles
// side by side, per-group figures, each run's autoscaler events (scaling.csv) and evictions by plugin.
function autoscaling(doc) {
  const summaries = doc.labels.map((l) => doc.summaries[l] || {});
  const groups = summaries.some((s) => s.node_groups);
  const desched = summaries.some((s) => "descheduler_evictions" in s);
  if (!groups && !desched) return [];
  const parts = [el("h2", {}, groups ? "Autoscaling" : "Descheduling"),
    metricTable("run-autoscaling", "Autoscaling", AUTOSCALING.filter((m) => summaries.some((s) => m in s)), doc)];
  if (groups) {
    const names = [...new Set(summaries.flatMap((s) => Object.keys(s.node_groups || {})))];
    parts.push(el("h3", {}, "Node groups"), el("table", { class: "grid", id: "run-node-groups" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "group / metric"), ...doc.labels.map((l) => el("th", { scope: "col" }, l)))),
      el("tbody", {}, names.flatMap((g) => GROUP_FIELDS.map((f) => el("tr", {}, el("th", { scope: "row" }, el("code", {}, `${g} ${f}`)),
        ...summaries.map((s) => cell(((s.node_groups || {})[g] || {})[f]))))))));
    doc.labels.forEach((label, i) => {
      const rows = (doc.scaling || {})[label] || [];
      const title = doc.labels.length > 1 ? `Autoscaler events — ${label}` : "Autoscaler events";
      parts.push(el("h3", {}, title));
      if (!rows.length) { parts.push(el("p", { class: "hint" }, "The autoscaler recorded no scaling event.")); return; }
      parts.push(el("table", { class: "grid scaling-events", id: `run-scaling-events-${i}` },
        el("caption", { class: "visually-hidden" }, title),
        el("thead", {}, el("tr", {}, ...["time (s)", "group", "delta", "reason", "detail"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, rows.map((r) => el("tr", {}, cell(r.t), el("td", {}, r.group || "—"),
          el("td", { class: "num" }, r.delta > 0 ? `+${r.delta}` : String(r.delta ?? "")), el("td", {}, r.reason), el("td", {}, r.detail))))));
    });
  }
  if (desched) {
    const counts = summaries.map((s) => s.descheduler_evictions_by_plugin || {});
    const plugins = [...new Set(counts.flatMap((c) => Object.keys(c)))].sort();
    parts.push(el("h3", {}, "Descheduler evictions"), el("table", { class: "grid", id: "run-evictions" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "plugin"), ...doc.labels.map((l) => el("th", { scope: "col" }, l)))),
      el("tbody", {}, plugins.map((p) => el("tr", {}, el("th", { scope: "row" }, el("code", {}, p)), ...counts.map((c) => cell(c[p] || 0)))))));
  }
  return parts;
}

function chartSpecs(doc) {
  const comparing = doc.kind === "comparison";
  return doc.charts.map((chart) => ({
    id: chart.id,
    title: chart.title,
    omitted: chart.omitted || [],
    markers: doc.actions,
    series: chart.lines.map((line, i) => {
      const data = doc.series[line.run] || { t: [], columns: {} };
      const li = doc.labels.indexOf(line.run);
      return {
        name: line.name, x: data.t, y: data.columns[line.column] || [],
        colour: COLOURS[(comparing ? li : i) % COLOURS.length],
        dash: comparing ? DASHES[li % DASHES.length] : "",
      };
    }),
  }));
}

function mountRun(container, id) {
  const message = el("p", { class: "message", role: "status", id: "run-message" }, "Loading…");
  const body = el("div", {});
  container.append(el("p", {}, el("a", { href: "#/runs" }, "← all runs")), el("h1", { id: "run-title" }, id), message, body);
  let alive = true;
  getJSON(`/ui/runs/run?id=${encodeURIComponent(id)}`).then((doc) => {
    if (!alive) return;
    message.textContent = "";
    document.getElementById("run-title").textContent =
      `${doc.scenario || id}${doc.kind === "comparison" ? " — comparison" : ""}`;
    const seeds = [...new Set(Object.values(doc.seeds))].join(", ");
    body.append(el("dl", { class: "run-meta" },
      el("dt", {}, "Directory"), el("dd", {}, el("code", {}, doc.id)),
      el("dt", {}, "Seed"), el("dd", {}, seeds),
      el("dt", {}, doc.labels.length > 1 ? "Labels" : "Label"), el("dd", {}, doc.labels.join(", "))));
    const headline = [...new Set(doc.labels.flatMap((l) => (doc.summaries[l] || {}).headline || []))];
    if (headline.length) body.append(el("h2", {}, "Headline"), metricTable("run-headline", "Headline", headline, doc));
    body.append(...autoscaling(doc));
    if (doc.actions.length) {
      body.append(el("h2", {}, "The scenario's actions"), el("table", { class: "grid", id: "run-actions" },
        el("thead", {}, el("tr", {}, ...["#", "time (s)", "action", "ok"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, doc.actions.map((a) => el("tr", {}, el("td", { class: "num" }, String(a.number)),
          cell(a.t), el("td", {}, a.label), el("td", {}, a.ok ?? ""))))));
    }
    body.append(el("h2", {}, "Charts"));
    const charts = el("div", { class: "charts", id: "run-charts" });
    const notes = el("div", { class: "chart-notes" });
    for (const spec of chartSpecs(doc)) {
      if (!spec.series.length) {
        notes.append(el("p", { class: "hint chart-note" },
          `${spec.title}: ${spec.omitted.join(", ")} ${spec.omitted.length === 1 ? "is" : "are"} zero throughout, not drawn.`));
        continue;
      }
      const chart = lineChart(spec);
      if (spec.omitted.length) chart.element.append(el("p", { class: "hint" }, `Zero throughout, not drawn: ${spec.omitted.join(", ")}.`));
      charts.append(chart.element);
    }
    if (!doc.charts.length) charts.append(el("p", { class: "hint" }, "No time-series samples were recorded."));
    body.append(charts, notes);
    const metrics = [...new Set(doc.labels.flatMap((l) => Object.keys(doc.summaries[l] || {})))]
      .filter((m) => !["label", "headline"].includes(m));
    body.append(el("details", { id: "run-summary", open: true }, el("summary", {}, "Summary (every metric)"),
      metricTable("run-summary-table", "Summary", metrics, doc)));
  }).catch((err) => { if (alive) { message.className = "message error"; message.textContent = err.message; } });
  return () => { alive = false; };
}

export function mount(container, params) {
  return params.id === undefined ? mountList(container) : mountRun(container, params.id);
}
