// namespaces.js — blob namespaces: member count and bytes per namespace, stat of a digest, and
// (for admin sessions) the namespace's grants with add and remove. Namespace names, digests and
// account names are rendered through dom.js only.
import { h, clear, fmtBytes, toast } from '../dom.js';
import { api } from '../api.js';
import { enc, route, section, table, dl, errorNote, field, num, u, confirmStep } from './kit.js';

/** parsePerms("read, write") → ["read", "write"] (split on commas and spaces). */
function parsePerms(s) {
  return String(s).split(/[\s,]+/).map((p) => p.trim().toLowerCase()).filter(Boolean);
}

function statForm(nsInput) {
  const digest = h('input', { type: 'text', name: 'digest', autocomplete: 'off',
    spellcheck: 'false', placeholder: 'hex digest' });
  const out = h('div', { class: 'vb-result', 'aria-live': 'polite' });
  const form = h('form', { class: 'vb-form', onsubmit: async (ev) => {
    ev.preventDefault();
    clear(out);
    const ns = nsInput.value.trim();
    const d = digest.value.trim();
    if (!ns || !d) { out.append(errorNote('Enter a namespace and a digest.')); return; }
    try {
      const r = await api('GET', `namespaces/${enc(ns)}/blobs/${enc(d)}`);
      out.append(dl([['Digest', r.digest], ['Size', r.size === undefined ? null : fmtBytes(r.size)],
        ['Present', r.present ? 'yes' : 'no']]));
    } catch (e) { out.append(errorNote(e)); }
  } }, field('Digest', digest), h('button', { type: 'submit', text: 'Stat' }));
  return section('Stat a digest', form, out);
}

function grantsPanel(nsInput) {
  const out = h('div', {});
  const account = h('input', { type: 'text', name: 'account', autocomplete: 'off' });
  const perms = h('input', { type: 'text', name: 'perms', value: 'read', placeholder: 'read, write' });
  async function load() {
    const ns = nsInput.value.trim();
    clear(out);
    if (!ns) { out.append(h('p', { class: 'vb-muted', text: 'Choose a namespace to see its grants.' })); return; }
    let doc;
    try { doc = await api('GET', `namespaces/${enc(ns)}/grants`); } catch (e) {
      out.append(errorNote(e)); return;
    }
    out.append(table(`Grants on ${ns}`, ['Account', 'Permissions', ''], (doc.grants || []).map((g) => [
      u(g.account), (g.perms || []).join(', '),
      confirmStep(h('button', { type: 'button', class: 'vb-danger', text: 'Remove',
        'aria-label': `Remove grant of ${g.account}` }), {
        prompt: `Remove the grant of ${g.account} on ${ns}?`, confirm: 'Confirm remove',
        onConfirm: async () => {
          try {
            await api('DELETE', `namespaces/${enc(ns)}/grants/${enc(g.account)}`);
            toast(`Grant of ${g.account} removed`);
          } catch (e) { toast(e.message, 'error'); }
          load();
        } })])));
  }
  const form = h('form', { class: 'vb-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const ns = nsInput.value.trim();
    const body = { account: account.value.trim(), perms: parsePerms(perms.value) };
    if (!ns || !body.account || !body.perms.length) {
      toast('Enter a namespace, an account and permissions.', 'error'); return;
    }
    try {
      await api('POST', `namespaces/${enc(ns)}/grants`, body);
      toast(`Granted ${body.perms.join(', ')} on ${ns} to ${body.account}`);
      account.value = '';
    } catch (e) { toast(e.message, 'error'); }
    load();
  } }, field('Account', account), field('Permissions', perms),
  h('button', { type: 'submit', text: 'Add grant' }));
  return { el: section('Grants', form, out), load };
}

/** render(root, params, ctx): the namespaces view. */
export async function render(root, params, ctx) {
  const admin = Boolean(ctx && ctx.session && ctx.session.admin);
  const view = h('div', { class: 'vb-view' }, h('h1', { text: 'Namespaces' }));
  root.append(view);
  const list = h('datalist', { id: 'vb-ns-list' });
  const nsInput = h('input', { type: 'text', name: 'namespace', list: 'vb-ns-list', autocomplete: 'off' });
  const grants = admin ? grantsPanel(nsInput) : null;
  let doc = { namespaces: [] };
  try { doc = await api('GET', 'namespaces'); } catch (e) { view.append(errorNote(e)); }
  const nss = doc.namespaces || [];
  list.append(...nss.map((n) => h('option', { value: n.name })));
  /* Exact running totals from the blobs service (docs/console.md); absent where not listable. */
  view.append(table('Namespaces', ['Name', 'Members', 'Size'], nss.map((n) => [
    h('a', { href: `#/namespaces?ns=${enc(n.name)}` }, u(n.name)), num(n.members),
    n.bytes === undefined ? '—' : fmtBytes(n.bytes)])));
  nsInput.value = route().query.get('ns') || (nss.length ? nss[0].name : '');
  view.append(h('div', { class: 'vb-form' }, field('Namespace', nsInput), list,
    grants ? h('button', { type: 'button', text: 'Show grants', onclick: () => grants.load() }) : null));
  view.append(statForm(nsInput));
  if (grants) { view.append(grants.el); grants.load(); }
}
