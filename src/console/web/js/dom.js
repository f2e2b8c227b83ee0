// dom.js — the console's only way to build DOM. Every string a user or the server controls
// (keys, names, metadata, descriptions) goes in through textContent or setAttribute here;
// this module must never parse markup from strings and never evaluate code.

const BOOL_PROPS = new Set(['disabled', 'checked', 'readonly', 'required', 'multiple', 'hidden',
  'selected', 'open']);

function setProp(el, key, val) {
  if (val === undefined || val === null || val === false) return;
  if (key === 'text') {
    el.textContent = String(val);
  } else if (key === 'class') {
    el.className = Array.isArray(val) ? val.filter(Boolean).join(' ') : String(val);
  } else if (key.startsWith('on') && typeof val === 'function') {
    el.addEventListener(key.slice(2).toLowerCase(), val);
  } else if (key === 'value') {
    el.value = String(val);
  } else if (BOOL_PROPS.has(key)) {
    el[key] = Boolean(val);
    if (val) el.setAttribute(key, '');
  } else if (key === 'href' || key === 'src') {
    el.setAttribute(key, safeUrl(String(val)));
  } else {
    el.setAttribute(key, val === true ? '' : String(val));
  }
}

// Refuse script-bearing URL schemes in href/src; everything else is left as given.
function safeUrl(u) {
  const s = u.replace(/[\u0000-\u0020]+/g, '').toLowerCase();
  if (s.startsWith('javascript:') || s.startsWith('vbscript:') || s.startsWith('data:text'))
    return '#';
  return u;
}

function append(el, child) {
  if (child === null || child === undefined || child === false || child === true) return;
  if (Array.isArray(child)) {
    for (const c of child) append(el, c);
  } else if (child instanceof Node) {
    el.appendChild(child);
  } else {
    el.appendChild(document.createTextNode(String(child)));
  }
}

/** h(tag, props, ...children): a new element; props as in the design (class, id, for, type,
 *  value, href, name, placeholder, title, disabled, checked, role, aria-*, data-*, on* handlers,
 *  text); children are nodes or strings (text nodes), null/false skipped, arrays flattened. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) setProp(el, k, v);
  append(el, children);
  return el;
}

/** clear(el): removes every child of el; returns el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** fmtBytes(n): "0 B", "1.5 KiB", "2.0 MiB"…; "—" for a missing value. */
export function fmtBytes(n) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return '—';
  let v = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** fmtTime(t): an RFC 3339 string or UNIX seconds as local "YYYY-MM-DD HH:MM:SS"; "—" if
 *  missing; the input as given if it does not parse. */
export function fmtTime(t) {
  if (t === null || t === undefined || t === '' || t === 0) return '—';
  const d = typeof t === 'number' ? new Date(t * 1000) : new Date(String(t));
  if (Number.isNaN(d.getTime())) return String(t);
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

let toastRegion = null;

/** toast(msg, kind): shows msg for a few seconds in a polite aria-live region (kind "error"
 *  uses an assertive one styled as an error). */
export function toast(msg, kind = 'info') {
  if (!toastRegion || !toastRegion.isConnected) {
    toastRegion = h('div', { class: 'toasts', 'aria-live': 'polite', role: 'status' });
    document.body.appendChild(toastRegion);
  }
  const t = h('div', { class: `toast toast-${kind}`, text: msg });
  toastRegion.appendChild(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}
