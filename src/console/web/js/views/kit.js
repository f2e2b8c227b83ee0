// kit.js — small building blocks shared by the repositories, namespaces, metrics and admin
// views: sections, captioned tables in a scrolling wrapper, definition lists, error notes and
// the current hash route. Everything goes through dom.js (textContent/attributes); this module
// must never parse markup from strings.
import { h } from '../dom.js';

/** enc(s): one URL component (hash links and API paths). */
export const enc = (s) => encodeURIComponent(String(s));

/** route(): the current hash as {seg: [decoded path segments], query: URLSearchParams}. */
export function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const seg = path.split('/').filter((s) => s !== '').map((s) => {
    try { return decodeURIComponent(s); } catch (e) { return s; }
  });
  return { seg, query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

/** section(title, ...children): a <section> with an <h2> naming it. */
export function section(title, ...children) {
  return h('section', { class: 'vb-section' }, h('h2', { text: title }), ...children);
}

/** table(caption, headers, rows): a captioned table inside a horizontally scrolling wrapper;
 *  rows are arrays of cells (nodes or strings); empty → one "None" row. */
export function table(caption, headers, rows) {
  const body = rows.length
    ? rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))
    : [h('tr', {}, h('td', { colspan: String(headers.length), class: 'vb-empty', text: 'None' }))];
  return h('div', { class: 'vb-scroll' },
    h('table', { class: 'vb-table' },
      h('caption', { text: caption }),
      h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col' },
        t || h('span', { class: 'vb-sr', text: 'Actions' }))))),
      h('tbody', {}, body)));
}

/** dl(pairs): a definition list of [term, value] pairs; values missing from the API are
 *  left out rather than shown as invented data. */
export function dl(pairs) {
  const items = pairs.filter(([, v]) => v !== undefined && v !== null);
  return h('dl', { class: 'vb-dl' },
    items.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v instanceof Node ? v : String(v))]));
}

/** errorNote(e): an alert paragraph for a failed call. */
export function errorNote(e) {
  const msg = e && e.message ? e.message : String(e);
  const code = e && e.code ? `${e.code}: ` : '';
  return h('p', { class: 'vb-error', role: 'alert', text: code + msg });
}

/** short(id): a long id (digest, session id) in full, cut visually with an ellipsis by CSS
 *  (the whole id stays in the text and in a title attribute). */
export function short(id) {
  const s = String(id ?? '');
  return h('code', { class: 'vb-hash', title: s, text: s });
}

/** field(label, control): a label wrapping its text and control (a visible accessible name). */
export function field(label, control, cls = 'vb-field') {
  return h('label', { class: cls }, h('span', { class: 'vb-label', text: label }), control);
}

/** num(n): a count with digit grouping; "—" when absent. */
export function num(n) {
  return n === undefined || n === null ? '—' : Number(n).toLocaleString('en-US');
}

/** u(s): user-controlled text isolated for bidi (a right-to-left override stays inside). */
export const u = (s) => h('bdi', { text: s === undefined || s === null ? '—' : String(s) });

/** confirmStep(trigger, {prompt, confirm, onConfirm, enabled}): makes a destructive button
 *  ask first, in the page (never window.confirm): a click hides trigger and shows in its place
 *  a group with prompt (a string, or a function returning one at click time), a button named
 *  confirm ("Confirm delete" unless given) and "Keep". Keep or Escape puts trigger back,
 *  focused, and does nothing; confirm puts it back disabled, awaits onConfirm(), then enables
 *  it unless enabled() (when given) says no. Focus starts on Keep, so a stray Enter destroys
 *  nothing. Returns trigger. */
export function confirmStep(trigger, { prompt, confirm = 'Confirm delete', onConfirm, enabled = () => true }) {
  let step = null;
  const close = (refocus) => {
    if (!step) return;
    step.remove();
    step = null;
    trigger.hidden = false;
    if (refocus) trigger.focus();
  };
  trigger.addEventListener('click', () => {
    if (step) return;
    const text = typeof prompt === 'function' ? prompt() : prompt;
    const keep = h('button', { type: 'button', class: 'btn btn-small vb-keep', text: 'Keep',
      onclick: () => close(true) });
    const yes = h('button', { type: 'button', class: 'btn btn-small btn-danger vb-danger', text: confirm,
      onclick: async () => {
        close(false);
        trigger.disabled = true;
        try { await onConfirm(); } finally { trigger.disabled = !enabled(); }
      } });
    step = h('span', { class: 'confirm-step', role: 'group', 'aria-label': text },
      h('span', { class: 'confirm-text', text }), h('span', { class: 'confirm-buttons' }, yes, keep));
    step.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.preventDefault(); close(true); } });
    trigger.hidden = true;
    trigger.after(step);
    keep.focus();
  });
  return trigger;
}
