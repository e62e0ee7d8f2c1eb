// The Kubernetes API as the UI reaches it: /ui/api/<path>, with the session cookie and the X-Kubeplane-UI header
// (the server adds the session's bearer token). Lists and watches follow client-go's reflector: list (paged), then
// watch from the list's resourceVersion with bookmarks; a stream that ends resumes from the last version seen,
// a 410 Gone relists. No polling: every change arrives on a watch.

const HEADERS = { "X-Kubeplane-UI": "1" };
const FORBIDDEN_RETRY_MS = 15000;

export class APIError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function answer(response) {
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { message: text }; }
  if (response.status === 401) { window.location.assign("/ui/login"); }
  if (!response.ok) throw new APIError(response.status, body);
  return body;
}

export async function request(method, path, { body, contentType = "application/json", query } = {}) {
  const qs = query ? "?" + new URLSearchParams(query).toString() : "";
  const init = { method, headers: { ...HEADERS }, credentials: "same-origin" };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = contentType;
  }
  return answer(await fetch(`/ui/api${path}${qs}`, init));
}

export async function uiCall(method, path, body, contentType = "application/json") {
  const init = { method, headers: { ...HEADERS }, credentials: "same-origin" };
  if (body !== undefined) { init.body = body; init.headers["Content-Type"] = contentType; }
  const response = await fetch(path, init);
  if (response.status === 401) window.location.assign("/ui/login");
  return response;
}

// A live set of objects of one resource, kept by list + watch. `trim(obj)` keeps what the views need (so 50,000
// pods stay small in memory); listeners get called at most once per animation frame with the batch applied.
export class Informer {
  constructor(path, { trim = (o) => o, fieldSelector = "" } = {}) {
    this.path = path;
    this.trim = trim;
    this.fieldSelector = fieldSelector;
    this.items = new Map();
    this.listeners = new Set();
    this.synced = false;
    this.version = "";
    this._scheduled = false;
    this._stopped = false;
    // The API's 403 message while this identity may not list the path ("" when it may): a view shows it instead
    // of an empty list. Permissions can be granted later, so the list is retried every FORBIDDEN_RETRY_MS.
    this.forbidden = "";
    this._wake = null;
  }

  // Re-scope (e.g. from all namespaces to one): the items go, the loop lists and watches the new path.
  setPath(path) {
    if (path === this.path) return;
    this.path = path;
    this.version = "";
    this.items = new Map();
    this.synced = false;
    this.forbidden = "";
    this._restart = true;
    if (this._abort) this._abort.abort();
    if (this._wake) this._wake();
    this._changed();
  }

  _sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this._wake = null; resolve(); }, ms);
      this._wake = () => { clearTimeout(timer); this._wake = null; resolve(); };
    });
  }

  key(obj) {
    const m = obj.metadata;
    return m.namespace ? `${m.namespace}/${m.name}` : m.name;
  }

  subscribe(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  _changed() {
    if (this._scheduled) return;
    this._scheduled = true;
    requestAnimationFrame(() => {
      this._scheduled = false;
      for (const fn of this.listeners) fn(this);
    });
  }

  async _list() {
    const path = this.path;
    const items = new Map();
    let cont = "";
    let version = "";
    do {
      const query = { limit: "5000" };
      if (cont) query.continue = cont;
      if (this.fieldSelector) query.fieldSelector = this.fieldSelector;
      const page = await request("GET", path, { query });
      if (path !== this.path) { this._restart = false; return; } // re-scoped meanwhile: start over
      for (const obj of page.items) items.set(this.key(obj), this.trim(obj));
      cont = page.metadata.continue || "";
      version = page.metadata.resourceVersion;
    } while (cont);
    this.items = items;
    this.version = version;
    this.synced = true;
    this.forbidden = "";
    this._changed();
  }

  async start() {
    while (!this._stopped) {
      try {
        if (!this.version) {
          await this._list();
          if (!this.version) continue;
        }
        await this._watch();
      } catch (err) {
        if (this._stopped) return; // the view that owned it went away: its abort is not an error
        if (this._restart) { this._restart = false; continue; } // setPath aborted the old path's watch
        if (err instanceof APIError && err.status === 410) { this.version = ""; continue; }
        if (err instanceof APIError && err.status === 403) {
          this.forbidden = err.message;
          this.items = new Map();
          this.version = "";
          this._changed();
          await this._sleep(FORBIDDEN_RETRY_MS);
          continue;
        }
        setConnection(`watch ${this.path}: ${err.message}; retrying`);
        await this._sleep(1000);
      }
    }
  }

  stop() { this._stopped = true; if (this._abort) this._abort.abort(); }

  async _watch() {
    const query = { watch: "1", resourceVersion: this.version, allowWatchBookmarks: "true", timeoutSeconds: "300" };
    if (this.fieldSelector) query.fieldSelector = this.fieldSelector;
    this._abort = new AbortController();
    const response = await fetch(`/ui/api${this.path}?${new URLSearchParams(query)}`, {
      headers: HEADERS, credentials: "same-origin", signal: this._abort.signal,
    });
    if (!response.ok) await answer(response);
    setConnection("");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim()) this._event(JSON.parse(line));
      }
    }
  }

  _event(event) {
    const obj = event.object;
    if (event.type === "ERROR") {
      if (obj && obj.code === 410) { this.version = ""; }
      throw new APIError(obj && obj.code || 500, obj);
    }
    if (obj && obj.metadata && obj.metadata.resourceVersion) this.version = obj.metadata.resourceVersion;
    if (event.type === "BOOKMARK") return;
    if (event.type === "DELETED") this.items.delete(this.key(obj));
    else this.items.set(this.key(obj), this.trim(obj));
    this._changed();
  }
}

export function setConnection(text) {
  const el = document.getElementById("conn");
  if (el) el.textContent = text;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}
