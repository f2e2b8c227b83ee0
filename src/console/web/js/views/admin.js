// admin.js — administration (admin sessions only): accounts (create, disable/enable), tokens
// (create with chosen permissions and expiry — the secret is shown once in a dialog and dropped
// when it closes —, list, revoke) and console sessions (list, end). The secret is never stored
// anywhere but the dialog's read-only field while it is open; names come in through dom.js.
import { h, clear, fmtTime, toast } from '../dom.js';
import { api } from '../api.js';
import { enc, section, table, errorNote, short, field, u, confirmStep } from './kit.js';

const PERMS = ['bucket:create', 'bucket:delete', 'bucket:list', 'bucket:configure', 'object:get',
  'object:put', 'object:delete', 'object:list', 'object:lock', 'object:bypass-governance',
  'blobs:read', 'blobs:write', 'admin'];
const EXPIRY = [['Never', 0], ['1 day', 86400], ['7 days', 7 * 86400], ['30 days', 30 * 86400],
  ['90 days', 90 * 86400], ['1 year', 365 * 86400]];

async function act(fn, ok, reload) {
  try { await fn(); if (ok) toast(ok); } catch (e) { toast(e.message, 'error'); }
  await reload();
}

function accountsPanel(state) {
  const out = h('div', {});
  const name = h('input', { type: 'text', name: 'account', autocomplete: 'off' });
  async function load() {
    let doc;
    try { doc = await api('GET', 'accounts'); } catch (e) { clear(out).append(errorNote(e)); return; }
    state.accounts = doc.accounts || [];
    state.onAccounts();
    clear(out).append(table('Accounts', ['Account', 'Created', 'Status', ''], state.accounts.map((a) => [
      u(a.name), fmtTime(a.created), a.disabled ? 'Disabled' : 'Active',
      h('button', { type: 'button', class: a.disabled ? '' : 'vb-danger', 'aria-pressed': a.disabled ? 'true' : 'false',
        disabled: a.name === state.self, title: a.name === state.self ? 'Your own account' : null,
        text: a.disabled ? 'Enable' : 'Disable', onclick: () => act(
          () => api('PUT', `accounts/${enc(a.name)}/disabled`, { disabled: !a.disabled }),
          `${a.name} ${a.disabled ? 'enabled' : 'disabled'}`, load) })])));
  }
  const form = h('form', { class: 'vb-form', onsubmit: (ev) => {
    ev.preventDefault();
    const n = name.value.trim();
    if (!n) { toast('Enter an account name.', 'error'); return; }
    act(async () => { await api('POST', 'accounts', { name: n }); name.value = ''; },
      `Account ${n} created`, load);
  } }, field('Account name', name), h('button', { type: 'submit', text: 'Create account' }));
  return { el: section('Accounts', form, out), load };
}

/** showSecret(token): a modal dialog with the new token in a read-only field and "Copy token".
 *  Returns drop(): it empties the field, closes and removes the dialog at once (not on the
 *  dialog's later close event), so the secret is gone from the page. Close, Escape, the view's
 *  cleanup and any hash or history navigation all call it. */
function showSecret(token) {
  const input = h('input', { type: 'text', readonly: true, class: 'vb-secret', value: token,
    autocomplete: 'off', spellcheck: 'false' });
  const dlg = h('dialog', { class: 'vb-dialog', 'aria-labelledby': 'vb-secret-title' },
    h('h2', { id: 'vb-secret-title', text: 'New token' }),
    h('p', { text: 'Copy it now: the secret is shown only once.' }),
    field('New token', input),
    h('div', { class: 'vb-actions' },
      h('button', { type: 'button', text: 'Copy token', onclick: async () => {
        try { await navigator.clipboard.writeText(input.value); } catch (e) {
          input.select(); document.execCommand('copy');
        }
        toast('Token copied');
      } }),
      h('button', { type: 'button', text: 'Close', onclick: () => drop() })));
  function drop() {
    input.value = '';
    input.removeAttribute('value');
    window.removeEventListener('hashchange', drop);
    window.removeEventListener('popstate', drop);
    if (dlg.open) dlg.close();
    dlg.remove();
  }
  dlg.addEventListener('close', drop); /* Escape */
  window.addEventListener('hashchange', drop); /* leaving the view drops the secret too */
  window.addEventListener('popstate', drop);
  document.body.append(dlg);
  dlg.showModal();
  input.focus();
  input.select();
  return drop;
}

function tokensPanel(state) {
  const out = h('div', {});
  const account = h('select', { name: 'account' });
  const expiry = h('select', { name: 'expiry' }, EXPIRY.map(([t, s]) => h('option', { value: String(s), text: t })));
  const boxes = PERMS.map((p) => h('input', { type: 'checkbox', name: 'perm', value: p, checked: p !== 'admin' }));
  state.onAccounts = () => {
    const keep = account.value;
    clear(account).append(...state.accounts.filter((a) => !a.disabled)
      .map((a) => h('option', { value: a.name, text: a.name })));
    if (keep) account.value = keep;
  };
  async function load() {
    let doc;
    try { doc = await api('GET', 'tokens'); } catch (e) { clear(out).append(errorNote(e)); return; }
    clear(out).append(table('Tokens', ['Token', 'Account', 'Permissions', 'Created', 'Expires', 'Status', ''],
      (doc.tokens || []).map((t) => [
        h('code', { text: String(t.id) }), u(t.account),
        h('span', { class: 'vb-perms', text: Array.isArray(t.perms) ? t.perms.join(', ') : String(t.perms ?? '') }),
        fmtTime(t.created), t.expires ? fmtTime(t.expires) : 'never', t.revoked ? 'Revoked' : 'Active',
        t.revoked ? '' : confirmStep(h('button', { type: 'button', class: 'vb-danger', text: 'Revoke' }), {
          prompt: `Revoke token ${t.id}?`, confirm: 'Confirm revoke', onConfirm: () => act(
            () => api('DELETE', `tokens/${enc(t.id)}`), `Token ${t.id} revoked`, load) })])));
  }
  const form = h('form', { class: 'vb-form vb-token-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const perms = boxes.filter((b) => b.checked).map((b) => b.value);
    const secs = Number(expiry.value);
    const body = { account: account.value, perms, expires: secs ? Math.floor(Date.now() / 1000) + secs : 0 };
    if (!body.account || !perms.length) { toast('Choose an account and at least one permission.', 'error'); return; }
    try {
      const r = await api('POST', 'tokens', body);
      state.closeSecret = showSecret(r.token);
    } catch (e) { toast(e.message, 'error'); }
    load();
  } }, field('Account', account), field('Expiry', expiry),
  h('fieldset', { class: 'vb-perms-set' }, h('legend', { text: 'Permissions' }),
    boxes.map((b) => h('label', { class: 'vb-check' }, b, h('span', { text: b.value })))),
  h('button', { type: 'submit', text: 'Create token' }));
  return { el: section('Tokens', form, out), load };
}

function sessionsPanel() {
  const out = h('div', {});
  async function load() {
    let doc;
    try { doc = await api('GET', 'sessions'); } catch (e) { clear(out).append(errorNote(e)); return; }
    clear(out).append(table('Sessions', ['Session', 'Account', 'Token', 'Created', 'Last seen', 'Source', ''],
      (doc.sessions || []).map((s) => [short(s.id), u(s.account), u(s.token_id),
        fmtTime(s.created), fmtTime(s.last_seen), s.source ?? '—',
        confirmStep(h('button', { type: 'button', class: 'vb-danger', text: 'End session' }), {
          prompt: `End this session of ${s.account ?? 'its account'}?`, confirm: 'Confirm end session',
          onConfirm: () => act(() => api('DELETE', `sessions/${enc(s.id)}`), 'Session ended', load) })])));
  }
  return { el: section('Sessions', h('button', { type: 'button', text: 'Refresh sessions', onclick: () => load() }), out), load };
}

/** render(root, params, ctx): the admin view; non-admin sessions get a notice, no API calls.
 *  Returns the cleanup app.js calls on leaving: it closes a token dialog still open. */
export async function render(root, params, ctx) {
  const view = h('div', { class: 'vb-view' }, h('h1', { text: 'Admin' }));
  root.append(view);
  if (!(ctx && ctx.session && ctx.session.admin)) {
    view.append(h('p', { role: 'alert', class: 'vb-error', text: 'Administration needs a token with the admin permission.' }));
    return;
  }
  const state = { accounts: [], onAccounts: () => {}, closeSecret: null, self: ctx.session.account };
  const tokens = tokensPanel(state);
  const accounts = accountsPanel(state);
  const sessions = sessionsPanel();
  view.append(accounts.el, tokens.el, sessions.el);
  await Promise.all([accounts.load(), tokens.load(), sessions.load()]);
  return () => { if (state.closeSecret) state.closeSecret(); };
}
