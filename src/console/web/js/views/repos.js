// repos.js — Scribe repositories: the list, one repository (info, change log with path filter
// and paging, branches, locks, workspaces when the API has them), one change (description,
// author, time, journal, changed paths) and the files at a change (tree pages, downloads).
// Names, paths, descriptions and journals are user data: rendered through dom.js only.
import { h, clear, fmtBytes, fmtTime } from '../dom.js';
import { api, apiUrl } from '../api.js';
import { enc, route, section, table, dl, errorNote, short, field, num, u } from './kit.js';

const repoHref = (r) => `#/repos/${enc(r)}`;
const changeHref = (r, id) => `#/repos/${enc(r)}/changes/${enc(id)}`;
const treeHref = (r, change, path) =>
  `#/repos/${enc(r)}/tree?change=${enc(change)}${path ? `&path=${enc(path)}` : ''}`;

function crumbs(...parts) {
  return h('nav', { class: 'vb-crumbs', 'aria-label': 'Breadcrumb' },
    parts.map((p, i) => [i ? h('span', { class: 'vb-sep', 'aria-hidden': 'true', text: '/' }) : null,
      Array.isArray(p) ? h('a', { href: p[1], text: p[0] }) : h('span', { text: p })]));
}

async function listView(root) {
  root.append(h('h1', { text: 'Repositories' }));
  const doc = await api('GET', 'repos');
  const rows = (doc.repos || []).map((r) => [
    h('a', { href: repoHref(r.name) }, u(r.name)),
    r.head === undefined ? '—' : String(r.head), num(r.changes), fmtBytes(r.bytes)]);
  root.append(table('Repositories', ['Name', 'Head', 'Changes', 'Size'], rows));
}

/** The change log: path filter, a page of changes, "Next page"/"Previous page" by `before`. */
function changeLog(name) {
  const box = h('div', { class: 'vb-log' });
  const filter = h('input', { type: 'search', name: 'path', placeholder: 'dir/file' });
  const out = h('div', {});
  const stack = [];
  let before = null;
  async function load() {
    clear(out);
    const q = new URLSearchParams({ max: '25' });
    if (filter.value.trim()) q.set('path', filter.value.trim());
    if (before) q.set('before', before);
    let doc;
    try { doc = await api('GET', `repos/${enc(name)}/changes?${q}`); } catch (e) {
      out.append(errorNote(e)); return;
    }
    const rows = (doc.changes || []).map((c) => [
      h('a', { href: changeHref(name, c.id), text: String(c.id) }),
      u(c.author), fmtTime(c.time), h('span', { class: 'vb-desc' }, u(firstLine(c.description)))]);
    out.append(table('Change log', ['Change', 'Author', 'Time', 'Description'], rows));
    const cur = before;
    out.append(h('div', { class: 'vb-pager' },
      h('button', { type: 'button', disabled: !stack.length, text: 'Previous page',
        onclick: () => { before = stack.pop() ?? null; load(); } }),
      h('button', { type: 'button', disabled: doc.next === null || doc.next === undefined,
        text: 'Next page', onclick: () => { stack.push(cur); before = String(doc.next); load(); } })));
  }
  box.append(h('form', { class: 'vb-form', role: 'search', onsubmit: (ev) => {
    ev.preventDefault(); stack.length = 0; before = null; load();
  } }, field('Path filter', filter), h('button', { type: 'submit', text: 'Filter' })), out);
  load();
  return box;
}

function firstLine(s) {
  const t = String(s ?? '').split('\n')[0];
  return t.length > 120 ? t.slice(0, 120) + '…' : t;
}

/** GET path if the service offers it; null when it answers an error (the section is omitted). */
async function optional(path) {
  try { return await api('GET', path); } catch (e) {
    if (e.status === 401) throw e;
    return null;
  }
}

async function repoView(root, name) {
  root.append(crumbs(['Repositories', '#/repos'], name), h('h1', { text: name }));
  const info = await api('GET', `repos/${enc(name)}`);
  const head = info.head;
  root.append(section('Info',
    dl([['Head', head], ['Changes', info.changes === undefined ? null : num(info.changes)],
      ['Created', info.created ? fmtTime(info.created) : null],
      ['Size', info.bytes === undefined ? null : fmtBytes(info.bytes)],
      ['Files', info.files === undefined ? null : num(info.files)]]),
    head !== undefined && head !== null
      ? h('p', {}, h('a', { href: treeHref(name, head, ''), text: 'Files at head' })) : null));
  root.append(section('Changes', changeLog(name)));
  const [br, locks, ws] = await Promise.all([optional(`repos/${enc(name)}/branches`),
    optional(`repos/${enc(name)}/locks`), optional(`repos/${enc(name)}/workspaces`)]);
  const branches = (br && br.branches) || info.branches;
  if (Array.isArray(branches) && branches.length) {
    root.append(section('Branches', table('Branches', ['Branch', 'Head'], branches.map((b) =>
      typeof b === 'string' ? [u(b), '—'] : [u(b.name), b.head === undefined ? '—'
        : h('a', { href: changeHref(name, b.head), text: String(b.head) })]))));
  }
  if (locks && Array.isArray(locks.locks)) {
    root.append(section('Locks', table('Locks', ['Path', 'Owner', 'Workspace', 'Since'],
      locks.locks.map((l) => [u(l.path), u(l.owner), u(l.workspace), fmtTime(l.since)]))));
  }
  if (ws && Array.isArray(ws.workspaces)) {
    root.append(section('Workspaces', table('Workspaces', ['Workspace', 'Created', 'Holds locks', 'Tags'],
      ws.workspaces.map((w) => [u(w.name ?? w.id), fmtTime(w.created),
        w.locks === undefined ? '—' : w.locks ? 'yes' : 'no', u((w.tags || []).join(', '))]))));
  }
}

function journalItem(j) {
  if (j === null || typeof j !== 'object') return h('li', {}, u(j));
  if (j.revision !== undefined) {
    return h('li', {}, h('div', { class: 'vb-muted' }, `Revision ${j.revision} · `, u(j.author), ` · ${fmtTime(j.time)}`),
      h('p', { class: 'vb-pre' }, u(j.text ?? j.description ?? '')));
  }
  const parts = Object.entries(j).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return h('li', { text: parts.join(' · ') });
}

async function changeView(root, name, id) {
  root.append(crumbs(['Repositories', '#/repos'], [name, repoHref(name)], `Change ${id}`),
    h('h1', { text: `Change ${id}` }));
  const c = await api('GET', `repos/${enc(name)}/changes/${enc(id)}`);
  root.append(dl([['Author', c.author === undefined ? null : u(c.author)],
    ['Time', c.time === undefined ? null : fmtTime(c.time)], ['Branch', c.branch || null],
    ['Merge of change', c.merge === undefined ? null : String(c.merge)],
    ['Commit', c.commit === undefined ? null : short(c.commit)]]),
    section('Description', h('p', { class: 'vb-pre', text: c.description ?? '' })),
    h('p', {}, h('a', { href: treeHref(name, c.id ?? id, ''), text: 'Files at this change' })));
  if (Array.isArray(c.journal) && c.journal.length) {
    root.append(section('Journal', h('ol', { class: 'vb-journal' }, c.journal.map(journalItem))));
  }
  root.append(section('Changed paths', table('Changed paths', ['Action', 'Path'],
    (c.paths || []).map((p) => [u(p.action), h('span', { class: 'vb-path' }, u(p.path),
      p.from ? [' (from ', u(p.from), ')'] : null)]))));
}

async function treeView(root, name, query) {
  const change = query.get('change') || '';
  const dir = (query.get('path') || '').replace(/^\/+|\/+$/g, '');
  const parts = dir ? dir.split('/') : [];
  const trail = parts.map((p, i) => i === parts.length - 1 ? p
    : [p, treeHref(name, change, parts.slice(0, i + 1).join('/'))]);
  root.append(crumbs(['Repositories', '#/repos'], [name, repoHref(name)],
    [`Change ${change}`, changeHref(name, change)], dir ? ['Files', treeHref(name, change, '')] : 'Files',
    ...trail), h('h1', { text: dir ? `Files: ${dir}` : 'Files' }));
  const out = h('div', {});
  root.append(out);
  const tokens = [];
  let token = null;
  async function load() {
    const q = new URLSearchParams({ change });
    if (dir) q.set('path', dir);
    if (token) q.set('token', token);
    let doc;
    try { doc = await api('GET', `repos/${enc(name)}/tree?${q}`); } catch (e) {
      clear(out).append(errorNote(e)); return;
    }
    const rows = (doc.entries || []).map((e) => {
      const full = dir ? `${dir}/${e.name}` : e.name;
      const isDir = e.type === 'dir';
      const dq = new URLSearchParams({ change, path: full });
      return [isDir ? h('a', { href: treeHref(name, change, full) }, u(`${e.name}/`))
        : h('span', { class: 'vb-path' }, u(e.name)),
        isDir ? '—' : fmtBytes(e.size), e.mode === undefined ? '—' : String(e.mode),
        e.manifest === undefined ? '—' : short(e.manifest),
        isDir ? '' : h('a', { href: apiUrl(`repos/${enc(name)}/file?${dq}`), download: e.name,
          text: 'Download' })];
    });
    const cur = token;
    clear(out).append(table(`Files at change ${change}`, ['Name', 'Size', 'Mode', 'Manifest', ''], rows),
      h('div', { class: 'vb-pager' },
        h('button', { type: 'button', disabled: !tokens.length, text: 'Previous page',
          onclick: () => { token = tokens.pop() ?? null; load(); } }),
        h('button', { type: 'button', disabled: doc.next === null || doc.next === undefined,
          text: 'Next page', onclick: () => { tokens.push(cur); token = String(doc.next); load(); } })));
  }
  await load();
}

/** render(root, params, ctx): dispatches on the hash (#/repos, #/repos/R,
 *  #/repos/R/changes/ID, #/repos/R/tree?change=ID&path=P). */
export async function render(root, params, ctx) {
  const { seg, query } = route();
  const name = seg[1];
  const view = h('div', { class: 'vb-view' });
  root.append(view);
  try {
    if (!name) await listView(view);
    else if (seg[2] === 'changes' && seg[3] !== undefined) await changeView(view, name, seg[3]);
    else if (seg[2] === 'tree') await treeView(view, name, params && params.query ? params.query : query);
    else await repoView(view, name);
  } catch (e) {
    if (!view.querySelector('h1')) view.append(h('h1', { text: 'Repositories' }));
    view.append(errorNote(e));
  }
}
