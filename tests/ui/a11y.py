"""A small accessibility audit of whatever view a Playwright page shows: ``audit(page) -> list[str]`` (one line per
problem, empty when clean). Generic on purpose (no selector of a particular view), so every view — including
ones added later — is audited the same way.

Checks (WCAG 2.2 AA subset, named after axe-core's rules where one exists):

* ``name``: every interactive element (links, buttons, form fields, ``[tabindex]``, ARIA widget roles) has an
  accessible name, as Chromium computes it (CDP ``Accessibility.getFullAXTree``, the same tree screen readers get);
* ``label``: every form field is labelled by a ``<label>``, ``aria-label``/``aria-labelledby`` or ``title`` — a
  placeholder alone is not a label (it disappears when one types);
* ``image-alt``: every ``<img>`` has an ``alt`` (may be empty for decoration); ``role="img"`` has a name;
* ``tabindex``: no positive ``tabindex`` (it breaks the document's tab order);
* ``contrast``: every visible text's colour against its effective background (the first opaque ancestor
  background, alpha-blended) is at least 4.5:1 (WCAG's relative luminance formula), disabled controls excepted;
* ``landmarks``: the document has ``lang``, a ``<title>``, exactly one ``main`` landmark, a level-one heading, and
  no visible content outside landmarks (axe's ``region``);
* ``focus-visible``: walking the page with Tab (up to ``max_tabs`` stops), every focused element shows a focus
  indicator (an outline or a box-shadow different from its unfocused style).
"""

from __future__ import annotations

from typing import Any

MIN_CONTRAST = 4.5

INTERACTIVE_ROLES = frozenset(
    {"link", "button", "textbox", "searchbox", "combobox", "checkbox", "radio", "spinbutton", "slider", "switch",
     "tab", "menuitem", "option", "listbox"}
)  # fmt: skip

_DOM_CHECKS = r"""
() => {
  const problems = [];
  const visible = (el) => {
    if (!(el instanceof Element)) return false;
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none"
      && !el.closest("[hidden],[aria-hidden=true]");
  };
  const describe = (el) => {
    let d = el.tagName.toLowerCase();
    if (el.id) d += "#" + el.id;
    else if (el.className && typeof el.className === "string") d += "." + el.className.trim().split(/\s+/).join(".");
    const text = (el.getAttribute("aria-label") || el.textContent || "").trim().slice(0, 40);
    return text ? `${d} "${text}"` : d;
  };
  // tabindex
  for (const el of document.querySelectorAll("[tabindex]")) {
    if (parseInt(el.getAttribute("tabindex"), 10) > 0) problems.push(`tabindex: positive tabindex on ${describe(el)}`);
  }
  // labels
  for (const el of document.querySelectorAll("input, select, textarea")) {
    const type = (el.getAttribute("type") || "").toLowerCase();
    if (["hidden", "submit", "button", "reset", "image"].includes(type) || !visible(el)) continue;
    const labelled = el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || el.getAttribute("title") ||
      (el.labels && [...el.labels].some((l) => l.textContent.trim()));
    if (!labelled) problems.push(`label: form field without a label: ${describe(el)}`);
  }
  // images
  for (const el of document.querySelectorAll("img")) {
    if (!el.hasAttribute("alt")) problems.push(`image-alt: <img> without alt: ${el.getAttribute("src")}`);
  }
  // landmarks
  if (!document.documentElement.getAttribute("lang")) problems.push("landmarks: <html> has no lang");
  if (!document.title.trim()) problems.push("landmarks: the document has no <title>");
  const mains = [...document.querySelectorAll("main, [role=main]")].filter(visible);
  if (mains.length !== 1) problems.push(`landmarks: ${mains.length} main landmarks (want exactly 1)`);
  if (![...document.querySelectorAll("h1, [role=heading][aria-level='1']")].some((h) => h.textContent.trim())) {
    problems.push("landmarks: no level-one heading");
  }
  const LANDMARK = "header, nav, main, footer, aside, [role=banner], [role=navigation], [role=main], "
    + "[role=contentinfo], [role=complementary], [role=region], dialog, [role=dialog], [role=alertdialog]";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const outside = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim() || !visible(n.parentElement)) continue;
    if (!n.parentElement.closest(LANDMARK)) outside.add(n.parentElement);
  }
  for (const el of outside) problems.push(`landmarks: content outside any landmark: ${describe(el)}`);
  // contrast
  const parse = (c) => {
    const m = /rgba?\(([\d.]+)[, ]+([\d.]+)[, ]+([\d.]+)(?:[, /]+([\d.]+%?))?\)/.exec(c);
    if (!m) return null;
    let a = m[4] === undefined ? 1 : m[4].endsWith("%") ? parseFloat(m[4]) / 100 : parseFloat(m[4]);
    return [parseFloat(m[1]), parseFloat(m[2]), parseFloat(m[3]), a];
  };
  const blend = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.backgroundImage && s.backgroundImage !== "none") return null; // an image: not computable
      const c = parse(s.backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = blend(c, bg);
    return bg;
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const seen = new Set();
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = texts.nextNode(); n; n = texts.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || seen.has(el) || !visible(el)) continue;
    seen.add(el);
    if (el.closest("button:disabled, input:disabled, select:disabled, textarea:disabled, option")) continue;
    const s = getComputedStyle(el);
    const bg = background(el);
    const fg0 = parse(s.color);
    if (!bg || !fg0) continue;
    const fg = blend(fg0, bg);
    const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = (l1 + 0.05) / (l2 + 0.05);
    const on = `rgb(${bg.slice(0, 3).map(Math.round).join(", ")})`;
    if (ratio < MIN) problems.push(`contrast: ${ratio.toFixed(2)}:1 (< ${MIN}:1) ${s.color} on ${on}: ${describe(el)}`);
  }
  // form fields' own text (values) against their background
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (!visible(el) || el.disabled) continue;
    const bg = background(el), fg0 = parse(getComputedStyle(el).color);
    if (!bg || !fg0) continue;
    const [l1, l2] = [luminance(blend(fg0, bg)), luminance(bg)].sort((a, b) => b - a);
    const ratio = (l1 + 0.05) / (l2 + 0.05);
    if (ratio < MIN) problems.push(`contrast: ${ratio.toFixed(2)}:1 (< ${MIN}:1) in field ${describe(el)}`);
  }
  return problems;
}
""".replace("MIN", str(MIN_CONTRAST))

_FOCUS_STYLE = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const s = getComputedStyle(el);
  const text = (el.getAttribute("aria-label") || el.textContent || "").trim().slice(0, 40);
  const d = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (text ? ` "${text}"` : "");
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
  const shadow = s.boxShadow && s.boxShadow !== "none";
  return { describe: d, shown: outline || shadow };
}
"""


def _names(page: Any) -> list[str]:
    """Interactive AX nodes without a name, from Chromium's own accessibility tree."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        problems = []
        for node in nodes:
            if node.get("ignored"):
                continue
            role = (node.get("role") or {}).get("value", "")
            name = str((node.get("name") or {}).get("value", "")).strip()
            needs = role in ("image", "img") or role in INTERACTIVE_ROLES
            if not needs or name:
                continue
            described = role
            backend = node.get("backendDOMNodeId")
            if backend is not None:
                dom = cdp.send("DOM.describeNode", {"backendNodeId": backend})["node"]
                attrs = dom.get("attributes", [])
                pairs = dict(zip(attrs[::2], attrs[1::2], strict=False))
                described = f"{role} <{dom.get('localName', '?')}" + (f" id={pairs['id']}" if "id" in pairs else "")
                described += (f" class={pairs['class']}" if "class" in pairs else "") + ">"
            problems.append(f"name: {described} has no accessible name")
        return problems
    finally:
        cdp.detach()


def focus_walk(page: Any, max_tabs: int = 60) -> tuple[list[str], list[str]]:
    """Tab through the page from the top; returns (the focused elements in order, focus-visible problems)."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    order: list[str] = []
    problems: list[str] = []
    for _ in range(max_tabs):
        page.keyboard.press("Tab")
        state = page.evaluate(_FOCUS_STYLE)
        if state is None:
            break
        if order and state["describe"] == order[0] and len(order) > 1:
            break  # wrapped around
        order.append(state["describe"])
        if not state["shown"]:
            problems.append(f"focus-visible: no focus indicator on {state['describe']}")
    return order, problems


def audit(page: Any, *, max_tabs: int = 60) -> list[str]:
    """Every problem found on the page as it is now (see the module docstring); [] when clean."""
    problems: list[str] = list(page.evaluate(_DOM_CHECKS))
    problems += _names(page)
    problems += focus_walk(page, max_tabs)[1]
    return sorted(dict.fromkeys(problems))
