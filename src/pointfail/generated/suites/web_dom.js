// Read back every visible element a point could land on, in the current viewport.
// Returns a list of {category, role, text, region, box:[x0,y0,x1,y1], full_box, rects, ...}: boxes in
// continuous viewport pixels (pixel column i covers [i, i+1)), outward-rounded to whole pixels;
// `box` is clipped to the viewport [0, W] x [0, H], `full_box` is not.
// Called by pointfail.generated.suites.web after scrolling; no page state is changed.
() => {
  const W = window.innerWidth, H = window.innerHeight;
  const norm = (s) => (s || "").replace(/\s+/g, " ").trim();
  const REGION_RULES = [
    [".sphinxsidebar, aside, [role=complementary]", "sidebar"],
    ["nav, [role=navigation], .related, .menu, .nav, .menubar", "navigation bar"],
    ["header, .header, #header", "page header"],
    ["footer, .footer, #footer", "footer"],
  ];
  const regionOf = (el) => {
    for (const [sel, name] of REGION_RULES) if (el.closest(sel)) return name;
    return "main text";
  };
  const visible = (el) => {
    const cs = getComputedStyle(el);
    if (cs.visibility !== "visible" || cs.display === "none" || parseFloat(cs.opacity) === 0) return false;
    return true;
  };
  const KINDS = [
    ["a[href]", "link", "link"],
    ["button, input[type=submit], input[type=button]", "button", "button"],
    ["input[type=text], input[type=search], input:not([type]), textarea, select", "input", "input"],
    ["h1, h2, h3, h4, h5, h6", "heading", "heading"],
    ["td, th", "cell", "cell"],
    ["code, span.pre, tt, kbd", "text", "code"],
    ["p, dd > p, li > p", "text", "paragraph"],
    ["pre", "text", "code_block"],
  ];
  // Headings and paragraphs are block boxes as wide as their column; their visible extent is the
  // text, so their box is the text range's bounding box (what a person would draw around them).
  const TEXT_EXTENT = new Set(["heading", "paragraph"]);
  const out = [];
  const seen = new Set();
  for (const [sel, category, role] of KINDS) {
    for (const el of document.querySelectorAll(sel)) {
      if (seen.has(el)) continue;
      if (role === "code" && el.closest("a[href]")) continue;       // the link is the element
      if (role === "code" && el.parentElement && el.parentElement.closest("code, span.pre, tt")) continue;
      if (!visible(el)) continue;
      let r = el.getBoundingClientRect();
      if (TEXT_EXTENT.has(role)) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const tr = range.getBoundingClientRect();
        if (tr.width > 0 && tr.height > 0) r = tr;
      }
      if (r.width <= 0 || r.height <= 0) continue;
      if (r.right <= 0 || r.bottom <= 0 || r.left >= W || r.top >= H) continue;
      const x0 = Math.max(0, Math.floor(r.left)), y0 = Math.max(0, Math.floor(r.top));
      const x1 = Math.min(W, Math.ceil(r.right)), y1 = Math.min(H, Math.ceil(r.bottom));
      if (x1 <= x0 || y1 <= y0) continue;
      // occlusion: the element (or a descendant) must be what a click at its centre reaches
      const cx = (Math.max(r.left, 0) + Math.min(r.right, W)) / 2, cy = (Math.max(r.top, 0) + Math.min(r.bottom, H)) / 2;
      const hit = document.elementFromPoint(cx, cy);
      const reachable = !!hit && (hit === el || el.contains(hit) || hit.contains(el));
      let text = role === "input" ? norm(el.getAttribute("placeholder") || el.getAttribute("aria-label") || el.value || el.name)
                                  : norm(el.innerText);
      if (role === "button" && !text) text = norm(el.value);
      seen.add(el);
      out.push({
        category, role, text, region: regionOf(el), reachable,
        box: [x0, y0, x1, y1],
        full_box: [Math.floor(r.left), Math.floor(r.top), Math.ceil(r.right), Math.ceil(r.bottom)],
        rects: el.getClientRects().length,
        input_type: role === "input" ? (el.getAttribute("type") || el.tagName.toLowerCase()) : null,
        name: role === "input" ? (el.getAttribute("name") || "") : null,
      });
    }
  }
  return out;
}
