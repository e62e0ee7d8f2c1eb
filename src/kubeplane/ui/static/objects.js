// Objects: a YAML editor (a textarea) to load, create, edit, apply and delete any object, with the API server's
// own validation. Apply sends what `kubectl replace --validate=strict` / `kubectl create --validate=strict` send:
// the YAML converted to JSON (server-side, /ui/yaml/parse), then PUT to the object when it exists, else POST to
// its collection, with fieldValidation=Strict, so an unknown or duplicate field is the server's 400
// ("strict decoding error: ...") and nothing is written; a field error is pointed at in the editor by line.
import { el, request, uiCall, APIError } from "./api.js";
import { confirmDialog, deletedLine } from "./confirm.js";
import { errorBox } from "./errors.js";

let discovery = null;

async function resourceFor(apiVersion, kind) {
  // kind -> {path prefix, plural, namespaced} from the API's discovery (as kubectl's RESTMapper).
  if (!discovery) discovery = new Map();
  const groupVersion = apiVersion || "v1";
  if (!discovery.has(groupVersion)) {
    const path = groupVersion.includes("/") ? `/apis/${groupVersion}` : `/api/${groupVersion}`;
    const list = await request("GET", path);
    discovery.set(groupVersion, { path, resources: list.resources.filter((r) => !r.name.includes("/")) });
  }
  const d = discovery.get(groupVersion);
  const r = d.resources.find((x) => x.kind === kind);
  if (!r) throw new Error(`the server doesn't have a resource type for kind "${kind}" in ${groupVersion}`);
  return { prefix: d.path, plural: r.name, namespaced: r.namespaced };
}

export async function objectPath(obj) {
  const r = await resourceFor(obj.apiVersion, obj.kind);
  const ns = r.namespaced ? (obj.metadata && obj.metadata.namespace) || "default" : "";
  const collection = `${r.prefix}${ns ? `/namespaces/${encodeURIComponent(ns)}` : ""}/${r.plural}`;
  const name = obj.metadata && obj.metadata.name;
  return { collection, item: name ? `${collection}/${encodeURIComponent(name)}` : "", plural: r.plural };
}

export function fieldLine(message) {
  const m = /unknown field "([^"]+)"|duplicate field "([^"]+)"|^([a-zA-Z0-9_.[\]]+): /.exec(message || "");
  return m ? m[1] || m[2] || m[3] : "";
}

export function mount(container, params) {
  const pathInput = el("input", { id: "object-path", size: "60", value: params.path || "", "aria-label": "object path",
    placeholder: "/api/v1/namespaces/default/pods/NAME" });
  const editor = el("textarea", { id: "yaml", spellcheck: "false", rows: "28", cols: "100", "aria-label": "YAML" });
  const message = el("div", { id: "object-message", class: "message", role: "status", "aria-live": "polite" });
  const show = (text, ok) => { message.className = `message ${ok ? "ok" : "error"}`; message.textContent = text; };
  // A failure: what succeeded before it (one line each), then the server's Status (errors.js).
  const fail = (err, done = [], suffix = "", where = () => 0) => {
    message.className = "message error";
    message.replaceChildren(...done.map((d) => el("div", {}, d)), errorBox(err, where, suffix));
  };

  async function load() {
    try {
      const obj = await request("GET", pathInput.value.trim());
      if (obj.metadata) delete obj.metadata.managedFields;
      const response = await uiCall("POST", "/ui/yaml/dump", JSON.stringify(obj));
      editor.value = await response.text();
      show(`loaded ${pathInput.value.trim()}`, true);
    } catch (err) { fail(err); }
  }

  async function parse() {
    const response = await uiCall("POST", "/ui/yaml/parse", editor.value, "application/yaml");
    const body = await response.json();
    if (!response.ok) {
      if (body.line) pointAt(body.line);
      // a YAML syntax error: the parser's message at its line (kubectl: "error converting YAML to JSON: yaml: line N: ...")
      throw new Error(body.line ? `YAML line ${body.line}: ${body.message}` : body.message);
    }
    return body.objects;
  }

  function pointAt(line) {
    const lines = editor.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    editor.focus();
    editor.setSelectionRange(start, start + (lines[line - 1] || "").length);
  }

  async function apply() {
    let done = [];
    try {
      for (const obj of await parse()) {
        const p = await objectPath(obj);
        let exists = false;
        if (p.item) {
          try { await request("GET", p.item); exists = true; } catch (err) { if (!(err instanceof APIError) || err.status !== 404) throw err; }
        }
        const query = { fieldValidation: "Strict", fieldManager: "kubeplane-ui" };
        const saved = exists ? await request("PUT", p.item, { body: obj, query }) : await request("POST", p.collection, { body: obj, query });
        done.push(`${p.plural}/${saved.metadata.name} ${exists ? "replaced" : "created"}`);
        pathInput.value = `${p.collection}/${saved.metadata.name}`;
      }
      show(done.join("\n") || "nothing to apply", true);
    } catch (err) {
      const field = fieldLine(err.message);
      let where = "";
      if (field) {
        const line = locate(editor.value, field);
        if (line) { pointAt(line); where = ` (line ${line})`; }
      }
      fail(err, done, where, (f) => locate(editor.value, f));
    }
  }

  async function remove() {
    try {
      const [obj] = await parse();
      const p = await objectPath(obj);
      const ns = obj.metadata.namespace ? ` in namespace ${obj.metadata.namespace}` : "";
      if (!(await confirmDialog(`Delete ${obj.kind} "${obj.metadata.name}"${ns}? This cannot be undone.`))) {
        show("delete cancelled", true);
        return;
      }
      await request("DELETE", p.item);
      show(deletedLine(obj.apiVersion, obj.kind, obj.metadata.name), true);
    } catch (err) { fail(err); }
  }

  container.append(el("section", { class: "objects" },
    el("h1", {}, "Objects"),
    el("form", { class: "inline", id: "load-form", onsubmit: (e) => { e.preventDefault(); load(); } },
      el("label", { for: "object-path" }, "API path "), pathInput, el("button", { type: "submit" }, "Load")),
    el("p", { class: "hint" }, "Edit the YAML and apply: the object is replaced if it exists, created if not (strict field validation). Several documents separated by --- are applied in order."),
    editor,
    el("div", { class: "actions" },
      el("button", { type: "button", id: "apply", onclick: apply }, "Apply"),
      el("button", { type: "button", id: "delete", class: "danger", onclick: remove }, "Delete")),
    message));
  if (params.path) load();
}

export function locate(text, path) {
  // The 1-based line of a dotted field path (spec.containers[0].foo -> keys spec, containers, foo) by indentation.
  const keys = path.replace(/^\./, "").split(".").map((k) => k.replace(/\[.*\]$/, "")).filter(Boolean);
  const lines = text.split("\n");
  let start = 0, indent = -1, found = -1;
  for (const key of keys) {
    found = -1;
    for (let i = start; i < lines.length; i++) {
      const raw = lines[i];
      if (!raw.trim() || raw.trim().startsWith("#")) continue;
      const level = raw.length - raw.replace(/^[ -]*/, "").length;
      if (i > start && level <= indent && !raw.trimStart().startsWith("-")) break;
      const stripped = raw.replace(/^[ -]*/, "");
      if (level > indent && (stripped.startsWith(`${key}:`) || stripped.startsWith(`"${key}":`))) { found = i; start = i + 1; indent = level; break; }
    }
    if (found < 0) return 0;
  }
  return found + 1;
}
