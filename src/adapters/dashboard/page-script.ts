/**
 * The dashboard page's script (served as /assets/dashboard.js): polls /api/panels, draws the series with uPlot
 * and the tables and histograms as HTML, and drills down (a click on a point → /api/points → a trace →
 * /api/trace/:id). Plain ES2017 for any current browser; no backticks or dollar-brace inside (String.raw).
 * Elements carry data-* attributes (data-panel, data-rendered, data-key, data-value, data-ledger-status) that
 * the end-to-end test reads; body[data-loaded] counts completed renders.
 */
export const PAGE_SCRIPT = String.raw`(function () {
  'use strict';
  var REFRESH_MS = Number(document.body.dataset.refreshMs) || 10000;
  var RANGES = { '1h': 3600e3, '6h': 6 * 3600e3, '24h': 24 * 3600e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 };
  var COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac', '#666'];
  var state = { generation: 0, charts: {}, range: null, timer: null, busy: false };
  window.__dash = state;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'class') e.className = attrs[k];
      else if (k.indexOf('on') === 0) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function qs(o) {
    return Object.keys(o).filter(function (k) { return o[k] !== undefined && o[k] !== null; })
      .map(function (k) { return encodeURIComponent(k) + '=' + encodeURIComponent(String(o[k])); }).join('&');
  }
  function getJson(path) {
    return fetch(path, { headers: { accept: 'application/json' } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body && body.message ? body.message : 'HTTP ' + r.status);
        return body;
      });
    });
  }
  function fmt(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }
  function isNum(v) { return typeof v === 'number' || (typeof v === 'string' && v !== '' && !isNaN(Number(v)) && /^-?[0-9.eE+-]+$/.test(v)); }
  function iso(ms) { return new Date(Number(ms)).toISOString().replace('.000Z', 'Z'); }

  function rangeParams() {
    var sel = document.getElementById('range').value;
    var params = new URLSearchParams(location.search);
    if (params.get('from') && params.get('to')) return Promise.resolve({ from: params.get('from'), to: params.get('to') });
    if (sel === 'all') {
      return getJson('/api/extent').then(function (x) {
        var to = Math.max(Number(x.max_ms) || Date.now(), Number(x.min_ms) || 0) + 1;
        return { from: Number(x.min_ms) || 0, to: to };
      });
    }
    var now = Date.now();
    return Promise.resolve({ from: now - RANGES[sel], to: now });
  }

  function panelSection(p) {
    var id = 'panel-' + p.id;
    var sec = document.getElementById(id);
    if (!sec) {
      sec = el('section', { class: 'panel', id: id, 'data-panel': p.id, 'data-kind': p.kind });
      document.getElementById('panels').insertBefore(sec, document.getElementById('drill'));
    }
    return sec;
  }

  function tableOf(rows, columns) {
    var cols = columns || (rows.length ? Object.keys(rows[0]) : []);
    var head = el('tr', null, cols.map(function (c) { return el('th', { text: c }); }));
    var body = rows.map(function (r) {
      return el('tr', null, cols.map(function (c) {
        var v = r[c];
        var td = el('td', { text: fmt(v), 'data-col': c, class: isNum(v) ? 'num' : '' });
        if (c === 'state' && v === 'FIRING') td.className += ' firing';
        return td;
      }));
    });
    return el('table', { class: 'rows' }, [el('thead', null, [head]), el('tbody', null, body)]);
  }

  function renderTable(sec, p) {
    sec.appendChild(el('h2', { text: p.title }));
    if (p.note) sec.appendChild(el('p', { class: 'note', text: p.note }));
    if (p.rows.length === 0) { if (!p.note) sec.appendChild(el('p', { class: 'note', text: 'no rows in this range' })); }
    else sec.appendChild(tableOf(p.rows));
  }

  function renderBars(sec, p) {
    sec.appendChild(el('h2', { text: p.title }));
    var max = Math.max.apply(null, p.rows.map(function (r) { return r.n; }).concat([1]));
    var total = p.rows.reduce(function (s, r) { return s + r.n; }, 0);
    sec.setAttribute('data-total', String(total));
    var rows = p.rows.map(function (r) {
      return el('tr', { 'data-key': r.label }, [
        el('td', { text: r.label }),
        el('td', { class: 'num', 'data-value': String(r.n), text: String(r.n) }),
        el('td', null, [el('span', { class: 'bar', style: 'width:' + Math.round(300 * r.n / max) + 'px' })]),
      ]);
    });
    sec.appendChild(el('table', { class: 'bars' }, [el('tbody', null, rows)]));
  }

  function renderSeries(sec, p, range, bucketMs) {
    sec.appendChild(el('h2', { text: p.title }));
    var keys = (p.totals || []).map(function (t) { return t.k; });
    var holder = el('div', { class: 'chart' });
    sec.appendChild(holder);
    if (keys.length === 0) holder.appendChild(el('p', { class: 'note', text: 'no data in this range' }));
    else {
      var xsSet = {};
      p.rows.forEach(function (r) { xsSet[r.t] = true; });
      var counts = p.kind === 'series' && !p.bands;
      var xs = Object.keys(xsSet).map(Number).sort(function (a, b) { return a - b; });
      if (counts && bucketMs > 0) {
        // Counts are zero where no row came back: every bucket of the range is a point.
        xs = [];
        for (var b = Math.floor(range.from / bucketMs) * bucketMs; b <= range.to && xs.length < 1000; b += bucketMs) xs.push(b);
      }
      var index = {};
      xs.forEach(function (x, i) { index[x] = i; });
      var data = [xs.map(function (x) { return x / 1000; })];
      keys.forEach(function (k) {
        var arr = xs.map(function () { return counts ? 0 : null; });
        p.rows.forEach(function (r) { if (r.k === k) if (index[r.t] !== undefined) arr[index[r.t]] = r.v; });
        data.push(arr);
      });
      var series = [{}].concat(keys.map(function (k, i) {
        return { label: k, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: !counts, points: { show: true, size: 5 } };
      }));
      (p.bands || []).forEach(function (b, i) {
        data.push(xs.map(function () { return b.value; }));
        series.push({ label: b.label + ' ' + b.value, stroke: ['#d4a72c', '#e07b39', '#b42318'][i % 3], dash: [6, 4], width: 1, points: { show: false } });
      });
      var width = Math.max(320, holder.clientWidth || sec.clientWidth - 24);
      var focused = null;
      var opts = {
        width: width, height: 220, series: series, legend: { show: true },
        cursor: { focus: { prox: 24 } },
        scales: { x: { time: true, range: [Math.min(range.from, xs[0]) / 1000, Math.max(range.to, xs[xs.length - 1]) / 1000] } },
        hooks: { setSeries: [function (u, i) { focused = i; }] },
      };
      var u = new uPlot(opts, data, holder);
      state.charts[p.id] = { u: u, keys: keys, xs: xs, panel: p };
      if (p.drill) {
        u.over.style.cursor = 'pointer';
        u.over.addEventListener('click', function () {
          var idx = u.cursor.idx;
          if (idx === null || idx === undefined) return;
          var si = focused;
          if (!si || si > keys.length) {
            si = null;
            var best = -1;
            for (var s = 1; s <= keys.length; s++) if ((data[s][idx] || 0) > best) { best = data[s][idx] || 0; si = s; }
          }
          if (si) drill(p, keys[si - 1], xs[idx]);
        });
      }
    }
    var totals = (p.totals || []).map(function (t) {
      return el('tr', { 'data-key': t.k }, [el('td', { text: t.k }), el('td', { class: 'num', 'data-value': String(t.total), text: String(t.total) })]);
    });
    if (totals.length) sec.appendChild(el('table', { class: 'totals' }, [el('thead', null, [el('tr', null, [el('th', { text: p.bands ? 'agent' : 'key' }), el('th', { class: 'num', text: p.bands ? 'peak' : 'total' })])]), el('tbody', null, totals)]));
    if (p.note) sec.appendChild(el('p', { class: 'note', text: p.note }));
  }

  function render(answer, range) {
    state.generation += 1;
    state.range = range;
    Object.keys(state.charts).forEach(function (k) { state.charts[k].u.destroy(); });
    state.charts = {};
    answer.panels.forEach(function (p) {
      var sec = panelSection(p);
      sec.innerHTML = '';
      sec.setAttribute('data-rows', String(p.rows.length));
      if (p.note) sec.setAttribute('data-note', p.note); else sec.removeAttribute('data-note');
      if (p.kind === 'table') renderTable(sec, p);
      else if (p.kind === 'bars') renderBars(sec, p);
      else renderSeries(sec, p, range, answer.range.bucketMs);
      sec.setAttribute('data-rendered', String(state.generation));
    });
    var firing = answer.alerts.filter(function (a) { return a.firing; }).length;
    document.getElementById('status').textContent = 'updated ' + iso(answer.generated_at_ms) + ' · ' + iso(range.from) + ' – ' + iso(range.to) +
      ' · bucket ' + Math.round(answer.range.bucketMs / 60000) + ' min · ' + firing + ' gate alert(s) firing';
    document.body.setAttribute('data-loaded', String(state.generation));
  }

  function load() {
    if (state.busy) return Promise.resolve();
    state.busy = true;
    return rangeParams().then(function (range) {
      return getJson('/api/panels?' + qs(range)).then(function (answer) { render(answer, range); });
    }).catch(function (e) {
      document.getElementById('status').textContent = 'error: ' + e.message;
      document.body.setAttribute('data-error', e.message);
    }).then(function () { state.busy = false; });
  }

  function drill(p, key, t) {
    var sec = document.getElementById('drill');
    sec.className = 'panel';
    sec.innerHTML = '';
    sec.appendChild(el('h2', { text: 'Traces behind ' + p.title.toLowerCase() + ': ' + key + ' at ' + iso(t) }));
    var range = state.range;
    return getJson('/api/points?' + qs({ dim: p.dim, key: key, t: t, from: range.from, to: range.to }))
      .then(function (ans) {
        sec.setAttribute('data-dim', ans.dim);
        sec.setAttribute('data-key', ans.key);
        sec.setAttribute('data-t', String(ans.t));
        sec.setAttribute('data-rows', String(ans.traces.length));
        var rows = ans.traces.map(function (r) {
          var a = el('a', { text: r.trace_id, 'data-trace': r.trace_id, onclick: function () { story(r.trace_id); } });
          return el('tr', { 'data-trace': r.trace_id }, [el('td', null, [a]), el('td', { text: r.agent_id }), el('td', { text: r.blueprint }),
            el('td', { text: r.final_intervention }), el('td', { text: iso(r.event_time_ms) }), el('td', { class: 'num', text: fmt(r.ctq) })]);
        });
        sec.appendChild(el('table', { class: 'rows' }, [el('thead', null, [el('tr', null, ['trace', 'agent', 'blueprint', 'intervention', 'event time', 'ctq'].map(function (c) { return el('th', { text: c }); }))]), el('tbody', null, rows)]));
        sec.setAttribute('data-rendered', 'drill');
        sec.scrollIntoView();
      }).catch(function (e) { sec.appendChild(el('p', { class: 'note', text: 'error: ' + e.message })); });
  }

  function kv(obj, keys) {
    if (!obj) return el('p', { class: 'note', text: 'none' });
    return el('table', { class: 'kv' }, [el('tbody', null, keys.filter(function (k) { return k in obj; }).map(function (k) {
      return el('tr', { 'data-field': k }, [el('th', { text: k }), el('td', { text: fmt(obj[k]) })]);
    }))]);
  }

  function story(traceId) {
    var sec = document.getElementById('story');
    sec.className = 'panel';
    sec.innerHTML = '';
    sec.removeAttribute('data-rendered');
    sec.appendChild(el('h2', { text: 'Trace ' + traceId }));
    return getJson('/api/trace/' + encodeURIComponent(traceId)).then(function (s) {
      sec.setAttribute('data-trace', s.trace_id);
      sec.appendChild(el('h3', { text: 'Decision (tripwire stage)' }));
      sec.appendChild(kv(s.decision, ['agent_id', 'tenant', 'blueprint', 'intervention', 'stage', 'halted', 'severity', 'reasons', 'tripwires_fired', 'rules_failed', 'latency_ms', 'hook', 'tool', 'event_time_ms', 'decided_at_ms', 'fallback']));
      sec.appendChild(el('h3', { text: 'Verdict (CTQ)' }));
      sec.appendChild(kv(s.verdict, ['intervention', 'stage', 'ctq', 'risk', 'confidence', 'policy_violations', 'metric_names', 'metric_scores', 'scored_at_ms', 'signature']));
      sec.appendChild(el('h3', { text: 'Trust-debt changes' }));
      sec.appendChild(s.debt_changes.length ? tableOf(s.debt_changes) : el('p', { class: 'note', text: 'no debt change for this trace' }));
      if (s.gate_results.length) { sec.appendChild(el('h3', { text: 'Gate results' })); sec.appendChild(tableOf(s.gate_results)); }
      sec.appendChild(el('h3', { text: 'Ledger entry' }));
      var v = s.ledger.verification;
      var badge = el('span', { class: 'badge ' + v.status, 'data-ledger-status': v.status, text: v.status });
      sec.appendChild(el('p', null, ['verification: ', badge, ' (' + v.checked_entries + ' entries checked)']));
      if (v.issues.length) sec.appendChild(tableOf(v.issues));
      sec.appendChild(kv(s.ledger.entry, ['entry_id', 'seq', 'type', 'ts_ms', 'prev_hash', 'hash', 'kid', 'signature']));
      if (s.ledger.entry) sec.appendChild(el('pre', { text: fmt(s.ledger.entry.payload) }));
      sec.setAttribute('data-rendered', 'story');
      sec.scrollIntoView();
    }).catch(function (e) { sec.appendChild(el('p', { class: 'note', text: 'error: ' + e.message })); });
  }

  state.drill = function (panelId, key, t) { return drill(state.charts[panelId].panel, key, t); };
  state.story = story;
  state.load = load;

  function schedule() {
    if (state.timer) clearInterval(state.timer);
    state.timer = document.getElementById('live').checked ? setInterval(load, REFRESH_MS) : null;
  }
  var initial = new URLSearchParams(location.search).get('range');
  if (initial && document.querySelector('#range option[value="' + initial.replace(/[^a-z0-9]/g, '') + '"]')) document.getElementById('range').value = initial;
  document.getElementById('range').addEventListener('change', load);
  document.getElementById('live').addEventListener('change', schedule);
  load();
  schedule();
})();
`;
