// views/objects.js — one bucket's objects: folders by "/", breadcrumbs, prefix search, paging
// by continuation token, selection and DeleteObjects, uploads (picker and drag-and-drop, with
// per-file progress and cancel), and one object's details with download and a presigned link.
// Keys and metadata are untrusted: they reach the page only as text and attributes (dom.js),
// inside <bdi> so bidi controls in a key cannot reorder what is around it.
import { h, clear, fmtBytes, fmtTime, toast } from '../dom.js';
import { api } from '../api.js';
import { startUpload, Cancelled } from '../upload.js';
import { renderSettings } from './buckets.js';
import { confirmStep } from './kit.js';

const enc = encodeURIComponent;
/** A query string from an object, every value percent-encoded (spaces as %20, never '+'). */
const qs = (o) => Object.entries(o).filter(([, v]) => v !== null && v !== undefined)
  .map(([k, v]) => `${enc(k)}=${enc(String(v))}`).join('&');
const PAGE = 200;
const EXPIRIES = [['1 minute', 60], ['1 hour', 3600], ['1 day', 86400], ['7 days', 604800]];

/** The hash of a bucket listing at prefix. */
export function listHash(bucket, prefix) {
  return `#/buckets/${enc(bucket)}` + (prefix ? `?${qs({ prefix })}` : '');
}

/** The hash of one object's details. */
export function objectHash(bucket, key) {
  return `#/buckets/${enc(bucket)}/object?${qs({ key })}`;
}

/** Breadcrumbs: Buckets / bucket / each folder of path (up to its last "/") / tail. */
function crumbs(bucket, path, tail) {
  const items = [h('li', {}, h('a', { href: '#/buckets', text: 'Buckets' })),
    h('li', {}, h('a', { href: listHash(bucket, '') }, h('bdi', { text: bucket })))];
  let acc = '';
  const folders = path.split('/');
  folders.pop();
  for (const f of folders) {
    acc += `${f}/`;
    items.push(h('li', {}, h('a', { href: listHash(bucket, acc) }, h('bdi', { text: `${f}/` }))));
  }
  if (tail) items.push(h('li', { 'aria-current': 'page' }, h('bdi', { text: tail })));
  return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {}, items));
}

function folderOf(prefix) {
  const i = prefix.lastIndexOf('/');
  return i < 0 ? '' : prefix.slice(0, i + 1);
}

/** A button that runs fn(event) and is disabled while it runs. */
function actionButton(text, fn, cls = 'btn') {
  const b = h('button', { type: 'button', class: cls, text });
  b.addEventListener('click', async (ev) => {
    b.disabled = true;
    try { await fn(ev); } finally { b.disabled = false; }
  });
  return b;
}

// ---- the listing -------------------------------------------------------------------------

function listingTable(st, doc, onSelect) {
  const folder = folderOf(st.prefix);
  const rel = (k) => (k.startsWith(folder) ? k.slice(folder.length) : k) || k;
  const rows = [];
  for (const p of doc.prefixes || []) {
    rows.push(h('tr', { class: 'folder' }, h('td', { class: 'sel' }),
      h('th', { scope: 'row' }, h('a', { href: listHash(st.bucket, p), class: 'folder-link' },
        h('span', { class: 'icon', 'aria-hidden': 'true', text: '▸ ' }), h('bdi', { text: rel(p) }))),
      h('td', { class: 'num muted', text: 'folder' }), h('td', { text: '' })));
  }
  for (const o of doc.objects || []) {
    const box = h('input', { type: 'checkbox', 'aria-label': o.key, checked: st.selected.has(o.key) });
    box.addEventListener('change', () => onSelect(o.key, box.checked));
    rows.push(h('tr', {}, h('td', { class: 'sel' }, box),
      h('th', { scope: 'row' }, h('a', { href: objectHash(st.bucket, o.key) }, h('bdi', { text: rel(o.key) }))),
      h('td', { class: 'num', text: fmtBytes(o.size) }), h('td', { text: fmtTime(o.modified) })));
  }
  if (!rows.length) {
    rows.push(h('tr', {}, h('td', { colspan: '4', class: 'empty',
      text: st.prefix ? 'Nothing matches this prefix.' : 'This bucket is empty. Drop files here to upload.' })));
  }
  const all = h('input', { type: 'checkbox', 'aria-label': 'Select all on this page',
    disabled: !(doc.objects || []).length });
  all.addEventListener('change', () => {
    for (const o of doc.objects || []) onSelect(o.key, all.checked);
    for (const b of rows.map((r) => r.querySelector('td.sel input'))) if (b) b.checked = all.checked;
  });
  return h('div', { class: 'table-wrap' }, h('table', { class: 'objects' },
    h('caption', {}, 'Contents of ', h('bdi', { text: `${st.bucket}/${st.prefix}` }), ` — page ${st.tokens.length}`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'sel' }, all), h('th', { scope: 'col', text: 'Name' }),
      h('th', { scope: 'col', class: 'num', text: 'Size' }), h('th', { scope: 'col', text: 'Modified' }))),
    h('tbody', {}, rows)));
}

// ---- uploads -----------------------------------------------------------------------------

function uploadRow(st, file, onDone) {
  const key = folderOf(st.prefix) + file.name;
  const bar = h('progress', { max: String(Math.max(file.size, 1)), value: '0', 'aria-label': file.name });
  const pct = h('span', { class: 'pct', text: '0 %' });
  const status = h('span', { class: 'status muted', text: 'Starting…' });
  const cancelBtn = h('button', { type: 'button', class: 'btn btn-small', text: 'Cancel upload' });
  const li = h('li', { class: 'upload' }, h('bdi', { class: 'up-name', text: key }), bar, pct, status, cancelBtn);
  const up = startUpload(st.bucket, key, file, (sent, total) => {
    bar.value = Math.min(sent, total);
    pct.textContent = `${total ? Math.floor((100 * sent) / total) : 100} %`;
    status.textContent = `${fmtBytes(sent)} of ${fmtBytes(total)}`;
  });
  let late = false; // cancel() came after the object was stored
  cancelBtn.addEventListener('click', async () => {
    cancelBtn.disabled = true;
    status.textContent = 'Cancelling…';
    if ((await up.cancel()) !== 'uploaded') return;
    late = true;
    status.textContent = 'Already uploaded: too late to cancel';
  });
  up.promise.then(() => {
    bar.value = Math.max(file.size, 1);
    pct.textContent = '100 %';
    status.textContent = late ? 'Already uploaded: too late to cancel' : 'Done';
    li.classList.add('done');
    if (!li.isConnected) toast(`Uploaded ${key}.`);
  }, (e) => {
    status.textContent = e instanceof Cancelled ? 'Cancelled' : `Failed: ${e.message}`;
    li.classList.add(e instanceof Cancelled ? 'cancelled' : 'failed');
    if (!(e instanceof Cancelled)) toast(`Upload of ${file.name} failed: ${e.message}`, 'error');
  }).finally(() => { cancelBtn.remove(); onDone(); });
  return li;
}

function uploadPanel(st, reload) {
  const list = h('ul', { class: 'uploads', 'aria-label': 'Uploads' });
  let running = 0;
  const add = (files) => {
    for (const f of files) {
      running++;
      list.prepend(uploadRow(st, f, () => { if (--running === 0) reload(); }));
    }
  };
  const where = h('bdi', { text: `${st.bucket}/${folderOf(st.prefix)}` });
  const input = h('input', { id: 'upload-files', type: 'file', multiple: true, name: 'files' });
  input.addEventListener('change', () => {
    const files = [...input.files];
    input.value = '';
    add(files);
  });
  const panel = h('section', { class: 'panel upload-panel' },
    h('h2', { id: 'upload-h', text: 'Upload' }),
    h('div', { class: 'upload-controls' },
      h('label', { for: 'upload-files', text: 'Files' }), input,
      h('button', { type: 'button', class: 'btn btn-primary', text: 'Upload', onclick: () => input.click() })),
    h('p', { class: 'hint' }, 'Or drop files onto the list. They go to ', where, '.'),
    list);
  return { panel, add, setFolder: (f) => { where.textContent = `${st.bucket}/${f}`; } };
}

function dropTarget(el, add) {
  let depth = 0;
  const has = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes('Files');
  el.addEventListener('dragenter', (ev) => { if (has(ev)) { depth++; el.classList.add('dropping'); ev.preventDefault(); } });
  el.addEventListener('dragover', (ev) => { if (has(ev)) { ev.preventDefault(); ev.dataTransfer.dropEffect = 'copy'; } });
  el.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; el.classList.remove('dropping'); } });
  el.addEventListener('drop', (ev) => {
    if (!has(ev)) return;
    ev.preventDefault();
    depth = 0;
    el.classList.remove('dropping');
    add([...ev.dataTransfer.files]);
  });
}

// ---- the listing view --------------------------------------------------------------------

function searchForm(st, go) {
  const input = h('input', { id: 'prefix-search', type: 'search', name: 'prefix', value: st.prefix,
    autocomplete: 'off', spellcheck: 'false' });
  let timer = null;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => go(input.value), 300);
  });
  const form = h('form', { class: 'search', role: 'search' },
    h('label', { for: 'prefix-search', text: 'Prefix' }), input,
    h('button', { type: 'submit', class: 'btn', text: 'Search' }));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); clearTimeout(timer); go(input.value); });
  return form;
}

/** The objects view (#/buckets/NAME?prefix=P). */
export async function render(root, params, ctx) {
  const st = { bucket: params.name, prefix: params.query.get('prefix') || '', tokens: [null], selected: new Set() };
  const crumbBox = h('div', {}, crumbs(st.bucket, st.prefix, ''));
  const listBox = h('div', { class: 'list-box' });
  const pageLabel = h('span', { class: 'muted', 'aria-live': 'polite' });
  const selLabel = h('span', { class: 'muted', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', class: 'btn', text: 'Previous page', disabled: true });
  const next = h('button', { type: 'button', class: 'btn', text: 'Next page', disabled: true });
  const delBtn = h('button', { type: 'button', class: 'btn btn-danger', text: 'Delete selected', disabled: true });
  const errBox = h('div', { role: 'alert', class: 'error' });
  const loadErr = h('p', { role: 'alert', class: 'error' });
  let nextToken = null;
  let seq = 0;

  const onSelect = (key, on) => {
    if (on) st.selected.add(key); else st.selected.delete(key);
    delBtn.disabled = st.selected.size === 0;
    selLabel.textContent = st.selected.size ? `${st.selected.size} selected` : '';
  };
  const load = async () => {
    const my = ++seq;
    listBox.setAttribute('aria-busy', 'true');
    prev.disabled = true;
    next.disabled = true;
    const tok = st.tokens[st.tokens.length - 1];
    const q = qs({ prefix: st.prefix, delimiter: '/', max: PAGE, token: tok || null });
    try {
      const doc = await api('GET', `buckets/${enc(st.bucket)}/objects?${q}`);
      if (my !== seq) return;
      nextToken = doc.next || null;
      clear(listBox).appendChild(listingTable(st, doc, onSelect));
      loadErr.textContent = '';
    } catch (e) {
      if (my !== seq) return;
      nextToken = null;
      clear(listBox);
      if (e.status !== 401) loadErr.textContent = `${e.code}: ${e.message}`;
    }
    listBox.removeAttribute('aria-busy');
    prev.disabled = st.tokens.length <= 1;
    next.disabled = !nextToken;
    pageLabel.textContent = `Page ${st.tokens.length}`;
  };
  const setPrefix = (p) => {
    if (p === st.prefix) return;
    st.prefix = p;
    st.tokens = [null];
    history.replaceState(null, '', listHash(st.bucket, p));
    clear(crumbBox).appendChild(crumbs(st.bucket, st.prefix, ''));
    up.setFolder(folderOf(p));
    load();
  };
  const up = uploadPanel(st, load);
  prev.addEventListener('click', () => { if (st.tokens.length > 1) { st.tokens.pop(); load(); } });
  next.addEventListener('click', () => { if (nextToken) { st.tokens.push(nextToken); load(); } });
  const deleteSelected = async () => {
    const keys = [...st.selected];
    if (!keys.length) return;
    errBox.textContent = '';
    try {
      const res = await api('POST', `buckets/${enc(st.bucket)}/delete`, { keys });
      for (const k of res.deleted || []) st.selected.delete(k);
      const errs = res.errors || [];
      toast(`Deleted ${(res.deleted || []).length} object(s).`);
      if (errs.length) {
        clear(errBox).append(`${errs.length} could not be deleted:`,
          h('ul', {}, errs.map((x) => h('li', {}, h('bdi', { text: x.key }), `: ${x.code} ${x.message || ''}`))));
      }
    } catch (e) {
      errBox.textContent = `${e.code}: ${e.message}`;
    }
    onSelect('', false);
    await load();
  };
  confirmStep(delBtn, { onConfirm: deleteSelected, enabled: () => st.selected.size > 0,
    prompt: () => `Delete ${st.selected.size} selected object${st.selected.size === 1 ? '' : 's'}?` });

  const listSection = h('section', { class: 'listing', 'aria-label': 'Objects' },
    h('div', { class: 'toolbar' }, searchForm(st, setPrefix),
      h('div', { class: 'actions' }, delBtn, selLabel)),
    errBox, loadErr, listBox,
    h('div', { class: 'pager' }, prev, pageLabel, next));
  dropTarget(listSection, up.add);
  const settings = h('section', { class: 'settings' },
    h('h2', { id: 'settings-h', text: 'Bucket settings' }));
  root.append(crumbBox, h('h1', {}, h('bdi', { text: st.bucket })), listSection, up.panel, settings);
  await Promise.all([load(), renderSettings(settings, st.bucket, ctx).catch((e) => {
    if (e.status !== 401) settings.appendChild(h('p', { role: 'alert', class: 'error', text: `${e.code}: ${e.message}` }));
  })]);
}

// ---- one object --------------------------------------------------------------------------

/** A checksum as the API sends it ({algorithm, value} or null) as "ALGORITHM value". */
const checksumText = (c) => (c && c.value ? `${String(c.algorithm || '').toUpperCase()} ${c.value}`.trim() : '—');

function facts(doc) {
  const row = (k, v) => [h('dt', { text: k }), h('dd', {}, v)];
  return h('dl', { class: 'facts' },
    row('Key', h('bdi', { class: 'mono', text: doc.key })),
    row('Size', `${fmtBytes(doc.size)} (${doc.size} bytes)`),
    row('ETag', h('span', { class: 'mono', text: doc.etag || '—' })),
    row('Checksum', h('span', { class: 'mono', text: checksumText(doc.checksum) })),
    doc.sha256 ? row('SHA-256', h('span', { class: 'mono', text: doc.sha256 })) : null,
    row('Type', h('span', { class: 'mono', text: doc.type || '—' })),
    row('Modified', fmtTime(doc.modified)));
}

function metaTable(meta) {
  const entries = Object.entries(meta || {});
  if (!entries.length) return h('p', { class: 'panel muted', text: 'No user metadata.' });
  return h('div', { class: 'table-wrap' }, h('table', {}, h('caption', { text: 'Metadata' }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Name' }), h('th', { scope: 'col', text: 'Value' }))),
    h('tbody', {}, entries.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, h('bdi', { text: k })),
      h('td', {}, h('bdi', { text: String(v) })))))));
}

function versionsTable(versions) {
  if (!versions || !versions.length) return null;
  return h('div', { class: 'table-wrap' }, h('table', {}, h('caption', { text: `Versions (${versions.length})` }),
    h('thead', {}, h('tr', {}, ['Version', 'Size', 'Modified', 'Latest', 'Delete marker'].map((t) =>
      h('th', { scope: 'col', text: t })))),
    h('tbody', {}, versions.map((v) => h('tr', {},
      h('td', { class: 'mono', text: v.version_id || 'null' }), h('td', { class: 'num', text: fmtBytes(v.size) }),
      h('td', { text: fmtTime(v.modified) }), h('td', { text: v.latest ? 'yes' : '' }),
      h('td', { text: v.delete_marker ? 'yes' : '' }))))));
}

function linkPanel(bucket, key) {
  const sel = h('select', { id: 'link-expiry', name: 'expiry' },
    EXPIRIES.map(([t, s]) => h('option', { value: String(s), text: t, selected: s === 3600 })));
  const out = h('input', { id: 'link-url', type: 'text', readonly: true, 'aria-label': 'Presigned link', class: 'mono',
    placeholder: 'No link yet' });
  const when = h('p', { class: 'hint', 'aria-live': 'polite' });
  const alertBox = h('p', { role: 'alert', class: 'error' });
  const copy = actionButton('Copy link', async () => {
    if (!out.value) return;
    try {
      await navigator.clipboard.writeText(out.value);
    } catch (e) {
      out.select();
      document.execCommand('copy');
    }
    toast('Link copied.');
  });
  copy.disabled = true;
  const create = actionButton('Create link', async () => {
    alertBox.textContent = '';
    try {
      const d = await api('POST', `buckets/${enc(bucket)}/presign`, { method: 'GET', key, expires: Number(sel.value) });
      out.value = new URL(d.url, location.href).href;
      when.textContent = `Valid until ${fmtTime(d.expires_at)}.`;
      copy.disabled = false;
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  }, 'btn btn-primary');
  return h('section', { class: 'panel' },
    h('h2', { id: 'link-h', text: 'Presigned link' }),
    h('div', { class: 'link-row' }, h('label', { for: 'link-expiry', text: 'Link expiry' }), sel, create),
    h('div', { class: 'link-row' }, out, copy), when, alertBox);
}

async function download(bucket, key) {
  const d = await api('POST', `buckets/${enc(bucket)}/presign`, { method: 'GET', key, expires: 300 });
  const a = h('a', { href: d.url, download: key.split('/').pop() || 'download', class: 'hidden' });
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** The object details view (#/buckets/NAME/object?key=K). */
export async function renderObject(root, params, ctx) {
  const bucket = params.name;
  const key = params.query.get('key') || '';
  const base = key.split('/').pop() || key;
  const alertBox = h('p', { role: 'alert', class: 'error' });
  root.append(crumbs(bucket, key, base), h('h1', {}, h('bdi', { text: base })));
  let doc;
  try {
    doc = await api('GET', `buckets/${enc(bucket)}/object?${qs({ key })}`);
  } catch (e) {
    if (e.status !== 401) root.appendChild(h('p', { role: 'alert', class: 'error', text: `${e.code}: ${e.message}` }));
    return;
  }
  const dl = actionButton('Download', async () => {
    alertBox.textContent = '';
    try { await download(bucket, key); } catch (e) { alertBox.textContent = `${e.code}: ${e.message}`; }
  }, 'btn btn-primary');
  const here = location.hash;
  const del = h('button', { type: 'button', class: 'btn btn-danger', text: 'Delete object' });
  confirmStep(del, { prompt: `Delete ${base}?`, onConfirm: async () => {
    alertBox.textContent = '';
    try {
      const r = await api('POST', `buckets/${enc(bucket)}/delete`, { keys: [key] });
      if ((r.errors || []).length) throw Object.assign(new Error(r.errors[0].message || ''), { code: r.errors[0].code });
      toast('Object deleted.');
      // Back to the folder, unless the user has gone elsewhere meanwhile.
      if (location.hash === here) ctx.navigate(listHash(bucket, folderOf(key)));
    } catch (e) {
      alertBox.textContent = `${e.code}: ${e.message}`;
    }
  } });
  root.appendChild(h('div', {}, h('div', { class: 'actions' }, dl, del), alertBox,
    h('section', { class: 'panel' }, h('h2', { id: 'details-h', text: 'Details' }), facts(doc)),
    metaTable(doc.metadata), versionsTable(doc.versions), linkPanel(bucket, key)));
}
