/**
 * The live status page (issue 13 item 3): one plain HTML document with inline CSS and JS — no
 * framework, no build step. It reads /api/snapshot and follows /api/events (Server-Sent Events);
 * every event re-reads the snapshot, and times tick every second. Read-only. With a token
 * configured the API answers 401 and the page asks for the token (kept in sessionStorage).
 * All data is written with textContent, never as HTML.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>berth status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  h2 { font-size: 1.05em; margin: 1.2em 0 .4em; }
  #bar { color: #555; margin-bottom: .6em; }
  #conn.live { color: #137333; }
  #conn.down { color: #b3261e; }
  table { border-collapse: collapse; background: #fff; min-width: 40em; }
  th, td { border: 1px solid #dde1e7; padding: .25em .6em; text-align: left; vertical-align: top; }
  th { background: #eef1f5; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .gpu { display: inline-block; border-radius: 3px; padding: 0 .35em; margin: 0 .2em .1em 0; font-size: .9em; }
  .gpu.free { background: #e6f4ea; color: #137333; }
  .gpu.held { background: #fde7c8; color: #7a4100; }
  .empty { color: #888; font-style: italic; }
  .clamped { color: #b3261e; font-weight: 600; }
  #events { padding: .2em .5em; max-height: 22em; overflow: auto; margin: 0;
    background: #fff; border: 1px solid #dde1e7; }
  #events li { font-family: ui-monospace, monospace; font-size: .9em; list-style: none; }
  #login { display: none; background: #fff; border: 1px solid #dde1e7; padding: 1em; max-width: 28em; }
</style>
</head>
<body>
<h1>berth</h1>
<div id="bar"><span id="clock">-</span> · <span id="conn">connecting…</span></div>
<form id="login"><p>This server requires a token (BERTH_TOKEN).</p>
  <input id="token" type="password" autocomplete="current-password" placeholder="token" size="30">
  <button>Show status</button>
  <p id="login-error" class="clamped"></p></form>
<main id="main">
<h2>Machines</h2>
<table id="machines"><thead><tr><th>machine</th><th>kind</th><th>labels</th><th>cpus free / total</th>
  <th>GPUs (id: holder)</th><th>RAM free / total MB</th><th>claims</th><th>calls</th>
  <th>named free / total</th></tr></thead>
  <tbody></tbody></table>
<h2>Pools</h2>
<table id="pools"><thead><tr><th>pool</th><th>free / total</th></tr></thead><tbody></tbody></table>
<h2>Tenants</h2>
<table id="tenants"><thead><tr><th>tenant</th><th>cohort</th><th>used / nominal (borrowing limit)</th>
  <th>share (weight)</th></tr></thead>
  <tbody></tbody></table>
<h2>Held claims</h2>
<table id="held"><thead><tr><th>claim</th><th>node</th><th>run</th><th>machine</th><th>cpus</th>
  <th>GPU ids</th><th>held for</th></tr></thead><tbody></tbody></table>
<h2>Waiting claims</h2>
<table id="waiting"><thead><tr><th>#</th><th>claim</th><th>node</th><th>run</th><th>waits for</th>
  <th>best machine (free)</th><th>waited</th></tr></thead><tbody></tbody></table>
<h2>Calls in flight</h2>
<table id="calls"><thead><tr><th>call</th><th>run</th><th>machine</th><th>running for</th></tr></thead>
  <tbody></tbody></table>
<h2>Provisioners</h2>
<table id="provisioners"><thead><tr><th>provisioner</th><th>status</th><th>shapes</th></tr></thead>
  <tbody></tbody></table>
<h2>Recent events</h2>
<ul id="events"></ul>
</main>
<script>
'use strict';
let token = sessionStorage.getItem('berth-token') || '';
let snap = null;
let snapAt = 0;
let source = null;
let pending = false;
let again = false;
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function td(node, cls) {
  const t = el('td', undefined, cls);
  t.append(node);
  return t;
}

function num(n) {
  return td(el('span', n), 'num');
}

/** "42s", "3m05s", "2h07m". */
function dur(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n) => String(n).padStart(2, '0');
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + pad(s % 60) + 's';
  return Math.floor(s / 3600) + 'h' + pad(Math.floor(s / 60) % 60) + 'm';
}

function amount(r) {
  if (!r) return '-';
  const parts = [r.cpus + ' cpu(s)'];
  if (r.gpus) parts.push(r.gpus + ' gpu(s)');
  if (r.ramMb !== undefined) parts.push(r.ramMb + ' MB');
  return parts.join(', ');
}

/** Named resources of a machine (issue 23): \`trainer 0 / 1, nic 2 / 2\`, or '-'. */
function named(free, total) {
  const names = Object.keys(total || {}).sort();
  return names.map((k) => k + ' ' + ((free || {})[k] ?? 0) + ' / ' + total[k]).join(', ') || '-';
}

/** Replaces the rows of table \`id\`: each row is { key, cells } (a cell is text or a td). */
function fill(id, rows, cols) {
  const body = $(id).tBodies[0];
  body.replaceChildren();
  if (!rows.length) {
    const tr = el('tr');
    const none = el('td', 'none', 'empty');
    none.colSpan = cols;
    tr.append(none);
    body.append(tr);
    return;
  }
  for (const row of rows) {
    const tr = el('tr');
    if (row.key) tr.dataset.key = row.key;
    for (const c of row.cells) tr.append(c instanceof Node ? c : el('td', c));
    body.append(tr);
  }
}

function gpuCells(m, holder) {
  const gpus = el('span');
  if (!m.total.gpuIds.length) gpus.append(el('span', 'none', 'empty'));
  for (const id of m.total.gpuIds) {
    const share = (m.gpuShares || {})[id]; // a GPU held in shares (SPEC P14): the share held of it
    if (share) {
      gpus.append(el('span', id + ': ' + share + ' shared', 'gpu held'));
      continue;
    }
    const h = holder.get(m.name + '/' + id);
    gpus.append(el('span', id + ': ' + (h ? h.node || h.claimId : 'free'), 'gpu ' + (h ? 'held' : 'free')));
  }
  return td(gpus);
}

function render() {
  if (!snap) return;
  const age = Date.now() - snapAt;
  const holder = new Map();
  for (const h of snap.held) for (const id of h.allocation.gpuIds) holder.set(h.machine + '/' + id, h);
  fill('machines', snap.machines.map((m) => {
    const ram = m.total.ramMb === undefined ? 'not limited' : (m.free.ramMb ?? 0) + ' / ' + m.total.ramMb;
    // state 2 = MACHINE_STATE_DISCONNECTED: a held worker and the time left of its hold (SPEC S2)
    const kind = !m.remote ? 'engine'
      : m.state === 2 ? 'worker (disconnected, ' + dur(Math.max(0, m.holdLeftMs - age)) + ' left)' : 'worker';
    const cells = [m.name, kind, m.labels.join(', ') || '-',
      num(m.free.cpus + ' / ' + m.total.cpus), gpuCells(m, holder), ram, num(m.claims), num(m.runningCalls),
      named(m.free.resources, m.total.resources)];
    return { key: m.name, cells };
  }), 9);
  fill('pools', (snap.pools || []).map((p) => ({ key: p.name, cells: [p.name, num(p.free + ' / ' + p.total)] })), 2);
  fill('tenants', (snap.tenants || []).map((t) => ({
    key: t.tenant,
    cells: [t.tenant, t.cohort || '-', (t.resources || []).map((r) => r.name + ' ' + r.used + ' / ' + r.nominal +
      (r.borrowingLimit < 0 ? ' (unlimited)' : r.borrowingLimit > 0 ? ' (' + r.borrowingLimit + ')' : '')).join(', ') ||
      'no quota', t.weight > 0 ? (t.dominantShare || 0).toFixed(2) + ' (' + t.weight + ')' : '-'],
  })), 4);
  fill('held', snap.held.map((h) => ({
    key: h.claimId,
    cells: [h.claimId, h.node || '-', h.runId || '-', h.machine, num(h.allocation.cpus),
      h.allocation.gpuIds.join(',') || '-', dur(h.heldMs + age) + (h.awaitingHolder
        ? ', awaiting its holder (' + dur(Math.max(0, h.holdLeftMs - age)) + ' left)' : '')
        + (h.preemptedBy ? ', preempted by ' + h.preemptedBy + ' (' + dur(Math.max(0, h.preemptLeftMs - age))
          + ' left)' : '')],
  })), 7);
  fill('waiting', snap.waiting.map((w) => {
    const why = (w.priority ? 'priority ' + w.priority + (w.priorityClass ? ' (' + w.priorityClass + ')' : '') + ': '
      : '') + w.reason.detail + (w.label ? ' on a machine labelled ' + w.label : '');
    const best = w.reason.bestMachine ? w.reason.bestMachine + ' (' + amount(w.reason.bestFree) + ')' : '-';
    return { key: w.claimId, cells: [w.reason.position, w.claimId, w.node || '-', w.runId || '-', why, best,
      dur(w.waitedMs + age)] };
  }), 7);
  fill('calls', snap.calls.map((c) => ({
    key: c.callId, cells: [c.callId, c.runId, c.machine, dur(c.elapsedMs + age)],
  })), 4);
  fill('provisioners', snap.provisioners.map((p) => ({
    key: p.name,
    cells: [p.name, p.status,
      p.shapes.map((s) => s.cpus + ' cpu(s), ' + s.gpuIds.length + ' gpu(s)').join('; ') || '-'],
  })), 3);
}

function addEvent(e) {
  const li = el('li');
  li.append(el('span', new Date(Number(e.timeMs)).toLocaleTimeString() + ' ' + e.kind + ' '));
  li.append(el('span', e.detail, e.clamped ? 'clamped' : ''));
  const list = $('events');
  list.prepend(li);
  while (list.children.length > 100) list.lastChild.remove();
}

function setConn(text, cls) {
  $('conn').textContent = text;
  $('conn').className = cls;
}

async function refresh() {
  if (pending) {
    again = true; // an event came while reading: read once more when this read ends
    return;
  }
  pending = true;
  again = false;
  try {
    const r = await fetch('/api/snapshot', { headers: token ? { authorization: 'Bearer ' + token } : {} });
    if (r.status === 401) return askToken(token ? 'wrong token' : '');
    if (!r.ok) throw new Error('HTTP ' + r.status);
    snap = await r.json();
    snapAt = Date.now();
    render();
  } catch (err) {
    setConn('cannot read /api/snapshot: ' + err.message, 'down');
  } finally {
    pending = false;
    if (again) refresh();
  }
}

function askToken(msg) {
  $('main').style.display = 'none';
  $('login').style.display = 'block';
  $('login-error').textContent = msg;
  if (source) source.close();
}

function follow() {
  const q = token ? '?token=' + encodeURIComponent(token) : '';
  source = new EventSource('/api/events' + q);
  source.onopen = () => setConn('live', 'live');
  source.onerror = () => setConn('reconnecting…', 'down');
  source.addEventListener('berth', (m) => {
    const e = JSON.parse(m.data);
    addEvent(e);
    if (e.kind !== 'watch_started') refresh();
  });
}

async function start() {
  await refresh();
  if ($('login').style.display !== 'block') follow();
}

$('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  token = $('token').value;
  sessionStorage.setItem('berth-token', token);
  $('login').style.display = 'none';
  $('main').style.display = '';
  start();
});
setInterval(() => {
  $('clock').textContent = new Date().toLocaleString();
  render();
}, 1000);
$('clock').textContent = new Date().toLocaleString();
start();
</script>
</body>
</html>
`;
