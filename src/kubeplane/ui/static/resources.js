// Quantities and pod requests, as the scheduler's NodeResourcesFit counts them: a pod requests the larger of the
// sum of its containers and each init container (restartable init containers, "sidecars", add to both), plus
// its overhead. CPU in millicores, everything else in base units. Terminal pods (Succeeded/Failed) request nothing.

const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6,
};

export function parseQuantity(text) {
  if (text === undefined || text === null) return 0;
  const s = String(text).trim();
  const m = /^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$/.exec(s);
  if (!m) return 0;
  const base = parseFloat(m[1]) * (m[2] ? 10 ** parseInt(m[2], 10) : 1);
  const mult = SUFFIX[m[3]];
  return mult === undefined ? 0 : base * mult;
}

export function amount(resource, value) {
  return resource === "cpu" ? Math.round(parseQuantity(value) * 1000) : parseQuantity(value);
}

function addInto(total, requests) {
  for (const [name, v] of Object.entries(requests || {})) total[name] = (total[name] || 0) + amount(name, v);
}

export function podRequests(spec) {
  const sum = {};
  for (const c of spec.containers || []) addInto(sum, c.resources && c.resources.requests);
  let sidecars = {};
  for (const c of spec.initContainers || []) {
    const req = {};
    addInto(req, c.resources && c.resources.requests);
    if (c.restartPolicy === "Always") {
      addInto(sidecars, Object.fromEntries(Object.entries((c.resources || {}).requests || {})));
      for (const [k, v] of Object.entries(req)) sum[k] = (sum[k] || 0) + v;
    } else {
      for (const [k, v] of Object.entries(req)) {
        const need = v + (sidecars[k] || 0);
        if (need > (sum[k] || 0)) sum[k] = need;
      }
    }
  }
  for (const [name, v] of Object.entries(spec.overhead || {})) sum[name] = (sum[name] || 0) + amount(name, v);
  return sum;
}

export function formatAmount(resource, value) {
  if (resource === "cpu") return value >= 1000 && value % 1000 === 0 ? `${value / 1000}` : `${value}m`;
  if (resource === "memory" || resource.endsWith("storage")) {
    const units = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let i = 0;
    while (value >= 1024 && i < units.length - 1) { value /= 1024; i++; }
    return `${Math.round(value * 10) / 10}${units[i]}`;
  }
  return `${Math.round(value * 100) / 100}`;
}
