/* pointfail view: the sample list and the sample page.
 *
 * Works from file:// and from any static server: the data arrive as script files that the page
 * loads with <script> tags (data/meta.js, data/index-NNN.js in the page; data/detail/NNNN.js on
 * demand), never with fetch(). Every text from a record is inserted with textContent.
 * Filter state lives in the URL hash, so it survives a reload and can be shared as a link.
 */
(function () {
  'use strict';
  var PF = window.PF;
  var M = PF.meta;
  PF.timing = { scripts: performance.now() };  // every data file has been parsed by now
  var SVGNS = 'http://www.w3.org/2000/svg';

  // ------------------------------------------------------------------ data
  var COLS = ['m', 'b', 'id', 'o', 'md', 'j', 'c', 'l', 'q', 'x', 'd', 't', 'sh', 'i'];
  var D = {};
  COLS.forEach(function (k) { D[k] = []; });
  PF.chunks.forEach(function (ch) { COLS.forEach(function (k) { Array.prototype.push.apply(D[k], ch[k]); }); });
  PF.chunks = null;
  var N = D.m.length;
  ['m', 'b', 'o', 'md', 'j', 'c', 'l', 'q', 'x'].forEach(function (k) { D[k] = Int32Array.from(D[k]); });
  // sample -> row and (benchmark, sample) -> rows: built on first use (the sample page needs them)
  var KEY = null, GROUP = null;
  function indexes() {
    if (KEY) return;
    KEY = new Map();
    GROUP = new Map();
    for (var i0 = 0; i0 < N; i0++) {
      KEY.set(keyOf(i0), i0);
      var gk = D.b[i0] + '\u0001' + D.id[i0];
      var grp = GROUP.get(gk);
      if (grp) grp.push(i0); else GROUP.set(gk, [i0]);
    }
  }
  PF.timing.columns = performance.now();
  function keyOf(i) { return M.dicts.model[D.m[i]] + '\u0001' + M.dicts.benchmark[D.b[i]] + '\u0001' + D.id[i]; }

  var FACETS = [
    { key: 'model', col: 'm', label: 'model', names: M.dicts.model },
    { key: 'benchmark', col: 'b', label: 'benchmark', names: M.dicts.benchmark },
    { key: 'outcome', col: 'o', label: 'outcome', names: M.outcomes },
    { key: 'mode', col: 'md', label: 'failure mode', names: M.modes },
    { key: 'judge', col: 'j', label: 'judge status', names: M.judge },
    { key: 'category', col: 'c', label: 'category', names: M.dicts.category },
    { key: 'language', col: 'l', label: 'screen language', names: M.dicts.language,
      title: 'the language of the text in the image (cell values, document words), as the benchmark tags it; ' +
        'the instructions are in English' },
    { key: 'quartile', col: 'q', label: 'target size', names: ['none', '1', '2', '3', '4'],
      labels: ['no area', 'Q1 (smallest)', 'Q2', 'Q3', 'Q4 (largest)'] },
    { key: 'across', col: 'x', label: 'across models', names: M.across, labels: M.across_labels,
      extra: { name: 'disagree', label: 'models disagree', values: [2, 3] } }
  ];
  var SORTS = { 'default': 'model, benchmark, sample', 'distance-desc': 'miss distance, largest first',
    'distance-asc': 'miss distance, smallest first' };

  // ------------------------------------------------------------------ state in the hash
  function readState() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ''));
    var st = { f: {}, sort: 'default', page: 1, at: null, rec: null, raw: p };
    FACETS.forEach(function (f) {
      var v = p.get(f.key);
      if (v === null) return;
      if (f.extra && v === f.extra.name) { st.f[f.key] = { name: v, values: f.extra.values }; return; }
      var k = f.names.indexOf(v);
      if (k >= 0) st.f[f.key] = { name: v, values: [k] };
    });
    if (SORTS[p.get('sort')]) st.sort = p.get('sort');
    var pg = parseInt(p.get('page') || '1', 10);
    st.page = isFinite(pg) && pg > 0 ? pg : 1;
    if (p.get('at') !== null) st.at = p.get('at');
    if (p.get('r.id') !== null) st.rec = [p.get('r.model'), p.get('r.benchmark'), p.get('r.id')];
    return st;
  }
  function filterParams(st, withPage) {
    var p = new URLSearchParams();
    FACETS.forEach(function (f) { if (st.f[f.key]) p.set(f.key, st.f[f.key].name); });
    if (st.sort !== 'default') p.set('sort', st.sort);
    if (withPage && st.page > 1) p.set('page', String(st.page));
    return p;
  }
  function sampleHref(i, st) {
    var p = filterParams(st, false);
    p.set('r.model', M.dicts.model[D.m[i]]);
    p.set('r.benchmark', M.dicts.benchmark[D.b[i]]);
    p.set('r.id', D.id[i]);
    return 'sample.html#' + p.toString();
  }
  function listHref(st, at) {
    var p = filterParams(st, true);
    if (at !== undefined && at !== null) p.set('at', keyOf(at));
    return 'list.html#' + p.toString();
  }

  // ------------------------------------------------------------------ filtering
  function run(st) {
    var counts = {};
    FACETS.forEach(function (f) { counts[f.key] = new Array(f.names.length).fill(0); });
    var active = FACETS.filter(function (f) { return st.f[f.key]; }).map(function (f) {
      var acc = new Uint8Array(f.names.length + 1);  // acc[value + 1]: value -1 (none) never matches
      st.f[f.key].values.forEach(function (v) { acc[v + 1] = 1; });
      return { f: f, col: D[f.col], acc: acc };
    });
    var cols = FACETS.map(function (f) { return D[f.col]; });
    var cnt = FACETS.map(function (f) { return counts[f.key]; });
    var matched = [];
    for (var i = 0; i < N; i++) {
      var fails = 0, failed = null;
      for (var a = 0; a < active.length; a++) {
        if (!active[a].acc[active[a].col[i] + 1]) { fails++; failed = active[a].f; if (fails > 1) break; }
      }
      if (fails === 0) {
        matched.push(i);
        for (var k = 0; k < cols.length; k++) { var v = cols[k][i]; if (v >= 0) cnt[k][v]++; }
      } else if (fails === 1) {
        var w = D[failed.col][i];
        if (w >= 0) counts[failed.key][w]++;
      }
    }
    if (st.sort !== 'default') {
      var sign = st.sort === 'distance-desc' ? -1 : 1;
      matched.sort(function (p, q) {
        var dp = D.d[p], dq = D.d[q];
        if (dp === null && dq === null) return p - q;
        if (dp === null) return 1;
        if (dq === null) return -1;
        return dp === dq ? p - q : sign * (dp - dq);
      });
    }
    return { matched: matched, counts: counts };
  }

  // ------------------------------------------------------------------ DOM helpers
  function h(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
      if (k === 'text') e.textContent = attrs[k]; else e.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
    });
    (kids || []).forEach(function (c) { if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function badge(seg) {
    return h('span', { 'class': 'badge seg-' + seg, 'data-segment': seg }, [h('span', { 'class': 'txt', text: M.labels[seg] || seg })]);
  }
  function segOf(i) {
    var o = M.outcomes[D.o[i]];
    if (o !== 'miss') return o;
    if (D.md[i] >= 0) return M.modes[D.md[i]];
    return M.judge[D.j[i]] || 'pending';
  }
  function fmtDist(d) { return d === null ? '—' : d.toFixed(1) + ' px'; }

  // The annotation drawn by pointfail.running.judges.render's rules (target tint, every point and box, the
  // primary point marked): g = {w, h, t, m, b, pb} from the site builder. enlarge > 1 scales the
  // markers for small views (thumbnails) so they stay visible.
  function annotSvg(g, enlarge, numbers) {
    var svg = s('svg', { viewBox: '0 0 ' + g.w + ' ' + g.h, preserveAspectRatio: 'none', 'aria-hidden': 'true' });
    var k = enlarge || 1;
    if (g.t && g.t.cells && g.t.cells.length) {
      var d = g.t.cells.map(function (c) { return 'M' + c[0] + ' ' + c[1] + 'H' + (c[2] + 1) + 'V' + (c[3] + 1) + 'H' + c[0] + 'Z'; }).join('');
      svg.appendChild(s('path', { d: d, fill: M.draw.tint, 'fill-opacity': M.draw.alpha, 'class': 'tint' }));
    } else if (g.t && g.t.layer) {
      var im = s('image', { x: g.t.x, y: g.t.y, width: g.t.w, height: g.t.h, preserveAspectRatio: 'none', 'class': 'tint', style: 'image-rendering:pixelated' });
      im.setAttribute('href', g.t.layer);
      svg.appendChild(im);
    }
    (g.b || []).forEach(function (b, j) {
      var prim = j === g.pb;
      svg.appendChild(s('rect', { x: Math.min(b[0], b[2]), y: Math.min(b[1], b[3]), width: Math.abs(b[2] - b[0]), height: Math.abs(b[3] - b[1]),
        fill: 'none', stroke: M.draw.box, 'stroke-width': (prim ? 3 : 1) * k, 'stroke-dasharray': prim ? 'none' : (6 * k) + ' ' + (4 * k), 'class': prim ? 'box primary' : 'box' }));
    });
    (g.m || []).forEach(function (m) {
      var x = m[0], y = m[1], r = m[2] * k, w = m[3] * k, dot = m[4] * k, primary = m[6], color = m[8];
      svg.appendChild(s('circle', { cx: x, cy: y, r: Math.max(r - w / 2, 0.5), fill: 'none', stroke: color, 'stroke-width': w, 'class': primary ? 'marker primary' : 'marker' }));
      if (dot) svg.appendChild(s('circle', { cx: x, cy: y, r: dot, fill: color, 'class': 'dot' }));
      if (numbers && !primary && m[5] >= 0) {
        var t = s('text', { x: x + r + 2, y: y - r, fill: color, 'font-size': 14 * k, 'font-weight': 700, stroke: '#fff', 'stroke-width': 3 * k, 'paint-order': 'stroke' });
        t.textContent = String(m[5] + 1);
        svg.appendChild(t);
      }
    });
    return svg;
  }
  function annotBox(cls, src, g, note, enlarge, numbers, alt) {
    var box = h('div', { 'class': 'annot ' + cls, style: 'aspect-ratio:' + g.w + '/' + g.h });
    // The sample's own image loads at once and is decoded with the frame that first shows it
    // (decoding=sync): with decoding=async the browser may present frames without it while it decodes,
    // and a headless `chromium --screenshot`, which captures the first frame after the load event, drew
    // the image blank on a loaded machine. Thumbnails in lists and panels load as they scroll into view
    // and decode off the main thread.
    var full = cls === 'full';
    if (src) box.appendChild(h('img', { src: src, alt: alt || '', loading: full ? 'eager' : 'lazy', decoding: full ? 'sync' : 'async', width: g.w, height: g.h }));
    else box.appendChild(h('div', { 'class': 'missing', text: note || 'image not available' }));
    box.appendChild(annotSvg(g, enlarge, numbers));
    return box;
  }

  // ------------------------------------------------------------------ data loaded on demand
  // A script file per chunk (data/annot/NNNN.js, data/detail/NNNN.js) calls PF.addAnnot/addDetail.
  function loadScript(kind, n, store, cb) {
    var key = kind + n;
    if (store[n]) { cb(store[n]); return; }
    if (PF.waiting[key]) { PF.waiting[key].push(cb); return; }
    PF.waiting[key] = [cb];
    var tag = document.createElement('script');
    tag.src = 'data/' + kind + '/' + ('0000' + n).slice(-4) + '.js';
    tag.onerror = function () { var w = PF.waiting[key] || []; delete PF.waiting[key]; w.forEach(function (f) { f(null); }); };
    document.body.appendChild(tag);
  }
  function arrived(kind, store) {
    return function (n, obj) {
      store[n] = obj;
      var w = PF.waiting[kind + n] || [];
      delete PF.waiting[kind + n];
      w.forEach(function (cb) { cb(obj); });
    };
  }
  PF.annots = {};
  PF.addAnnot = arrived('annot', PF.annots);
  PF.addDetail = arrived('detail', PF.details);
  function loadShard(n, cb) { loadScript('detail', n, PF.details, cb); }
  // the annotations of rows (list positions), then cb; missing files leave those rows undrawn
  function withAnnots(rows, cb) {
    var need = Array.from(new Set(rows.map(function (i) { return Math.floor(i / M.annot_rows); })));
    var left = need.length;
    if (!left) { cb(); return; }
    need.forEach(function (n) { loadScript('annot', n, PF.annots, function () { if (--left === 0) cb(); }); });
  }
  function annotOf(i) {
    var a = PF.annots[Math.floor(i / M.annot_rows)];
    return a ? a[i % M.annot_rows] : null;
  }

  // ------------------------------------------------------------------ the list
  var PAGE = M.page_size;
  function renderList(app, done, st, res) {
    var pages = Math.max(1, Math.ceil(res.matched.length / PAGE));
    if (st.page > pages) st.page = pages;
    app.textContent = '';
    app.appendChild(h('h1', { text: 'Samples: ' + M.study }));

    var form = h('form', { 'class': 'filters', id: 'filters', 'aria-label': 'filters' });
    FACETS.forEach(function (f) {
      var sel = h('select', { name: f.key, id: 'f-' + f.key });
      var cur = st.f[f.key] ? st.f[f.key].name : '';
      var total = 0;
      res.counts[f.key].forEach(function (c) { total += c; });
      sel.appendChild(h('option', { value: '', text: 'any (' + total + ')' }));
      if (f.extra) {
        var ce = 0;
        f.extra.values.forEach(function (v) { ce += res.counts[f.key][v]; });
        sel.appendChild(h('option', { value: f.extra.name, text: f.extra.label + ' (' + ce + ')', selected: cur === f.extra.name }));
      }
      f.names.forEach(function (name, k) {
        var label = f.labels ? f.labels[k] : name;
        sel.appendChild(h('option', { value: name, text: label + ' (' + res.counts[f.key][k] + ')', selected: cur === name }));
      });
      sel.addEventListener('change', function () {
        var ns = readState();
        if (sel.value) {
          var vals = f.extra && sel.value === f.extra.name ? f.extra.values : [f.names.indexOf(sel.value)];
          ns.f[f.key] = { name: sel.value, values: vals };
        } else delete ns.f[f.key];
        ns.page = 1;
        location.hash = filterParams(ns, true).toString();
      });
      form.appendChild(h('label', { 'for': 'f-' + f.key, title: f.title }, [f.label, sel]));
    });
    var sortSel = h('select', { name: 'sort', id: 'f-sort' });
    Object.keys(SORTS).forEach(function (k) { sortSel.appendChild(h('option', { value: k, text: SORTS[k], selected: st.sort === k })); });
    sortSel.addEventListener('change', function () { var ns = readState(); ns.sort = sortSel.value; ns.page = 1; location.hash = filterParams(ns, true).toString(); });
    form.appendChild(h('label', { 'for': 'f-sort' }, ['sort by', sortSel]));
    var reset = h('button', { type: 'button', text: 'clear filters' });
    reset.addEventListener('click', function () { location.hash = ''; });
    form.appendChild(reset);
    app.appendChild(form);

    var start = (st.page - 1) * PAGE;
    var slice = res.matched.slice(start, start + PAGE);
    var status = h('div', { 'class': 'status' });
    status.appendChild(h('span', { 'class': 'count', id: 'match-count', 'aria-live': 'polite', 'data-count': res.matched.length,
      text: res.matched.length + ' of ' + N + ' samples' }));
    var pager = h('span', { 'class': 'pager' });
    function go(pg) { var ns = readState(); ns.page = pg; location.hash = filterParams(ns, true).toString(); }
    var prev = h('button', { type: 'button', text: '← previous page', disabled: st.page <= 1 });
    prev.addEventListener('click', function () { go(st.page - 1); });
    var next = h('button', { type: 'button', text: 'next page →', disabled: st.page >= pages });
    next.addEventListener('click', function () { go(st.page + 1); });
    pager.appendChild(prev);
    pager.appendChild(h('span', { id: 'page-of', text: ' page ' + st.page + ' of ' + pages + ' ' }));
    pager.appendChild(next);
    status.appendChild(pager);
    app.appendChild(status);

    var table = h('table', { 'class': 'samples', id: 'samples', 'aria-label': 'samples' });
    table.appendChild(h('thead', {}, [h('tr', {}, ['image', 'model', 'benchmark', 'sample', 'outcome', 'failure', 'miss distance', 'category', 'screen language', 'instruction'].map(function (t) { return h('th', { scope: 'col', text: t }); }))]));
    var tbody = h('tbody');
    var focusRow = null;
    slice.forEach(function (i, n) {
      var seg = segOf(i);
      var g = annotOf(i);
      var thumb = D.t[i] >= 0 ? M.thumbs[D.t[i]] : null;
      var tr = h('tr', { tabindex: n === 0 ? '0' : '-1', 'data-key': keyOf(i), 'data-href': sampleHref(i, st) }, [
        h('td', {}, [g ? annotBox('thumb', thumb, g, thumb ? null : 'no image', Math.max(1, g.w / 160 * 0.45), false, '') : null]),
        h('td', { text: M.dicts.model[D.m[i]] }),
        h('td', { text: M.dicts.benchmark[D.b[i]] }),
        h('td', {}, [h('a', { href: sampleHref(i, st), tabindex: '-1', text: D.id[i] })]),
        h('td', { text: M.outcomes[D.o[i]] }),
        h('td', {}, [badge(seg)]),
        h('td', { text: fmtDist(D.d[i]) }),
        h('td', { text: D.c[i] >= 0 ? M.dicts.category[D.c[i]] : '' }),
        h('td', { text: D.l[i] >= 0 ? M.dicts.language[D.l[i]] : '' }),
        h('td', { 'class': 'instr', text: D.i[i] })
      ]);
      if (st.at && st.at === keyOf(i)) focusRow = tr;
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    app.appendChild(table);
    if (!slice.length) app.appendChild(h('p', { text: 'No sample matches these filters.' }));
    app.appendChild(h('p', { 'class': 'help' }, ['Keys in the list: ', h('kbd', { text: '↓' }), '/', h('kbd', { text: 'j' }), ' next row, ',
      h('kbd', { text: '↑' }), '/', h('kbd', { text: 'k' }), ' previous row, ', h('kbd', { text: 'Enter' }), ' open, ',
      h('kbd', { text: 'PageDown' }), '/', h('kbd', { text: 'n' }), ' next page, ', h('kbd', { text: 'PageUp' }), '/', h('kbd', { text: 'p' }),
      ' previous page, ', h('kbd', { text: 'Home' }), '/', h('kbd', { text: 'End' }), ' first/last row.']));

    function rows() { return Array.prototype.slice.call(tbody.rows); }
    function focus(tr) { if (!tr) return; rows().forEach(function (r) { r.tabIndex = -1; }); tr.tabIndex = 0; tr.focus(); }
    tbody.addEventListener('click', function (ev) {
      var tr = ev.target.closest('tr');
      if (tr && !ev.target.closest('a')) location.href = tr.getAttribute('data-href');
    });
    tbody.addEventListener('keydown', function (ev) {
      var tr = ev.target.closest('tr');
      if (!tr || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      var rs = rows(), k = rs.indexOf(tr);
      switch (ev.key) {
        case 'ArrowDown': case 'j':
          if (k + 1 < rs.length) focus(rs[k + 1]); else if (st.page < pages) go(st.page + 1);
          break;
        case 'ArrowUp': case 'k':
          if (k > 0) focus(rs[k - 1]); else if (st.page > 1) go(st.page - 1);
          break;
        case 'Home': focus(rs[0]); break;
        case 'End': focus(rs[rs.length - 1]); break;
        case 'Enter': case 'o': location.href = tr.getAttribute('data-href'); break;
        case 'PageDown': case 'n': if (st.page < pages) go(st.page + 1); break;
        case 'PageUp': case 'p': if (st.page > 1) go(st.page - 1); break;
        default: return;
      }
      ev.preventDefault();
    });
    if (focusRow) focus(focusRow);
    else if (PF.focusList && tbody.rows.length) focus(tbody.rows[0]);
    PF.focusList = false;
    document.title = 'pointfail: ' + M.study + ': ' + res.matched.length + ' samples';
    done();
  }

  // ------------------------------------------------------------------ the sample page

  function kv(pairs) {
    var dl = h('dl', { 'class': 'kv' });
    pairs.forEach(function (p) {
      if (p[1] === undefined) return;
      dl.appendChild(h('dt', { text: p[0] }));
      var v = p[1];
      dl.appendChild(v instanceof Node ? h('dd', {}, [v]) : h('dd', { text: v === null ? '—' : (typeof v === 'object' ? JSON.stringify(v) : String(v)) }));
    });
    return dl;
  }
  function card(title, kids, id) { return h('section', { 'class': 'card', id: id || null }, [h('h2', { text: title })].concat(kids)); }
  function pre(text, cls) { return h('pre', { 'class': cls || null, text: text === null || text === undefined ? '—' : text }); }
  function marked(text, spans) {
    var p = h('pre', { 'class': 'reply', id: 'raw-reply' });
    if (text === null || text === undefined) { p.textContent = '(no reply)'; return p; }
    var pos = 0;
    (spans || []).forEach(function (sp) {
      if (sp[0] < pos) return;
      p.appendChild(document.createTextNode(text.slice(pos, sp[0])));
      p.appendChild(h('mark', { 'class': 'parsed', text: text.slice(sp[0], sp[1]) }));
      pos = sp[1];
    });
    p.appendChild(document.createTextNode(text.slice(pos)));
    return p;
  }
  function fmt(v, d) { return v === null || v === undefined ? '—' : (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d === undefined ? 3 : d)) : String(v)); }

  function judgeCard(j, title, id) {
    if (!j) return card(title, [h('p', { text: 'No judgment (only misses are judged).' })], id);
    var kids = [kv([['judge', j.judge], ['status', j.status], ['label', j.label], ['detail', j.detail],
      ['options', JSON.stringify(j.options)], ['transport failures', String(j.transport_failures)], ['digest', j.judge_digest]])];
    if (j.attempts && j.attempts.length) {
      var t = h('table', { 'class': 'attempts' }, [h('thead', {}, [h('tr', {}, ['#', 'verdict', 'label', 'raw reply'].map(function (x) { return h('th', { text: x }); }))])]);
      var tb = h('tbody');
      j.attempts.forEach(function (a) {
        tb.appendChild(h('tr', {}, [h('td', { text: String(a.attempt) }), h('td', { text: a.verdict }), h('td', { text: a.label || '—' }), h('td', {}, [pre(a.reply)])]));
      });
      t.appendChild(tb);
      kids.push(h('p', { text: j.attempts.length + ' attempt(s), every raw reply kept:' }), t);
    } else {
      kids.push(h('p', { 'class': 'muted', text: j.judge === 'oracle' ? 'The oracle reads the scene graph; it sends no request, so there are no replies; its detail says which element the point fell on.' : 'No attempts recorded.' }));
    }
    return card(title, kids, id);
  }

  function renderSample(app, done) {
    var st = readState();
    app.textContent = '';
    indexes();
    if (!st.rec) { app.appendChild(h('p', { text: 'No sample chosen. ' }, [h('a', { href: 'list.html', text: 'Go to the list.' })])); return; }
    var i = KEY.get(st.rec.join('\u0001'));
    if (i === undefined) { app.appendChild(h('p', { text: 'Unknown sample ' + st.rec.join(' · ') + '.' })); return; }
    var res = run(st);
    var pos = res.matched.indexOf(i);
    var seg = segOf(i);
    var grp = GROUP.get(D.b[i] + '\u0001' + D.id[i]) || [i];
    app.appendChild(h('div', { 'class': 'sample-head' }, [
      h('h1', { text: D.id[i] }),
      h('span', { 'class': 'muted', text: M.dicts.model[D.m[i]] + ' · ' + M.dicts.benchmark[D.b[i]] }),
      h('span', { text: 'outcome: ' + M.outcomes[D.o[i]] }), badge(seg)]));
    var nav = h('nav', { 'class': 'sample-nav', 'aria-label': 'within the filter' });
    var prevA = pos > 0 ? h('a', { href: sampleHref(res.matched[pos - 1], st), id: 'prev', rel: 'prev', text: '← previous' }) : h('span', { 'class': 'muted', text: '← previous' });
    var nextA = pos >= 0 && pos + 1 < res.matched.length ? h('a', { href: sampleHref(res.matched[pos + 1], st), id: 'next', rel: 'next', text: 'next →' }) : h('span', { 'class': 'muted', text: 'next →' });
    nav.appendChild(prevA);
    nav.appendChild(h('span', { id: 'position', text: pos >= 0 ? (pos + 1) + ' of ' + res.matched.length + ' in this filter' : 'not in the current filter (' + res.matched.length + ' samples)' }));
    nav.appendChild(nextA);
    var back = Object.assign({}, st);
    back.page = pos >= 0 ? Math.floor(pos / PAGE) + 1 : 1;
    nav.appendChild(h('a', { href: listHref(back, i), id: 'back', text: 'back to the list' }));
    var fdesc = FACETS.filter(function (f) { return st.f[f.key]; }).map(function (f) { return f.label + ' = ' + st.f[f.key].name; }).join(', ');
    nav.appendChild(h('span', { 'class': 'muted', text: fdesc ? 'filter: ' + fdesc : 'no filter' }));
    app.appendChild(nav);

    var grid = h('div', { 'class': 'sample-grid' });
    var left = h('div', { id: 'left' });
    var right = h('div', { id: 'right' });
    grid.appendChild(left);
    grid.appendChild(right);
    app.appendChild(grid);
    left.appendChild(h('p', { 'class': 'loading', text: 'Loading the record…' }));

    var pending = 2, shard = null;
    loadShard(D.sh[i], function (s) { shard = s; if (--pending === 0) show(); });
    withAnnots(grp, function () { if (--pending === 0) show(); });
    function show() {
      left.textContent = '';
      var g = annotOf(i);
      var det = shard && shard[keyOf(i)];
      if (!det) { left.appendChild(h('p', { text: 'The detail file of this sample could not be loaded.' })); return; }
      var r = det.record;
      var img = det.image;
      var fig = h('figure', { id: 'annotated', style: 'margin:0' });
      fig.appendChild(annotBox('full', img.full, g, img.note, 1, true, 'annotated image of ' + D.id[i]));
      var cap = h('figcaption', { 'class': 'caption' });
      var prim = g.m.filter(function (m) { return m[6]; })[0];
      cap.appendChild(h('div', { id: 'frame', text: 'Coordinate frame: ' + (det.frame.name || '—') + (det.frame.doc ? ' (' + det.frame.doc + ')' : '') + ', family ' + r.family + '; points are drawn in pixels of the original ' + g.w + '×' + g.h + ' image.' }));
      cap.appendChild(h('div', { text: 'Green tint: the target' + (r.target.kind === 'absent' ? ' (absent: the referent is not in the image)' : ' (' + r.target.kind + ')') +
        '. Ring with a dot: the primary point (scored)' + (prim ? ' at (' + prim[0].toFixed(1) + ', ' + prim[1].toFixed(1) + ') px' + (prim[7] ? ', outside the image: drawn at the border' : '') : ': none') +
        '. Numbered orange rings: the other points. Red rectangles: predicted boxes (thick: the primary box).' }));
      if (img.note) cap.appendChild(h('div', { 'class': 'note', id: 'image-note', text: img.note }));
      if (g.t && g.t.note) cap.appendChild(h('div', { 'class': 'note', text: g.t.note }));
      fig.appendChild(cap);
      left.appendChild(fig);

      // the same sample under every model
      var models = h('div', { 'class': 'models', id: 'models' });
      grp.forEach(function (j) {
        var thumb = D.t[j] >= 0 ? M.thumbs[D.t[j]] : null;
        var f = h('figure', { 'class': j === i ? 'current' : null, 'data-model': M.dicts.model[D.m[j]] }, [
          h('a', { href: sampleHref(j, st), 'aria-label': M.dicts.model[D.m[j]] + ': ' + segOf(j) }, [annotBox('panel', thumb, annotOf(j), thumb ? null : 'no image', Math.max(1, annotOf(j).w / 300 * 0.45), false, '')]),
          h('figcaption', {}, [h('strong', { text: M.dicts.model[D.m[j]] }), ' ', badge(segOf(j)), h('br'), M.outcomes[D.o[j]] + ', miss distance ' + fmtDist(D.d[j])])]);
        models.appendChild(f);
      });
      left.appendChild(h('h2', { text: 'The same sample under every model (' + grp.length + ')' }));
      left.appendChild(models);

      right.appendChild(card('Instruction', [kv([['as the benchmark wrote it', r.prompt.original], ['core', r.prompt.core],
        ['stripped directives', r.prompt.stripped.length ? r.prompt.stripped.join(', ') : 'none'], ['task', r.task]]),
        h('p', { 'class': 'muted', text: 'As sent to the model:' }), pre(r.prompt.sent, 'sent')], 'instruction'));
      var p = r.parse;
      right.appendChild(card('Model reply', [h('p', { 'class': 'muted', text: 'Raw text; highlighted: where the parser read coordinates.' }), marked(r.response.raw_text, det.spans),
        kv([['response error', r.response.error], ['model input size', r.response.model_input_size ? r.response.model_input_size.join('×') : null],
          ['tokens (prompt / output)', fmt(r.response.prompt_tokens) + ' / ' + fmt(r.response.output_tokens)], ['seconds', fmt(r.response.seconds)]])], 'reply'));
      right.appendChild(card('Parse', p ? [kv([['frame', p.frame], ['family', p.family],
        ['points (normalized)', p.points.length ? p.points.map(function (q, k) { return (k + 1) + ': (' + q[0].toFixed(4) + ', ' + q[1].toFixed(4) + ') = (' + (q[0] * g.w).toFixed(1) + ', ' + (q[1] * g.h).toFixed(1) + ') px'; }).join('; ') : 'none'],
        ['boxes (normalized)', p.boxes.length ? p.boxes.map(function (b) { return '[' + b.map(function (v) { return v.toFixed(4); }).join(', ') + ']'; }).join('; ') : 'none'],
        ['flags', p.flags.length ? p.flags.join(', ') : 'none'], ['ignored', p.ignored.length ? p.ignored.join(' | ') : 'none'],
        ['reason (nothing parsed)', p.reason], ['truncated', String(p.truncated)]])] : [h('p', { text: 'No parse (infrastructure error: ' + (r.error || 'unknown') + ').' })], 'parse'));
      var geo = r.geometry;
      right.appendChild(card('Outcome and geometry', [kv([['outcome', r.outcome], ['segment', M.labels[seg] || seg], ['error', r.error],
        ['in target', geo.in_target === null ? '—' : String(geo.in_target)], ['distance to target', geo.distance_px === null ? '—' : geo.distance_px.toFixed(2) + ' px'],
        ['distance / image diagonal', fmt(geo.distance_norm, 4)],
        ['box (IoU, coverage, precision, class)', geo.box ? [fmt(geo.box.iou), fmt(geo.box.coverage), fmt(geo.box.precision), geo.box.box_class].join(', ') : undefined],
        ['official rule', r.official ? r.official.rule + ': ' + r.official.score : null],
        ['target', r.target.kind + (r.target.boxes ? ' ' + JSON.stringify(r.target.boxes) : '') + (r.target.area_px !== null ? ', area ' + r.target.area_px + ' px²' : '')],
        ['target size quartile', det.quartile ? 'Q' + det.quartile + ' within ' + r.benchmark : 'no area']])], 'outcome'));
      right.appendChild(judgeCard(r.judge, 'Judge (primary)', 'judge'));
      (r.other_judgments || []).forEach(function (j, k) { right.appendChild(judgeCard(j, 'Other judge: ' + j.judge, 'judge-other-' + k)); });
      right.appendChild(card('Metadata', [kv(Object.keys(r.metadata).sort().map(function (k) { return [k, r.metadata[k]]; }))], 'metadata'));
      right.appendChild(card('Provenance', [kv([['image', r.image.path + ' (' + r.image.width + '×' + r.image.height + ')'], ['image sha256', r.image.sha256],
        ['checkpoint', r.provenance.checkpoint], ['model revision', r.provenance.model_revision], ['container image', r.provenance.image_digest],
        ['pointfail', r.provenance.pointfail_version], ['packages', JSON.stringify(r.provenance.packages)]])], 'provenance'));
      document.title = 'pointfail: ' + D.id[i] + ' (' + M.dicts.model[D.m[i]] + ', ' + M.dicts.benchmark[D.b[i]] + ')';
      done(keyOf(i));
    }
  }

  // Each render draws once the annotation (and detail) files it needs have arrived; a newer hash
  // change supersedes a render still waiting for them.
  var token = 0;
  function render() {
    var app = document.getElementById('app');
    var mine = ++token;
    app.removeAttribute('data-ready');
    function done(ready) {
      if (!PF.timing.rendered) PF.timing.rendered = performance.now();
      app.setAttribute('data-ready', ready);
    }
    if (app.getAttribute('data-page') === 'list') {
      var st = readState();
      var res = run(st);
      var start = (Math.max(1, Math.min(st.page, Math.ceil(res.matched.length / PAGE) || 1)) - 1) * PAGE;
      withAnnots(res.matched.slice(start, start + PAGE), function () {
        if (mine === token) renderList(app, function () { done('list'); }, st, res);
      });
    } else {
      indexes();
      renderSample(app, function (key) { if (mine === token) done(key); });
    }
  }
  // the review page (assets/review.js) renders itself from the same columns and helpers
  PF.lib = { D: D, N: N, keyOf: keyOf, readState: readState, run: run, h: h, annotBox: annotBox,
    loadShard: loadShard, withAnnots: withAnnots, annotOf: annotOf };
  if (document.getElementById('app').getAttribute('data-page') === 'review') return;
  window.addEventListener('hashchange', function () { PF.focusList = true; render(); });
  document.addEventListener('keydown', function (ev) {
    if (document.getElementById('app').getAttribute('data-page') !== 'sample') return;
    if (ev.target.closest && ev.target.closest('input,select,textarea')) return;
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var a = null;
    if (ev.key === 'ArrowLeft' || ev.key === 'k') a = document.getElementById('prev');
    else if (ev.key === 'ArrowRight' || ev.key === 'j') a = document.getElementById('next');
    else if (ev.key === 'Escape' || ev.key === 'u') a = document.getElementById('back');
    if (a) { ev.preventDefault(); location.href = a.getAttribute('href'); }
  });
  render();
})();
