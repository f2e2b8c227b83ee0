// views/buckets.js — the bucket list (with create) and the settings panel of one bucket
// (delete, visibility and policy, versioning), which the objects view embeds. Names and
// policies from the server are shown through dom.js only; nothing is kept in web storage.
import { h, clear, fmtBytes, fmtTime, toast } from '../dom.js';
import { api } from '../api.js';
import { confirmStep } from './kit.js';

/** Why name breaks S3's bucket naming rules, or '' when it follows them. */
export function bucketNameProblem(name) {
  if (name.length < 3) return 'At least 3 characters.';
  if (name.length > 63) return 'At most 63 characters.';
  if (!/^[a-z0-9.-]+$/.test(name)) return 'Only lowercase letters, digits, dots and hyphens.';
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name))
    return 'Must begin and end with a letter or digit.';
  if (name.includes('..')) return 'No two dots in a row.';
  if (name.includes('.-') || name.includes('-.')) return 'No dot next to a hyphen.';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return 'Must not look like an IP address.';
  if (name.startsWith('xn--') || name.startsWith('sthree-')) return 'That prefix is reserved.';
  if (name.endsWith('-s3alias') || name.endsWith('--ol-s3')) return 'That suffix is reserved.';
  return '';
}

const enc = encodeURIComponent;

function createForm(onCreated) {
  const input = h('input', {
    id: 'bucket-name', name: 'bucket', type: 'text', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': 'bucket-name-help', maxlength: '63',
  });
  const help = h('p', { id: 'bucket-name-help', class: 'hint', text: '3–63 characters: a–z, 0–9, dots, hyphens.' });
  const button = h('button', { type: 'submit', class: 'btn btn-primary', text: 'Create bucket', disabled: true });
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const check = () => {
    const v = input.value;
    const why = v ? bucketNameProblem(v) : '';
    help.textContent = why || '3–63 characters: a–z, 0–9, dots, hyphens.';
    help.className = why ? 'hint error' : 'hint';
    if (why) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
    button.disabled = !v || Boolean(why);
  };
  input.addEventListener('input', check);
  const form = h('form', { class: 'inline-form', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'bucket-name', text: 'Bucket name' }), input, help),
    button, alertBox);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = input.value;
    if (bucketNameProblem(name)) { check(); return; }
    button.disabled = true;
    alertBox.textContent = '';
    try {
      await api('POST', 'buckets', { name });
      input.value = '';
      check();
      toast(`Bucket ${name} created.`);
      onCreated(name);
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
      button.disabled = false;
    }
  });
  return form;
}

function bucketTable(list) {
  const rows = list.map((b) => h('tr', {},
    h('th', { scope: 'row' }, h('a', { href: `#/buckets/${enc(b.name)}` }, h('bdi', { text: b.name }))),
    h('td', { class: 'num', text: String(b.objects ?? '—') }),
    h('td', { class: 'num', text: fmtBytes(b.bytes) }),
    h('td', { text: fmtTime(b.created) })));
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: '4', class: 'empty', text: 'No buckets yet.' })));
  return h('div', { class: 'table-wrap' }, h('table', { class: 'buckets' },
    h('caption', { text: `Buckets (${list.length})` }),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: 'Name' }), h('th', { scope: 'col', class: 'num', text: 'Objects' }),
      h('th', { scope: 'col', class: 'num', text: 'Size' }), h('th', { scope: 'col', text: 'Created' }))),
    h('tbody', {}, rows)));
}

/** The bucket list view (#/buckets). */
export async function render(root) {
  const listBox = h('div', { class: 'list-box', 'aria-busy': 'true' }, h('p', { class: 'muted', text: 'Loading…' }));
  const load = async () => {
    listBox.setAttribute('aria-busy', 'true');
    try {
      const doc = await api('GET', 'buckets');
      const list = (doc && doc.buckets) || [];
      list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      clear(listBox).appendChild(bucketTable(list));
    } catch (e) {
      if (e.status !== 401) clear(listBox).appendChild(h('p', { role: 'alert', class: 'error', text: e.message }));
    }
    listBox.removeAttribute('aria-busy');
  };
  root.append(
    h('h1', { text: 'Buckets' }),
    h('section', { class: 'panel' },
      h('h2', { id: 'create-bucket-h', text: 'New bucket' }), createForm(load)),
    listBox);
  await load();
}

const PUBLIC_READ = (b) => ({
  Version: '2012-10-17',
  Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: ['s3:GetObject'],
    Resource: [`arn:aws:s3:::${b}/*`] }],
});

function policyEditor(name, info) {
  const area = h('textarea', { id: 'bucket-policy', name: 'policy', rows: '10', spellcheck: 'false',
    class: 'code', 'aria-describedby': 'policy-status' });
  area.value = info.policy ? JSON.stringify(info.policy, null, 2) : '';
  const status = h('p', { id: 'policy-status', class: 'hint' });
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const vis = h('p', {}, 'Visibility: ', h('strong', { text: info.public ? 'public' : 'private' }));
  const setVisible = (pub) => { vis.lastChild.textContent = pub ? 'public' : 'private'; };
  const save = async () => {
    alertBox.textContent = '';
    let policy;
    try {
      policy = JSON.parse(area.value);
    } catch (e) {
      alertBox.textContent = `Not valid JSON: ${e.message}`;
      return;
    }
    try {
      await api('PUT', `buckets/${enc(name)}/policy`, { policy });
      const fresh = await api('GET', `buckets/${enc(name)}`);
      setVisible(fresh && fresh.public);
      status.textContent = 'Policy saved.';
      toast('Policy saved.');
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  };
  const remove = async () => {
    alertBox.textContent = '';
    try {
      await api('DELETE', `buckets/${enc(name)}/policy`);
      area.value = '';
      setVisible(false);
      status.textContent = 'Policy removed.';
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  };
  return h('section', { class: 'panel' },
    h('h3', { id: 'policy-h', text: 'Visibility and policy' }), vis,
    h('label', { for: 'bucket-policy', text: 'Policy' }), area, status,
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'btn btn-primary', text: 'Save policy', onclick: save }),
      h('button', { type: 'button', class: 'btn', text: 'Public read template',
        onclick: () => { area.value = JSON.stringify(PUBLIC_READ(name), null, 2); area.focus(); } }),
      confirmStep(h('button', { type: 'button', class: 'btn', text: 'Remove policy' }), {
        prompt: `Remove the policy of ${name}?`, confirm: 'Confirm remove', onConfirm: remove })),
    alertBox);
}

function versioningPanel(name, info) {
  const box = h('input', { id: 'bucket-versioning', type: 'checkbox', checked: info.versioning === 'Enabled' });
  const state = h('span', { class: 'muted', text: ` (${info.versioning || 'Off'})` });
  const alertBox = h('p', { role: 'alert', class: 'error' });
  box.addEventListener('change', async () => {
    const status = box.checked ? 'Enabled' : 'Suspended';
    box.disabled = true;
    alertBox.textContent = '';
    try {
      await api('PUT', `buckets/${enc(name)}/versioning`, { status });
      state.textContent = ` (${status})`;
      toast(`Versioning ${status.toLowerCase()}.`);
    } catch (e) {
      box.checked = !box.checked;
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
    box.disabled = false;
  });
  return h('section', { class: 'panel' },
    h('h3', { id: 'versioning-h', text: 'Versioning' }),
    h('div', { class: 'check' }, box, h('label', { for: 'bucket-versioning', text: 'Versioning' }), state),
    alertBox);
}

function deletePanel(name, ctx) {
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const del = async () => {
    alertBox.textContent = '';
    try {
      await api('DELETE', `buckets/${enc(name)}`);
      toast(`Bucket ${name} deleted.`);
      ctx.navigate('#/buckets');
    } catch (e) {
      alertBox.textContent = e.code === 'BucketNotEmpty'
        ? `BucketNotEmpty: the bucket still holds objects. ${e.message}` : `${e.code}: ${e.message}`;
    }
  };
  const btn = h('button', { type: 'button', class: 'btn btn-danger', text: 'Delete bucket' });
  confirmStep(btn, { prompt: `Delete bucket ${name}?`, onConfirm: del });
  return h('section', { class: 'panel danger' },
    h('h3', { id: 'delete-h', text: 'Delete' }),
    h('p', { class: 'hint', text: 'Only an empty bucket can be deleted.' }),
    h('div', { class: 'actions' }, btn), alertBox);
}

/** Fills container with the settings of bucket name (GET buckets/NAME); ctx as for views. */
export async function renderSettings(container, name, ctx) {
  const info = await api('GET', `buckets/${enc(name)}`);
  const summary = h('p', { class: 'muted' },
    `${info.objects ?? 0} objects, ${fmtBytes(info.bytes)}, created ${fmtTime(info.created)}`);
  container.append(summary, h('div', { class: 'settings-grid' },
    policyEditor(name, info), versioningPanel(name, info), deletePanel(name, ctx)));
}
