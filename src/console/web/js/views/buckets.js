// views/buckets.js — the bucket list (with create) and the settings panel of one bucket
// (delete, visibility and policy, versioning, object lock, lifecycle and CORS), which the
// objects view embeds. Names, policies and rules from the server are shown through dom.js
// only; nothing is kept in web storage. Configurations are edited as JSON in the AWS SDKs'
// shape and checked by the server (S3's validation), whose errors are shown as they come.
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
  const lock = h('input', { id: 'bucket-lock', name: 'object_lock', type: 'checkbox' });
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
    h('div', { class: 'check lock-check' }, lock,
      h('label', { for: 'bucket-lock', text: 'Object lock (turns versioning on; cannot be undone)' })),
    button, alertBox);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = input.value;
    if (bucketNameProblem(name)) { check(); return; }
    button.disabled = true;
    alertBox.textContent = '';
    try {
      await api('POST', 'buckets', lock.checked ? { name, object_lock: true } : { name });
      input.value = '';
      lock.checked = false;
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
  const pub = h('input', { id: 'bucket-public', type: 'checkbox', checked: Boolean(info.public),
    'aria-describedby': 'public-hint' });
  const setVisible = (p) => { vis.lastChild.textContent = p ? 'public' : 'private'; pub.checked = Boolean(p); };
  pub.addEventListener('change', async () => {
    pub.disabled = true;
    alertBox.textContent = '';
    try {
      await api('PUT', `buckets/${enc(name)}/visibility`, { public: pub.checked });
      const fresh = await api('GET', `buckets/${enc(name)}`);
      setVisible(fresh && fresh.public);
      toast(`Bucket ${name} is ${fresh && fresh.public ? 'public' : 'private'}.`);
    } catch (e) {
      pub.checked = !pub.checked;
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
    pub.disabled = false;
  });
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
    h('div', { class: 'check' }, pub, h('label', { for: 'bucket-public', text: 'Public' })),
    h('p', { id: 'public-hint', class: 'hint',
      text: 'Public lets anyone list the keys (bucket ACL public-read); a policy may make it public too.' }),
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

/** A small table of rows (arrays of strings) under caption, in a scrolling wrapper. */
function ruleTable(caption, headers, rows) {
  const body = rows.length ? rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, h('bdi', { text: c })))))
    : [h('tr', {}, h('td', { colspan: String(headers.length), class: 'empty', text: 'No rules.' }))];
  return h('div', { class: 'table-wrap' }, h('table', { class: 'rules' }, h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col', text: t })))), h('tbody', {}, body)));
}

const days = (n) => `${n} day${n === 1 ? '' : 's'}`;

function lifecycleRows(conf) {
  return ((conf && conf.Rules) || []).map((r) => {
    const f = (r.Filter && (r.Filter.And || r.Filter)) || {};
    const scope = [];
    const prefix = r.Prefix ?? f.Prefix;
    scope.push(prefix ? `prefix ${prefix}` : 'every key');
    for (const t of f.Tags || (f.Tag ? [f.Tag] : [])) scope.push(`tag ${t.Key}=${t.Value}`);
    if (f.ObjectSizeGreaterThan !== undefined) scope.push(`> ${f.ObjectSizeGreaterThan} B`);
    if (f.ObjectSizeLessThan !== undefined) scope.push(`< ${f.ObjectSizeLessThan} B`);
    const act = [];
    const x = r.Expiration || {};
    if (x.Days) act.push(`expire after ${days(x.Days)}`);
    if (x.Date) act.push(`expire on ${x.Date}`);
    if (x.ExpiredObjectDeleteMarker) act.push('remove expired delete markers');
    if (r.NoncurrentVersionExpiration) act.push(`noncurrent after ${days(r.NoncurrentVersionExpiration.NoncurrentDays)}`);
    if (r.AbortIncompleteMultipartUpload) act.push(`abort uploads after ${days(r.AbortIncompleteMultipartUpload.DaysAfterInitiation)}`);
    return [String(r.ID ?? ''), String(r.Status ?? ''), scope.join(', '), act.join('; ')];
  });
}

function corsRows(conf) {
  const j = (a) => (a || []).join(', ');
  return ((conf && conf.CORSRules) || []).map((r) => [j(r.AllowedOrigins), j(r.AllowedMethods),
    j(r.AllowedHeaders) || '—', r.MaxAgeSeconds === undefined ? '—' : `${r.MaxAgeSeconds} s`]);
}

const CONFIGS = {
  lifecycle: { title: 'Lifecycle', list: 'Rules', what: 'lifecycle', table: (c) => ruleTable('Lifecycle rules',
    ['ID', 'Status', 'Applies to', 'Actions'], lifecycleRows(c)),
  template: { ID: 'expire-tmp', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 30 } } },
  cors: { title: 'CORS', list: 'CORSRules', what: 'CORS', table: (c) => ruleTable('CORS rules',
    ['Origins', 'Methods', 'Headers', 'Max age'], corsRows(c)),
  template: { AllowedOrigins: ['https://app.example.com'], AllowedMethods: ['GET', 'HEAD'],
    AllowedHeaders: ['*'], MaxAgeSeconds: 3000 } },
};

/** The editor of a bucket's lifecycle or CORS configuration (kind): its rules as a table,
 *  the JSON in a text area, save (the server checks it; its error is shown), a rule
 *  template and remove. */
function configEditor(name, kind) {
  const c = CONFIGS[kind];
  const id = `bucket-${kind}`;
  const path = `buckets/${enc(name)}/${kind}`;
  const area = h('textarea', { id, name: kind, rows: '8', spellcheck: 'false', class: 'code',
    'aria-describedby': `${id}-status` });
  const status = h('p', { id: `${id}-status`, class: 'hint' });
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const list = h('div', { class: 'rule-list', 'aria-live': 'polite' });
  const show = (conf) => {
    area.value = conf ? JSON.stringify(conf, null, 2) : '';
    clear(list).appendChild(c.table(conf));
  };
  const load = async () => {
    try { show((await api('GET', path)).configuration); } catch (e) { alertBox.textContent = `${e.code}: ${e.message}`; }
  };
  const save = async () => {
    alertBox.textContent = '';
    let configuration;
    try {
      configuration = JSON.parse(area.value);
    } catch (e) {
      alertBox.textContent = `Not valid JSON: ${e.message}`;
      return;
    }
    try {
      await api('PUT', path, { configuration });
      status.textContent = `${c.title} saved.`;
      toast(`${c.title} saved.`);
      await load();
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  };
  const template = () => {
    let conf;
    try { conf = area.value.trim() ? JSON.parse(area.value) : {}; } catch (e) { conf = {}; }
    if (!conf || typeof conf !== 'object' || Array.isArray(conf)) conf = {};
    conf[c.list] = [...(Array.isArray(conf[c.list]) ? conf[c.list] : []), structuredClone(c.template)];
    area.value = JSON.stringify(conf, null, 2);
    area.focus();
  };
  const remove = async () => {
    alertBox.textContent = '';
    try {
      await api('DELETE', path);
      status.textContent = `${c.title} removed.`;
      await load();
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  };
  load();
  return h('section', { class: 'panel' },
    h('h3', { id: `${kind}-h`, text: c.title }), list,
    h('label', { for: id, text: `${c.title} configuration (JSON)` }), area, status,
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'btn btn-primary', text: `Save ${c.what}`, onclick: save }),
      h('button', { type: 'button', class: 'btn', text: `Add ${c.what} rule`, onclick: template }),
      confirmStep(h('button', { type: 'button', class: 'btn', text: `Remove ${c.what}` }), {
        prompt: `Remove the ${c.what} configuration of ${name}?`, confirm: 'Confirm remove', onConfirm: remove })),
    alertBox);
}

/** Object lock: "not enabled" (it is chosen when a bucket is created), or the default
 *  retention (mode and a period in days or years) new versions get. */
function lockPanel(name) {
  const path = `buckets/${enc(name)}/object-lock`;
  const body = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const form = (conf) => {
    const d = (conf.Rule && conf.Rule.DefaultRetention) || {};
    const mode = h('select', { id: 'lock-mode' }, ['None', 'GOVERNANCE', 'COMPLIANCE'].map((m) =>
      h('option', { value: m, text: m === 'None' ? 'None' : m.toLowerCase(), selected: (d.Mode || 'None') === m })));
    const period = h('input', { id: 'lock-period', type: 'text', inputmode: 'numeric', autocomplete: 'off',
      value: String(d.Days ?? d.Years ?? ''), size: '6' });
    const unit = h('select', { id: 'lock-unit' }, ['Days', 'Years'].map((u2) =>
      h('option', { value: u2, text: u2.toLowerCase(), selected: (d.Years ? 'Years' : 'Days') === u2 })));
    const save = async () => {
      alertBox.textContent = '';
      const configuration = { ObjectLockEnabled: 'Enabled' };
      if (mode.value !== 'None') {
        const v = period.value.trim();
        configuration.Rule = { DefaultRetention: { Mode: mode.value, [unit.value]: /^\d{1,9}$/.test(v) ? Number(v) : v } };
      }
      try {
        await api('PUT', path, { configuration });
        toast('Default retention saved.');
      } catch (e) {
        alertBox.textContent = `${e.code}: ${e.message}`;
      }
    };
    return h('div', {},
      h('p', {}, 'Object lock: ', h('strong', { text: 'enabled' })),
      h('div', { class: 'lock-form' },
        h('div', { class: 'field' }, h('label', { for: 'lock-mode', text: 'Default retention' }), mode),
        h('div', { class: 'field' }, h('label', { for: 'lock-period', text: 'Period' }), period),
        h('div', { class: 'field' }, h('label', { for: 'lock-unit', text: 'Unit' }), unit)),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'btn btn-primary', text: 'Save retention', onclick: save })));
  };
  api('GET', path).then((doc) => {
    clear(body).appendChild(doc.configuration ? form(doc.configuration)
      : h('p', {}, 'Object lock: ', h('strong', { text: 'not enabled' }),
        h('span', { class: 'hint', text: ' (chosen when a bucket is created)' })));
  }, (e) => { clear(body); alertBox.textContent = `${e.code}: ${e.message}`; });
  return h('section', { class: 'panel' }, h('h3', { id: 'lock-h', text: 'Object lock' }), body, alertBox);
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
    policyEditor(name, info), versioningPanel(name, info), lockPanel(name),
    configEditor(name, 'lifecycle'), configEditor(name, 'cors'), deletePanel(name, ctx)));
}
