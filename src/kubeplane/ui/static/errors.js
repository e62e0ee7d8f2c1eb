// A failed API call shown as the Status the server sent (code, reason, message and, for a 422, each cause's field
// and message), so errors with no field path (a 409 Conflict, a 422 with only a message, a 404) read as clearly as
// those with one. `where(field) -> line` lets the editor point at the YAML line of a cause's field.
import { el, APIError } from "./api.js";

export function statusOf(err) {
  if (err instanceof APIError) {
    const b = err.body || {};
    return { code: err.status, reason: b.reason || "", message: b.message || err.message, causes: (b.details && b.details.causes) || [] };
  }
  return { code: 0, reason: "", message: err.message || String(err), causes: [] };
}

export function errorBox(err, where = () => 0, suffix = "") {
  const s = statusOf(err);
  const head = s.code ? `Error ${s.code}${s.reason ? " " + s.reason : ""}` : "Error";
  const causes = s.causes.filter((c) => c.field || c.message);
  // one cause that only repeats the message adds nothing
  const extra = causes.filter((c) => !(causes.length === 1 && !c.field && s.message.includes(c.message || "")));
  return el("div", { class: "error-box", role: "alert" },
    el("div", { class: "code" }, head),
    extra.length ? el("ul", { class: "causes" }, extra.map((c) => {
      const line = c.field ? where(c.field) : 0;
      return el("li", {}, c.field ? `${c.field}: ` : "", c.message || c.reason || "", line ? el("span", { class: "where" }, ` (line ${line})`) : null);
    })) : null,
    el("div", { class: "msg" }, s.message + suffix));
}
