/* pointfail view: the review page. A person labels misses with the keyboard; the judges' verdicts
 * stay hidden until the person has answered. Labels live in localStorage and leave as JSONL.
 *
 * Rules (pointfail.outputs.view.review has them in full): the list page's filters in the hash, outcome
 * always miss; per=N keeps at most N misses per model x benchmark, ranked by FNV-1a of seed + key.
 * Keys: 1-4 the failure modes, 0 or c can't tell, ArrowRight/j next, ArrowLeft/k previous, n the
 * next miss not labeled yet. Every text from a record is inserted with textContent.
 */
(function () {
  'use strict';
  var PF = window.PF, L = PF.lib, M = PF.meta, D = L.D, h = L.h;
  var LABELS = M.modes.concat(['cant_tell']);
  var TITLES = { off_by_pixels: 'off by pixels: just outside the right target',
    wrong_instance: 'wrong instance: on another object of the right kind',
    wrong_category: 'wrong category: on an object of another kind',
    hallucinated: 'hallucinated: on nothing that matches (or the target is absent)',
    cant_tell: "can't tell" };
  var KEYS = { '1': 0, '2': 1, '3': 2, '4': 3, '0': 4, 'c': 4 };
  var STORE = 'pointfail.review.' + M.study;
  var ANNOTATOR = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

  // ------------------------------------------------------------------ storage
  // {annotator: "alice", labels: {alice: {"model\u0001benchmark\u0001sample": label}}}
  function load() {
    var db = null;
    try { db = JSON.parse(localStorage.getItem(STORE) || 'null'); } catch (e) { db = null; }
    if (!db || typeof db !== 'object' || typeof db.labels !== 'object' || db.labels === null) db = { annotator: '', labels: {} };
    if (typeof db.annotator !== 'string') db.annotator = '';
    return db;
  }
  function save(db) { localStorage.setItem(STORE, JSON.stringify(db)); }
  var db = load();
  function mine() { return db.annotator ? (db.labels[db.annotator] = db.labels[db.annotator] || {}) : {}; }

  // ------------------------------------------------------------------ which misses
  function fnv(str) {
    var x = 0x811c9dc5;
    for (var k = 0; k < str.length; k++) { x ^= str.charCodeAt(k); x = Math.imul(x, 0x01000193) >>> 0; }
    return x;
  }
  function items() {
    var st = L.readState();
    var miss = M.outcomes.indexOf('miss');
    st.f.outcome = { name: 'miss', values: [miss] };
    var matched = L.run(st).matched;
    var per = parseInt(st.raw.get('per') || '0', 10);
    if (!(per > 0)) return { list: matched, per: 0, st: st };
    var seed = st.raw.get('seed') || '0';
    var cells = new Map();
    matched.forEach(function (i) {
      var c = D.m[i] + ',' + D.b[i];
      if (!cells.has(c)) cells.set(c, []);
      cells.get(c).push(i);
    });
    var keep = [];
    cells.forEach(function (rows) {
      rows.map(function (i) { return [fnv(seed + '\u0001' + L.keyOf(i)), i]; })
        .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; })
        .slice(0, per).forEach(function (p) { keep.push(p[1]); });
    });
    keep.sort(function (a, b) { return matched.indexOf(a) - matched.indexOf(b); });
    return { list: keep, per: per, st: st };
  }
  var sel = items();
  var LIST = sel.list;
  var pos = 0;
  function firstOpen(from) {
    var lab = mine();
    for (var k = 0; k < LIST.length; k++) {
      var p = (from + k) % LIST.length;
      if (!lab[L.keyOf(LIST[p])]) return p;
    }
    return -1;
  }

  // ------------------------------------------------------------------ export and import
  function parts(key) { var p = key.split('\u0001'); return { model: p[0], benchmark: p[1], sample_id: p.slice(2).join('\u0001') }; }
  function exportText() {
    var out = [];
    Object.keys(db.labels).sort().forEach(function (a) {
      Object.keys(db.labels[a]).sort().forEach(function (key) {
        var p = parts(key);
        out.push(JSON.stringify({ model: p.model, benchmark: p.benchmark, sample_id: p.sample_id, label: db.labels[a][key], annotator: a }));
      });
    });
    return out.length ? out.join('\n') + '\n' : '';
  }
  function importText(text) {
    var ok = 0, bad = [];
    text.split(/\r?\n/).forEach(function (line, n) {
      if (!line.trim()) return;
      var o = null;
      try { o = JSON.parse(line); } catch (e) { o = null; }
      if (!o || typeof o !== 'object' || ['model', 'benchmark', 'sample_id', 'label', 'annotator'].some(function (k) { return typeof o[k] !== 'string'; })) { bad.push(n + 1); return; }
      if (LABELS.indexOf(o.label) < 0 || !ANNOTATOR.test(o.annotator)) { bad.push(n + 1); return; }
      var lab = db.labels[o.annotator] = db.labels[o.annotator] || {};
      lab[o.model + '\u0001' + o.benchmark + '\u0001' + o.sample_id] = o.label;
      ok++;
    });
    save(db);
    return { ok: ok, bad: bad };
  }

  // ------------------------------------------------------------------ the page
  var app = document.getElementById('app');
  var statusLine = null;
  function say(text) { if (statusLine) statusLine.textContent = text; }

  function tools() {
    var who = h('input', { id: 'annotator', type: 'text', value: db.annotator, placeholder: 'your name', size: 14,
      autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'annotator-rule' });
    who.addEventListener('change', function () {
      var v = who.value.trim();
      if (v && !ANNOTATOR.test(v)) { say('An annotator name is letters, digits, . _ - (at most 64), starting with a letter or digit.'); who.value = db.annotator; return; }
      db.annotator = v;
      save(db);
      pos = Math.max(0, firstOpen(0));
      draw();
    });
    var exp = h('button', { id: 'export', type: 'button', text: 'Export labels (JSONL)' });
    exp.addEventListener('click', function () {
      var text = exportText();
      var a = h('a', { href: URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' })),
        download: 'labels-' + M.study + (db.annotator ? '-' + db.annotator : '') + '.jsonl' });
      document.body.appendChild(a);
      a.click();
      a.remove();
      say('Exported ' + (text ? text.split('\n').length - 1 : 0) + ' labels.');
    });
    var file = h('input', { id: 'import', type: 'file', accept: '.jsonl,.json,application/x-ndjson,text/plain' });
    file.addEventListener('change', function () {
      var f = file.files && file.files[0];
      if (!f) return;
      f.text().then(function (text) {
        var r = importText(text);
        file.value = '';
        pos = Math.max(0, firstOpen(0));
        draw();
        say('Imported ' + r.ok + ' labels' + (r.bad.length ? '; lines not read: ' + r.bad.slice(0, 20).join(', ') + (r.bad.length > 20 ? ', …' : '') : '') + '.');
      });
    });
    return h('div', { 'class': 'review-tools' }, [
      h('label', {}, ['Annotator', who]),
      h('span', { id: 'annotator-rule', 'class': 'muted', text: 'labels are kept in this browser, per annotator' }),
      exp, h('label', {}, ['Import', file])]);
  }

  function verdictsBox(i, det, answered) {
    var box = h('section', { 'class': 'card verdicts' + (answered ? '' : ' hidden'), id: 'verdicts' }, [h('h2', { text: 'Judges' })]);
    if (!answered) { box.appendChild(h('p', { text: 'The judges\u2019 verdicts are shown once you have answered.' })); return box; }
    var r = det ? det.record : null;
    var js = r ? [r.judge].concat(r.other_judgments || []).filter(function (j) { return j && j.judge.indexOf('human:') !== 0; }) : [];
    if (!js.length) { box.appendChild(h('p', { text: 'No judge has labeled this miss.' })); return box; }
    var tb = h('tbody');
    js.forEach(function (j, k) {
      tb.appendChild(h('tr', { 'data-judge': j.judge }, [h('td', { text: j.judge + (k === 0 && r.judge === j ? ' (primary)' : '') }),
        h('td', { text: j.status === 'labeled' ? j.label : j.status }), h('td', { text: j.detail || '' })]));
    });
    box.appendChild(h('table', {}, [h('thead', {}, [h('tr', {}, ['judge', 'verdict', 'detail'].map(function (t) { return h('th', { text: t }); }))]), tb]));
    return box;
  }

  var token = 0;
  function draw() {
    var mineNow = ++token;
    app.removeAttribute('data-ready');
    app.textContent = '';
    var lab = mine();
    var done = LIST.filter(function (i) { return lab[L.keyOf(i)]; }).length;
    var fdesc = Object.keys(sel.st.f).filter(function (k) { return k !== 'outcome'; }).map(function (k) { return k + ' = ' + sel.st.f[k].name; }).join(', ');
    app.appendChild(h('div', { 'class': 'review-head' }, [
      h('h1', { text: 'Review misses' }),
      h('span', { id: 'progress', text: done + ' of ' + LIST.length + ' labeled' + (db.annotator ? ' by ' + db.annotator : '') }),
      h('span', { 'class': 'muted', text: (fdesc ? 'filter: ' + fdesc : 'every miss') + (sel.per ? '; at most ' + sel.per + ' per model and benchmark' : '') })]));
    app.appendChild(tools());
    statusLine = h('p', { id: 'status', 'class': 'review-status', role: 'status' });
    app.appendChild(statusLine);
    if (!LIST.length) { app.appendChild(h('p', { text: 'No miss matches this filter.' })); app.setAttribute('data-ready', 'review'); return; }
    if (!db.annotator) {
      app.appendChild(h('p', { id: 'need-name', text: 'Type your name as annotator to start labeling (it goes into every exported line).' }));
      app.setAttribute('data-ready', 'review');
      return;
    }
    var i = LIST[pos];
    var key = L.keyOf(i);
    var answer = lab[key] || null;
    app.appendChild(h('p', { id: 'position', text: 'Miss ' + (pos + 1) + ' of ' + LIST.length + ' · ' + M.dicts.model[D.m[i]] + ' · ' + M.dicts.benchmark[D.b[i]] + ' · ' + D.id[i] }));
    var grid = h('div', { 'class': 'review-grid' });
    var left = h('div'), right = h('div');
    grid.appendChild(left);
    grid.appendChild(right);
    app.appendChild(grid);
    var pending = 2, shard = null;
    L.loadShard(D.sh[i], function (s) { shard = s; if (--pending === 0) show(); });
    L.withAnnots([i], function () { if (--pending === 0) show(); });
    function show() {
      if (mineNow !== token) return;
      var det = shard && shard[key];
      var g = L.annotOf(i);
      var img = det ? det.image : { full: null, note: 'the detail file of this miss could not be loaded' };
      left.appendChild(h('figure', { id: 'annotated', style: 'margin:0' }, [
        g ? L.annotBox('full', img.full, g, img.note, 1, true, 'annotated image of ' + D.id[i]) : h('p', { text: 'No drawing for this miss.' }),
        h('figcaption', { 'class': 'caption', text: 'Green tint: the target. Ring with a dot: where the model pointed (its primary point).' })]));
      right.appendChild(h('h2', { text: 'The instruction the model was given' }));
      right.appendChild(h('p', { 'class': 'review-instruction', id: 'instruction', text: det ? det.record.prompt.original : D.i[i] }));
      var choices = h('div', { 'class': 'choices', id: 'choices', role: 'group', 'aria-label': 'failure mode' });
      LABELS.forEach(function (l, k) {
        var b = h('button', { type: 'button', 'data-label': l, 'aria-pressed': answer === l ? 'true' : 'false' },
          [h('kbd', { text: k < 4 ? String(k + 1) : '0' }), TITLES[l]]);
        b.addEventListener('click', function () { choose(l); });
        choices.appendChild(b);
      });
      right.appendChild(choices);
      right.appendChild(h('p', { 'class': 'muted', text: 'Keys: 1–4 a failure mode, 0 or c can\u2019t tell, → or j next, ← or k previous, n next unlabeled.' }));
      right.appendChild(verdictsBox(i, det, !!answer));
      app.setAttribute('data-ready', 'review');
    }
  }

  function choose(label) {
    if (!db.annotator || !LIST.length) return;
    mine()[L.keyOf(LIST[pos])] = label;
    save(db);
    draw();
    say('Labeled ' + D.id[LIST[pos]] + ': ' + label + '.');
  }
  function go(p) { if (!LIST.length) return; pos = (p + LIST.length) % LIST.length; draw(); }

  document.addEventListener('keydown', function (ev) {
    if (ev.target.closest && ev.target.closest('input,select,textarea')) return;
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var k = ev.key;
    if (Object.prototype.hasOwnProperty.call(KEYS, k)) { ev.preventDefault(); choose(LABELS[KEYS[k]]); }
    else if (k === 'ArrowRight' || k === 'j') { ev.preventDefault(); go(pos + 1); }
    else if (k === 'ArrowLeft' || k === 'k') { ev.preventDefault(); go(pos - 1); }
    else if (k === 'n') { ev.preventDefault(); var p = firstOpen(pos); if (p >= 0) go(p); else say('Every miss here is labeled.'); }
  });
  window.addEventListener('hashchange', function () { sel = items(); LIST = sel.list; pos = Math.max(0, firstOpen(0)); draw(); });
  pos = Math.max(0, firstOpen(0));
  draw();
})();
