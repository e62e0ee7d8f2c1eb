// The Runs view: `kubeplane sim` output directories under the UI's runs directory (`/ui/runs`, see ui/runs.py).
// #/runs lists them (scenario, kind, labels, seeds, headline figures); #/runs/<id> shows one run or comparison:
// its headline and summary tables, the scenario's actions and interactive charts (charts.js) of its time series,
// a comparison overlaying one line per label. Everything is read-only.
import { el, uiCall } from "./api.js";
import { lineChart, formatValue, COLOURS } from "./charts.js";

const DASHES = ["", "6 3", "2 3", "8 3 2 3"];

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
