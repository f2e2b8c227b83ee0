// chart.js — the console's own small SVG line chart: axes with a few ticks, one or more series,
// a <title> and aria-label describing it, and a legend with each series' latest value. Built
// with createElementNS and attribute setters only; colours come from classes in views.css
// (vb-s0…vb-s7), never from inline styles. Must never parse markup or evaluate strings.
import { h } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 640, H = 200, ML = 78, MR = 14, MT = 10, MB = 26;

function svg(tag, attrs = {}, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const k of kids) if (k) el.appendChild(k);
  return el;
}

function text(x, y, s, cls) {
  const t = svg('text', { x, y, class: cls });
  t.textContent = s;
  return t;
}

/** niceStep(span, n, bytes): a 1/2/5×10^k step giving about n intervals over span; with
 *  bytes, in units of 1024^j so byte axes read 50 KiB, 100 KiB… */
function niceStep(span, n, bytes) {
  let raw = span / n;
  const unit = bytes && raw >= 1 ? Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024))) : 1;
  raw /= unit;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p * unit;
}

function hhmm(t) {
  const d = new Date(t * 1000);
  const p = (x) => String(x).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function scales(series, bytes, integer) {
  let x0 = Infinity, x1 = -Infinity, y1 = 0, y0 = 0;
  for (const s of series) for (const [x, y] of s.points) {
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    x0 = Math.min(x0, x); x1 = Math.max(x1, x);
    y1 = Math.max(y1, y); y0 = Math.min(y0, y);
  }
  const empty = !Number.isFinite(x0);
  if (empty) { x0 = 0; x1 = 1; }
  if (x1 === x0) { x0 -= 5; x1 += 5; }
  const step = Math.max(niceStep((y1 - y0) || 1, 4, bytes), integer || bytes ? 1 : 0);
  y1 = Math.ceil((y1 || 1) / step) * step;
  y0 = Math.floor(y0 / step) * step;
  return { x0, x1, y0, y1, step, empty };
}

function axes(sc, fmt) {
  const g = svg('g', { class: 'vb-axes', 'aria-hidden': 'true' });
  const sx = (x) => ML + ((x - sc.x0) / (sc.x1 - sc.x0)) * (W - ML - MR);
  const sy = (y) => H - MB - ((y - sc.y0) / (sc.y1 - sc.y0)) * (H - MT - MB);
  for (let v = sc.y0; v <= sc.y1 + sc.step / 2; v += sc.step) {
    const y = sy(v).toFixed(1);
    g.appendChild(svg('line', { x1: ML, x2: W - MR, y1: y, y2: y, class: 'vb-grid' }));
    g.appendChild(text(ML - 6, Number(y) + 4, fmt(v), 'vb-ytick'));
  }
  for (let i = 0; i <= 3 && !sc.empty; i++) {
    const t = sc.x0 + ((sc.x1 - sc.x0) * i) / 3;
    const x = sx(t);
    g.appendChild(svg('line', { x1: x, x2: x, y1: H - MB, y2: H - MB + 4, class: 'vb-axis' }));
    g.appendChild(text(x, H - 8, hhmm(t), i === 0 ? 'vb-xtick vb-first' : i === 3 ? 'vb-xtick vb-last' : 'vb-xtick'));
  }
  g.appendChild(svg('line', { x1: ML, x2: W - MR, y1: H - MB, y2: H - MB, class: 'vb-axis' }));
  g.appendChild(svg('line', { x1: ML, x2: ML, y1: MT, y2: H - MB, class: 'vb-axis' }));
  return { g, sx, sy };
}

/** lineChart({title, series: [{name, points: [[unixSeconds, value], ...]}], format, axis,
 *  bytes}): a <figure> holding the SVG chart (role img, <title> and aria-label with the latest
 *  values) and its legend. format(value) renders legend values (default: number), axis(value)
 *  the y tick labels (default: format); bytes: y ticks at binary multiples; integer: y ticks
 *  at whole numbers. A chart without points says so inside the plot. */
export function lineChart({ title, series, format = (v) => String(Math.round(v * 100) / 100),
  axis = format, bytes = false, integer = false }) {
  const sc = scales(series, bytes, integer);
  const { g, sx, sy } = axes(sc, axis);
  const latest = series.map((s) => {
    const last = s.points[s.points.length - 1];
    return `${s.name} ${last ? format(last[1]) : 'no data'}`;
  });
  const npts = series.reduce((n, s) => n + s.points.length, 0);
  const label = `${title}: ${npts ? `${series[0]?.points.length ?? 0} samples` : 'no samples yet'}` +
    (latest.length ? `; latest ${latest.join(', ')}` : '');
  const titleEl = svg('title');
  titleEl.textContent = label;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'vb-chart-svg',
    'data-points': npts,
  }, titleEl, g);
  if (!npts) root.appendChild(text(ML + (W - ML - MR) / 2, (H - MB + MT) / 2, 'No data yet', 'vb-nodata'));
  series.forEach((s, i) => {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (!pts.length) return;
    const cls = `vb-line vb-s${i % 8}`;
    if (pts.length === 1) {
      root.appendChild(svg('circle', { cx: sx(pts[0][0]), cy: sy(pts[0][1]), r: 3, class: cls }));
      return;
    }
    const d = pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
    root.appendChild(svg('polyline', { points: d, class: cls }));
  });
  const legend = h('ul', { class: 'vb-legend' }, series.map((s, i) => !s.points.length ? null : h('li', {},
    h('span', { class: `vb-swatch vb-s${i % 8}`, 'aria-hidden': 'true' }), latest[i])));
  return h('figure', { class: 'vb-chart' }, h('figcaption', { text: title }), root, legend);
}
