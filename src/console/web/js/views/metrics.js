// metrics.js — a node's metrics from GET metrics (5 s samples, up to 1 h): requests/s by
// face and by status class, errors by face, bytes in/out, p50/p99 latency, open connections,
// pool queue depths, store bytes and blobs, sweeper reclaim. In a fleet a "Node" picker lists
// the registry's nodes; another node's samples come through GET metrics?node=ID (that node
// asked by this one with the caller's session). Refreshes every 5 s while shown; render returns
// the cleanup that stops the timer (app.js calls it on navigation), and the timer also stops
// by itself once the view is no longer in the document.
import { h, clear, fmtBytes, fmtTime } from '../dom.js';
import { api } from '../api.js';
import { lineChart } from '../chart.js';
import { errorNote } from './kit.js';

const REFRESH_MS = 5000;
const rate = (v) => (v >= 100 ? String(Math.round(v)) : String(Math.round(v * 100) / 100));
const perSec = (v) => `${fmtBytes(Math.round(v))}/s`;
const bytesAxis = (v) => fmtBytes(Math.round(v));
const ms = (v) => `${Math.round(v * 10) / 10} ms`;
const count = (v) => String(Math.round(v));

/** keyed(samples, pick): one series per key of the objects pick(sample) returns. */
function keyed(samples, pick, scale = 1) {
  const names = new Set();
  for (const s of samples) for (const k of Object.keys(pick(s) || {})) names.add(k);
  return [...names].sort().map((k) => ({
    name: k, points: samples.map((s) => [s.t, Number((pick(s) || {})[k] || 0) * scale]),
  }));
}

function field(samples, key, name, scale = 1) {
  return { name, points: samples.filter((s) => s[key] !== undefined && s[key] !== null)
    .map((s) => [s.t, Number(s[key]) * scale]) };
}

const sum = (o) => Object.values(o || {}).reduce((a, b) => a + Number(b || 0), 0);

function byClass(req) {
  const out = {};
  for (const st of Object.values(req || {})) {
    for (const [code, n] of Object.entries(st || {})) {
      if (!/^[1-5](\d\d|xx)$/i.test(code)) continue; /* a face's total ("all"), not a status */
      const c = `${String(code)[0]}xx`;
      out[c] = (out[c] || 0) + Number(n || 0);
    }
  }
  return out;
}

/** errors(req): a face's 4xx and 5xx answers of a sample, as {"FACE 4xx": n, …}. */
function errors(req) {
  const out = {};
  for (const [face, st] of Object.entries(req || {})) {
    for (const c of ['4xx', '5xx']) if (st && c in st) out[`${face} ${c}`] = Number(st[c] || 0);
  }
  return out;
}

function charts(doc) {
  const s = (doc.samples || []).slice().sort((a, b) => a.t - b.t);
  const iv = Number(doc.interval_s) || 5;
  const byFace = (x) => {
    const o = {};
    for (const [f, st] of Object.entries(x.requests || {})) o[f] = sum(st);
    return o;
  };
  const perIv = 1 / iv;
  const counts = { format: count, integer: true };
  const sizes = { format: bytesAxis, bytes: true };
  const specs = [
    ['Requests per second by face', keyed(s, byFace, perIv), { format: rate }],
    ['Requests per second by status class', keyed(s, (x) => byClass(x.requests), perIv), { format: rate }],
    ['Errors per second by face', keyed(s, (x) => errors(x.requests), perIv), { format: rate }],
    ['Bytes in and out per second', [field(s, 'bytes_in', 'in', perIv), field(s, 'bytes_out', 'out', perIv)],
      { format: perSec, axis: bytesAxis, bytes: true }],
    ['Latency p50 and p99', [field(s, 'p50_ms', 'p50'), field(s, 'p99_ms', 'p99')], { format: ms }],
    ['Open connections', [field(s, 'connections', 'connections')], counts],
    ['Pool queue depths', keyed(s, (x) => x.queues), counts],
    [`Store bytes written per ${iv} s`, [field(s, 'store_bytes', 'bytes')], sizes],
    [`Store blobs written per ${iv} s`, [field(s, 'store_blobs', 'blobs')], counts],
    [`Sweeper reclaim per ${iv} s`, [field(s, 'swept_bytes', 'reclaimed')], sizes],
    /* Totals, not deltas: the store's running count at each sample's end. */
    ['Store bytes held', [field(s, 'stored_bytes', 'bytes')], sizes],
    ['Store blobs held', [field(s, 'stored_blobs', 'blobs')], counts],
  ];
  return specs.map(([title, series, opts]) => lineChart({ title, series, ...opts }));
}

/** render(root, params, ctx): the metrics view; returns its cleanup (stops the refresh). */
export async function render(root, params, ctx) {
  const node = h('p', { class: 'vb-muted' });
  const status = h('p', { class: 'vb-muted', role: 'status' });
  const grid = h('div', { class: 'vb-charts' });
  const err = h('div', {});
  // The node picker: shown once the registry lists more than one node.
  const select = h('select', { id: 'metrics-node', name: 'node' });
  const picker = h('p', { class: 'search', hidden: true },
    h('label', { for: 'metrics-node', text: 'Node' }), select);
  let pick = '';
  let own = '';
  const view = h('div', { class: 'vb-view' }, h('h1', { text: 'Metrics' }), picker, node, status, err, grid);
  root.append(view);
  const showNodes = (nodes) => {
    picker.hidden = !(nodes && nodes.length > 1);
    if (picker.hidden) return;
    const keep = pick || own;
    clear(select).append(...nodes.map((n) => h('option', { value: String(n.id),
      text: `${n.id}${n.self ? ' (this node)' : ''}${n.up ? '' : ' (not up)'}` })));
    select.value = keep;
  };
  let timer = null;
  let busy = false;
  let again = false; /* the picker moved during a call: ask once more after it */
  let seen = false;
  let stopped = false;
  const stop = () => { stopped = true; if (timer !== null) { clearInterval(timer); timer = null; } };
  async function refresh() {
    if (view.isConnected) seen = true;
    else if (seen) { stop(); return; }
    if (busy) return;
    busy = true;
    try {
      const asked = pick;
      const doc = await api('GET', asked && asked !== own ? `metrics?node=${encodeURIComponent(asked)}` : 'metrics');
      if (asked !== pick) return; /* the picker moved meanwhile: the next refresh asks again */
      clear(err);
      if (!asked || asked === own) own = String((doc.nodes || []).find((n) => n.self)?.id || doc.node || '');
      showNodes(doc.nodes);
      node.textContent = doc.node ? `Node ${doc.node}` : '';
      const n = (doc.samples || []).length;
      status.textContent = `${n} samples of ${doc.interval_s || 5} s · updated ${fmtTime(Date.now() / 1000)}`;
      clear(grid).append(...charts(doc));
    } catch (e) {
      clear(err).append(errorNote(e));
      if (pick && pick !== own) clear(grid); /* no charts of the node left for another's */
      if (e.status === 401 || e.status === 403) stop();
    } finally {
      busy = false;
      if (again && !stopped) { again = false; refresh(); }
    }
  }
  select.addEventListener('change', () => {
    pick = select.value;
    node.textContent = `Node ${pick}`;
    status.textContent = 'Loading…';
    clear(grid);
    if (busy) again = true;
    else refresh();
  });
  await refresh();
  if (!stopped) timer = setInterval(refresh, REFRESH_MS);
  return stop;
}
