// app.js — the console shell: session check, login form, navigation, hash router.
// A view module exports `async render(root, params, ctx)`: root is an empty element to fill,
// params = {seg: [decoded path segments], name: seg[1], id: seg[3], query: URLSearchParams},
// ctx = {session, navigate(hash)}; render may return a cleanup function, called when the view
// is left. The shell never keeps the login secret: it leaves the input and every variable as
// soon as the POST is sent, and nothing is written to web storage.
import { h, clear } from './dom.js';
import { api } from './api.js';
import * as buckets from './views/buckets.js';
import * as objects from './views/objects.js';
import * as repos from './views/repos.js';
import * as namespaces from './views/namespaces.js';
import * as metrics from './views/metrics.js';
import * as admin from './views/admin.js';

const NAV = [
  ['Buckets', '#/buckets', 'buckets'],
  ['Repositories', '#/repos', 'repos'],
  ['Namespaces', '#/namespaces', 'namespaces'],
  ['Metrics', '#/metrics', 'metrics'],
  ['Admin', '#/admin', 'admin'],
];

const mainEl = document.getElementById('app');
let session = null;
let header = null;
let cleanup = null;
let generation = 0;

/** Parses location.hash into {seg, name, id, query}. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const pathPart = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const seg = pathPart.split('/').filter((s) => s !== '').map((s) => {
    try { return decodeURIComponent(s); } catch (e) { return s; }
  });
  return { seg, name: seg[1], id: seg[3], query };
}

/** The view module and entry point for a parsed route, or null when unknown. */
function pick(p) {
  const [top] = p.seg;
  if (top === 'buckets') {
    if (p.seg.length === 1) return buckets.render;
    if (p.seg.length === 2) return objects.render;
    if (p.seg.length === 3 && p.seg[2] === 'object') return objects.renderObject;
    return null;
  }
  if (top === 'repos') return repos.render;
  if (top === 'namespaces') return namespaces.render;
  if (top === 'metrics') return metrics.render;
  if (top === 'admin') return session && session.admin ? admin.render : null;
  return null;
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function runCleanup() {
  if (typeof cleanup === 'function') {
    try { cleanup(); } catch (e) { /* a view's cleanup failing must not block the next */ }
  }
  cleanup = null;
}

function markNav(top) {
  if (!header) return;
  for (const a of header.querySelectorAll('nav a')) {
    if (a.dataset.top === top) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

/** Renders the view the hash names into a fresh root inside <main>. */
async function route() {
  if (!session) return;
  runCleanup();
  const gen = ++generation;
  const p = parseHash();
  if (p.seg.length === 0) {
    history.replaceState(null, '', '#/buckets');
    return route();
  }
  markNav(p.seg[0]);
  const root = h('div', { class: 'view' });
  clear(mainEl).appendChild(root);
  const fn = pick(p);
  if (!fn) {
    root.appendChild(h('h1', { text: 'Not found' }));
    root.appendChild(h('p', {}, 'There is no such page. ', h('a', { href: '#/buckets', text: 'Buckets' })));
    return;
  }
  try {
    const c = await fn(root, p, { session, navigate });
    if (gen === generation) cleanup = c;
    else if (typeof c === 'function') c();
  } catch (e) {
    if (gen !== generation || (e && e.status === 401)) return;
    if (!root.querySelector('h1')) root.appendChild(h('h1', { text: 'Error' }));
    root.appendChild(h('p', { role: 'alert', class: 'error', text: (e && e.message) || String(e) }));
  }
}

function buildHeader() {
  const links = NAV.filter(([, , top]) => top !== 'admin' || session.admin).map(([label, href, top]) =>
    h('li', {}, h('a', {
      href, 'data-top': top, text: label,
      onclick: () => { if (location.hash === href) route(); },
    })));
  return h('header', { class: 'topbar' },
    h('a', { class: 'brand', href: '#/buckets', 'aria-label': 'cairn console home' },
      h('span', { class: 'brand-mark', 'aria-hidden': 'true', text: '◆' }), ' cairn'),
    h('nav', { 'aria-label': 'Main' }, h('ul', {}, links)),
    h('div', { class: 'who' },
      h('span', { class: 'who-name', title: `node ${session.node || ''}` },
        session.account || '', session.node ? h('span', { class: 'muted', text: ` @ ${session.node}` }) : null),
      h('button', { type: 'button', class: 'btn btn-quiet', text: 'Sign out', onclick: signOut })));
}

function showShell() {
  if (header) header.remove();
  header = buildHeader();
  document.body.insertBefore(header, mainEl);
  document.title = 'cairn console';
  route();
}

async function signOut() {
  try { await api('DELETE', 'session'); } catch (e) { /* the session is over either way */ }
  endSession('');
}

function endSession(message) {
  runCleanup();
  generation++;
  session = null;
  if (header) header.remove();
  header = null;
  showLogin(message);
}

/** The login form: a password input "Token" and a "Sign in" button; errors in role=alert. */
function showLogin(message) {
  const input = h('input', {
    id: 'login-token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, placeholder: 'ID:SECRET', 'aria-describedby': 'login-help',
  });
  const alertBox = h('p', { role: 'alert', class: 'error', id: 'login-error' });
  if (message) alertBox.textContent = message;
  const button = h('button', { type: 'submit', class: 'btn btn-primary', text: 'Sign in' });
  const form = h('form', { class: 'login-form', novalidate: true },
    h('label', { for: 'login-token', text: 'Token' }), input,
    h('p', { id: 'login-help', class: 'muted', text: 'An access token as ID:SECRET. It is sent once and not kept.' }),
    button, alertBox);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let body = { token: input.value.trim() };
    input.value = '';
    if (!body.token) {
      alertBox.textContent = 'Enter a token.';
      body = null;
      input.focus();
      return;
    }
    button.disabled = true;
    alertBox.textContent = '';
    const sent = api('POST', 'session', body);
    body.token = '';
    body = null;
    try {
      session = await sent;
      showShell();
    } catch (e) {
      alertBox.textContent = e.status === 401 ? 'That token was not accepted.'
        : e.status === 429 ? 'Too many failed sign-ins. Wait a minute and try again.'
          : (e.message || 'Sign-in failed.');
      button.disabled = false;
      input.focus();
    }
  });
  clear(mainEl).appendChild(h('div', { class: 'view login' },
    h('h1', { text: 'Sign in to cairn' }), form));
  document.title = 'Sign in — cairn console';
  input.focus();
}

window.addEventListener('cairn:logout', () => {
  if (session) endSession('Your session has ended. Sign in again.');
});
window.addEventListener('hashchange', () => route());

async function start() {
  try {
    session = await api('GET', 'session');
  } catch (e) {
    session = null;
  }
  if (session) showShell();
  else showLogin('');
}

start();
