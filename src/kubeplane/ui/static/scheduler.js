// Scheduler: the running configuration (each profile's plugins per extension point, in the order they run, with
// their score weights) and "try": edit a KubeSchedulerConfiguration and see, for the Pending pods, the node the
// scheduler would choose today and the node it would choose with the edited configuration, on the same snapshot.
// The server runs both cycles (/ui/scheduler/try) and binds nothing.
import { el, uiCall } from "./api.js";
import { fieldLine, locate } from "./objects.js";

const POINTS = ["preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
  "permit", "preBind", "bind", "postBind"];

function profileTable(profile) {
  const rows = POINTS.filter((p) => (profile.points[p] || []).length).map((point) =>
    el("tr", { "data-point": point },
      el("th", { scope: "row" }, point),
      el("td", {}, profile.points[point].map((p) => (point === "score" ? `${p.name} ×${p.weight}` : p.name)).join(", "))));
  const percentage = profile.percentageOfNodesToScore == null ? "adaptive" : `${profile.percentageOfNodesToScore}%`;
  return el("section", { class: "profile", "aria-label": `profile ${profile.schedulerName}` },
    el("h3", {}, `Profile ${profile.schedulerName}`),
    el("p", { class: "hint" }, `percentageOfNodesToScore: ${percentage}`),
    el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Extension point"), el("th", { scope: "col" }, "Plugins"))),
      el("tbody", {}, rows)));
}

function verdict(answer) {
  if (!answer.node) return el("span", { class: "unschedulable" }, `no node: ${answer.message}`);
  return el("span", {}, el("strong", {}, answer.node), ` (score ${answer.score}, ${answer.feasible} feasible)`);
}

export function mount(container) {
  const source = el("p", { id: "config-source", class: "hint" }, "Loading the running configuration…");
  const profiles = el("div", { id: "profiles" });
  const editor = el("textarea", { id: "sched-yaml", spellcheck: "false", rows: "24", cols: "100" });
  const podsInput = el("input", { id: "try-pods", size: "60", placeholder: "default/web-1, default/web-2" });
  const message = el("div", { id: "try-message", class: "message", role: "status", "aria-live": "polite" });
  const results = el("div", { id: "try-results" });
  let running = "";
  let stopped = false;

  const show = (text, ok) => { message.className = `message ${ok ? "ok" : "error"}`; message.textContent = text; };

  function pointAt(line) {
    const lines = editor.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    editor.focus();
    editor.setSelectionRange(start, start + (lines[line - 1] || "").length);
  }

  async function load() {
    const response = await uiCall("GET", "/ui/scheduler/config");
    const body = await response.json();
    if (stopped) return;
    if (!response.ok) { source.textContent = body.message || `HTTP ${response.status}`; return; }
    source.textContent = body.source === "running"
      ? "The configuration the cluster's scheduler runs (defaults written out)."
      : "This API server does not know the running scheduler's configuration: shown is kube-scheduler's default.";
    profiles.replaceChildren(...body.profiles.map(profileTable));
    running = body.yaml;
    if (!editor.value) editor.value = running;
  }

  function table(answer) {
    const head = el("tr", {}, ...["Pod", "Scheduler name", "Today", "With this configuration", "Changed"]
      .map((t) => el("th", { scope: "col" }, t)));
    const rows = answer.evaluated.map((row) => {
      const [ns, name] = row.pod.split("/");
      return el("tr", { class: row.changed ? "changed" : "", "data-pod": row.pod },
        el("td", {}, el("a", { href: `#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, row.pod)),
        el("td", {}, row.schedulerName),
        el("td", { class: "today" }, verdict(row.today)),
        el("td", { class: "tried" }, verdict(row.tried)),
        el("td", {}, row.changed ? "changed" : "same"));
    });
    return el("table", { class: "grid" }, el("thead", {}, head), el("tbody", {}, rows));
  }

  async function tryIt() {
    show("Running both scheduling cycles for the Pending pods…", true);
    results.replaceChildren();
    const pods = podsInput.value.split(",").map((s) => s.trim()).filter(Boolean);
    const response = await uiCall("POST", "/ui/scheduler/try", JSON.stringify({ yaml: editor.value, pods }));
    const body = await response.json();
    if (stopped) return;
    if (!response.ok) {
      let where = "";
      const line = body.line || locate(editor.value, fieldLine((body.errors || [body.message])[0]));
      if (line) { pointAt(line); where = ` (line ${line})`; }
      show(`${body.message}${where}`, false);
      return;
    }
    const changed = body.evaluated.filter((r) => r.changed).length;
    const more = body.truncated ? ` (the first ${body.evaluated.length} of ${body.pending})` : "";
    show(`${body.evaluated.length} Pending pod(s) evaluated${more}; ${changed} would go elsewhere. Nothing was bound.`, true);
    if (body.evaluated.length) results.append(table(body));
  }

  container.append(el("section", { class: "scheduler" },
    el("h1", {}, "Scheduler"),
    source,
    el("h2", {}, "Running profiles"),
    profiles,
    el("h2", {}, "Try a configuration"),
    el("p", { class: "hint" }, "Edit the KubeSchedulerConfiguration and try it: every Pending pod (or the ones you name) is scheduled on paper with today's configuration and with this one, on the same snapshot of the cluster. Nothing is bound."),
    el("label", { for: "sched-yaml" }, "KubeSchedulerConfiguration (YAML)"),
    editor,
    el("div", { class: "inline" },
      el("label", { for: "try-pods" }, "Pods (namespace/name, comma-separated; empty: every Pending pod) "), podsInput),
    el("div", { class: "actions" },
      el("button", { type: "button", id: "try", onclick: tryIt }, "Try"),
      el("button", { type: "button", id: "reset", onclick: () => { editor.value = running; } }, "Reset to running")),
    message,
    results));
  load().catch((err) => { source.textContent = err.message; });
  return () => { stopped = true; };
}
