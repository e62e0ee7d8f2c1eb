// A small SVG line chart for the Runs view (no library): lines over a shared time axis (simulated seconds), with
//  - zoom: drag across the plot to select a time range; double-click (or the "Reset zoom" button, or the 0 key)
//    resets; keyboard: focus the plot, ←/→ move a cursor sample by sample, + / - zoom in / out around it;
//  - hover (or the keyboard cursor): a guide line and a tooltip with each visible series' value at that time;
//  - a legend of checkboxes, one per series, that show / hide its line;
//  - markers: the scenario's actions as dashed vertical lines with their number and label, on every chart.
// The y axis fits the visible lines in the visible range. Everything is built with DOM calls (no innerHTML, no
// inline style attributes: the page's CSP forbids them), so text from the run's files is inserted as text.
import { el } from "./api.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 760, H = 260;
const M = { left: 64, right: 16, top: 28, bottom: 34 };
// Line colours with >= 3:1 contrast on white (WCAG 1.4.11 for graphics); the dash patterns tell labels apart too.
export const COLOURS = ["#0550ae", "#bc4c00", "#116329", "#8250df", "#a40e26", "#1b7c83", "#7d4e00", "#57606a"];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// Time unit as the report's axes read (kubeplane.sim.plots.time_unit): h past 3 h, min past 10 min, else s.
export function timeUnit(maxT) {
  if (maxT > 3 * 3600) return ["h", 3600];
  if (maxT > 600) return ["min", 60];
  return ["s", 1];
}

export function niceTicks(lo, hi, count = 6) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
  return ticks;
}

export function formatValue(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (typeof v !== "number") return typeof v === "object" ? JSON.stringify(v) : String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en");
  if (Math.abs(v) >= 1e4) return v.toLocaleString("en", { maximumFractionDigits: 1 });
  return String(+v.toPrecision(4));
}

// Index of the sample of sorted `xs` nearest to x.
export function nearest(xs, x) {
  let lo = 0, hi = xs.length - 1;
  if (hi < 0) return -1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid; else hi = mid;
  }
  return Math.abs(xs[hi] - x) < Math.abs(xs[lo] - x) ? hi : lo;
}

// spec: { id, title, series: [{ name, x: [t...], y: [v|null...], colour?, dash? }], markers: [{ number, t, label }] }
// Returns { element, setRange(lo, hi), reset(), range() }.
export function lineChart(spec) {
  const series = spec.series.map((s, i) => ({
    ...s, colour: s.colour || COLOURS[i % COLOURS.length], dash: s.dash ?? "", visible: true,
  }));
  const allX = series.flatMap((s) => s.x);
  const full = [Math.min(...allX, ...spec.markers.map((m) => m.t)), Math.max(...allX, ...spec.markers.map((m) => m.t))];
  if (!(full[1] > full[0])) full[1] = full[0] + 1;
  const [unit, scale] = timeUnit(full[1]);
  let domain = [...full];
  let cursor = null; // the keyboard cursor's time

  const titleId = `chart-${spec.id}-title`;
  const plot = svg("svg", {
    viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "img", tabindex: "0", "aria-labelledby": titleId,
    "aria-describedby": `chart-${spec.id}-help`, "data-chart": spec.id,
  });
  const tooltip = el("div", { class: "chart-tooltip", role: "status", "aria-live": "polite", hidden: true });
  const rangeText = el("span", { class: "chart-range", "data-range": "" });
  const resetButton = el("button", { type: "button", class: "chart-reset", onclick: () => reset() }, "Reset zoom");
  const legend = el("fieldset", { class: "chart-legend" }, el("legend", {}, "Series"));
  series.forEach((s, i) => {
    const id = `chart-${spec.id}-s${i}`;
    const box = el("input", { type: "checkbox", id, checked: true, "data-series": s.name });
    box.addEventListener("change", () => { s.visible = box.checked; draw(); });
    const swatch = svg("svg", { class: "swatch", viewBox: "0 0 24 8", "aria-hidden": "true" },
      svg("line", { x1: 0, y1: 4, x2: 24, y2: 4, stroke: s.colour, "stroke-width": 3, "stroke-dasharray": s.dash }));
    legend.append(el("label", { for: id, class: "chart-series" }, box, swatch, s.name));
  });
  const element = el("figure", { class: "chart", id: `chart-${spec.id}` },
    el("figcaption", { id: titleId }, spec.title),
    el("div", { class: "chart-tools" }, rangeText, resetButton),
    el("div", { class: "chart-area" }, plot, tooltip),
    legend,
    el("p", { class: "hint chart-help", id: `chart-${spec.id}-help` },
      "Drag across the plot to zoom, double-click to reset. Keyboard: focus the plot, ← → move, + − zoom, 0 resets."));

  const px = (t) => M.left + ((t - domain[0]) / (domain[1] - domain[0])) * (W - M.left - M.right);
  const tAt = (x) => domain[0] + ((x - M.left) / (W - M.left - M.right)) * (domain[1] - domain[0]);
  let yRange = [0, 1];
  const py = (v) => H - M.bottom - ((v - yRange[0]) / (yRange[1] - yRange[0])) * (H - M.top - M.bottom);
  const fmtT = (t) => `${formatValue(+(t / scale).toPrecision(6))} ${unit}`;

  function fitY() {
    let lo = 0, hi = -Infinity;
    for (const s of series) {
      if (!s.visible) continue;
      s.x.forEach((t, i) => {
        const v = s.y[i];
        if (v === null || t < domain[0] || t > domain[1]) return;
        if (v > hi) hi = v;
        if (v < lo) lo = v;
      });
    }
    if (!(hi > lo)) hi = lo + 1;
    const ticks = niceTicks(lo, hi, 5);
    yRange = [Math.min(lo, ticks[0]), Math.max(hi, ticks[ticks.length - 1])];
    return ticks;
  }

  function draw() {
    const yTicks = fitY();
    const clipId = `clip-${spec.id}`;
    const parts = [
      svg("defs", {}, svg("clipPath", { id: clipId },
        svg("rect", { x: M.left, y: M.top, width: W - M.left - M.right, height: H - M.top - M.bottom }))),
    ];
    const axis = svg("g", { class: "axis" });
    for (const v of yTicks) {
      axis.append(svg("line", { x1: M.left, x2: W - M.right, y1: py(v), y2: py(v), class: "grid-line" }));
      axis.append(svg("text", { x: M.left - 6, y: py(v) + 4, "text-anchor": "end" }, formatValue(v)));
    }
    for (const t of niceTicks(domain[0] / scale, domain[1] / scale, 8)) {
      const x = px(t * scale);
      axis.append(svg("line", { x1: x, x2: x, y1: H - M.bottom, y2: H - M.bottom + 4, class: "tick" }));
      axis.append(svg("text", { x, y: H - M.bottom + 16, "text-anchor": "middle" }, formatValue(t)));
    }
    axis.append(svg("text", { x: W - M.right, y: H - 4, "text-anchor": "end", class: "axis-label" }, `time (${unit})`));
    axis.append(svg("line", { x1: M.left, x2: W - M.right, y1: H - M.bottom, y2: H - M.bottom, class: "baseline" }));
    parts.push(axis);
    const lines = svg("g", { class: "lines", "clip-path": `url(#${clipId})` });
    for (const s of series) {
      if (!s.visible) continue;
      let d = "", pen = false;
      s.x.forEach((t, i) => {
        const v = s.y[i];
        if (v === null) { pen = false; return; }
        d += `${pen ? "L" : "M"}${px(t).toFixed(1)},${py(v).toFixed(1)}`;
        pen = true;
      });
      lines.append(svg("path", {
        d, fill: "none", stroke: s.colour, "stroke-width": 2, "stroke-dasharray": s.dash, class: "series-line",
        "data-series": s.name,
      }));
    }
    parts.push(lines);
    const marks = svg("g", { class: "markers" });
    for (const m of spec.markers) {
      if (m.t < domain[0] || m.t > domain[1]) continue;
      const x = px(m.t);
      marks.append(svg("g", { class: "marker", "data-action": m.number },
        svg("title", {}, `${m.number}: ${m.label} at ${fmtT(m.t)}`),
        svg("line", { x1: x, x2: x, y1: M.top, y2: H - M.bottom }),
        svg("text", { x: x + 3, y: M.top - 6, class: "marker-number" }, String(m.number)),
        svg("text", { x: x - 4, y: M.top + 4, class: "marker-label", transform: `rotate(-90 ${x - 4} ${M.top + 4})`,
          "text-anchor": "end" }, m.label.length > 28 ? m.label.slice(0, 27) + "…" : m.label)));
    }
    parts.push(marks);
    parts.push(svg("line", { class: "guide", x1: 0, x2: 0, y1: M.top, y2: H - M.bottom, visibility: "hidden" }));
    parts.push(svg("rect", { class: "selection", x: 0, y: M.top, width: 0, height: H - M.top - M.bottom, visibility: "hidden" }));
    plot.replaceChildren(...parts);
    const zoomed = domain[0] !== full[0] || domain[1] !== full[1];
    rangeText.textContent = `${zoomed ? "Zoomed to" : "Showing"} ${fmtT(domain[0])} – ${fmtT(domain[1])}`;
    rangeText.dataset.range = `${domain[0]},${domain[1]}`;
    resetButton.disabled = !zoomed;
    if (cursor !== null) show(cursor);
  }

  function show(t) {
    const guide = plot.querySelector(".guide");
    if (t === null || t < domain[0] || t > domain[1]) { guide.setAttribute("visibility", "hidden"); tooltip.hidden = true; return; }
    const visible = series.filter((s) => s.visible && s.x.length);
    if (!visible.length) { tooltip.hidden = true; return; }
    const ref = visible[0];
    const at = ref.x[nearest(ref.x, t)];
    guide.setAttribute("x1", px(at)); guide.setAttribute("x2", px(at));
    guide.setAttribute("visibility", "visible");
    const rows = visible.map((s) => {
      const i = nearest(s.x, at);
      return el("li", { "data-series": s.name }, el("span", { class: "tip-name" }, s.name), " ", formatValue(s.y[i]));
    });
    tooltip.replaceChildren(el("strong", {}, `t = ${fmtT(at)}`), el("ul", {}, rows));
    tooltip.hidden = false;
    const left = (px(at) / W) * plot.getBoundingClientRect().width;
    tooltip.classList.toggle("flip", px(at) > W * 0.6);
    tooltip.style.setProperty("--x", `${Math.round(left)}px`);
  }

  function toViewX(event) {
    const box = plot.getBoundingClientRect();
    return ((event.clientX - box.left) / box.width) * W;
  }
  const clampX = (x) => Math.max(M.left, Math.min(W - M.right, x));
  let dragFrom = null;
  plot.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    dragFrom = clampX(toViewX(e));
    plot.setPointerCapture(e.pointerId);
  });
  plot.addEventListener("pointermove", (e) => {
    const x = clampX(toViewX(e));
    if (dragFrom !== null) {
      const sel = plot.querySelector(".selection");
      sel.setAttribute("x", Math.min(dragFrom, x)); sel.setAttribute("width", Math.abs(x - dragFrom));
      sel.setAttribute("visibility", "visible");
    }
    cursor = null;
    show(tAt(x));
  });
  plot.addEventListener("pointerleave", () => { if (cursor === null) show(null); });
  plot.addEventListener("pointerup", (e) => {
    if (dragFrom === null) return;
    const x = clampX(toViewX(e));
    const from = dragFrom;
    dragFrom = null;
    plot.querySelector(".selection").setAttribute("visibility", "hidden");
    if (Math.abs(x - from) >= 6) setRange(tAt(Math.min(from, x)), tAt(Math.max(from, x)));
  });
  plot.addEventListener("dblclick", () => reset());
  plot.addEventListener("keydown", (e) => {
    const xs = (series.find((s) => s.visible) || series[0] || { x: [] }).x;
    if (!xs.length) return;
    const i = cursor === null ? nearest(xs, (domain[0] + domain[1]) / 2) : nearest(xs, cursor);
    const span = domain[1] - domain[0];
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      const j = Math.max(0, Math.min(xs.length - 1, i + (e.key === "ArrowRight" ? 1 : -1)));
      cursor = xs[j];
      if (cursor > domain[1] || cursor < domain[0]) setRange(cursor - span / 2, cursor + span / 2);
      else show(cursor);
    } else if (e.key === "+" || e.key === "=") {
      const c = cursor ?? (domain[0] + domain[1]) / 2;
      setRange(c - span / 4, c + span / 4);
    } else if (e.key === "-" || e.key === "_") {
      const c = cursor ?? (domain[0] + domain[1]) / 2;
      setRange(c - span, c + span);
    } else if (e.key === "0" || e.key === "Home") {
      reset();
    } else if (e.key === "Escape") {
      cursor = null; show(null);
    } else return;
    e.preventDefault();
  });
  plot.addEventListener("blur", () => { cursor = null; show(null); });

  function setRange(lo, hi) {
    lo = Math.max(full[0], lo); hi = Math.min(full[1], hi);
    if (!(hi - lo > (full[1] - full[0]) * 1e-6)) return;
    domain = [lo, hi];
    draw();
  }
  function reset() { domain = [...full]; draw(); }
  draw();
  return { element, setRange, reset, range: () => [...domain] };
}
