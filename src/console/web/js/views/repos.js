// repos.js — Scribe repositories: the list, one repository (info, a branch picker, the chosen
// branch's change log with path filter and paging, branches, locks, workspaces when the API has
// them), one change (description, author, time, journal, changed paths) and the files at a
// change of a branch (tree pages, downloads). Every link below a repository carries its branch
// (`branch=` in the hash and in the API call); none means the main branch.
// Names, paths, descriptions and journals are user data: rendered through dom.js only.
import { h, clear, fmtBytes, fmtTime } from '../dom.js';
import { api, apiUrl } from '../api.js';
import { enc, route, section, table, dl, errorNote, short, field, num, u } from './kit.js';

const brq = (b) => (b ? `branch=${enc(b)}` : '');
const repoHref = (r, b) => `#/repos/${enc(r)}${b ? `?${brq(b)}` : ''}`;
const changeHref = (r, id, b) => `#/repos/${enc(r)}/changes/${enc(id)}${b ? `?${brq(b)}` : ''}`;
const treeHref = (r, change, path, b) =>
  `#/repos/${enc(r)}/tree?${b ? `${brq(b)}&` : ''}change=${enc(change)}${path ? `&path=${enc(path)}` : ''}`;
/** The API query of a branch (none: the main branch). */
const withBranch = (q, b) => { if (b) q.set('branch', b); return q; };

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

/** The change log of a branch (branch() names it; the server's page size): path filter, a
 *  page of changes, "Next page"/"Previous page" by `before`. Returns {box, reset()}: reset
 *  starts again at the newest change (another branch was chosen). */
function changeLog(name, branch) {
  const box = h('div', { class: 'vb-log' });
  const filter = h('input', { type: 'search', name: 'path', placeholder: 'dir/file' });
  const out = h('div', {});
  const stack = [];
  let before = null;
  let gen = 0;
  async function load() {
    const my = ++gen;
    clear(out);
    const q = withBranch(new URLSearchParams(), branch());
    if (filter.value.trim()) q.set('path', filter.value.trim());
    if (before) q.set('before', before);
    let doc;
    try { doc = await api('GET', `repos/${enc(name)}/changes?${q}`); } catch (e) {
      if (my === gen) out.append(errorNote(e));
      return;
    }
    if (my !== gen) return; // a newer load (another branch, page or filter) owns the table
    const rows = (doc.changes || []).map((c) => [
      h('a', { href: changeHref(name, c.id, c.branch || branch()), text: String(c.id) }),
      u(c.author), fmtTime(c.time), u(c.branch || '—'),
      h('span', { class: 'vb-desc' }, u(firstLine(c.description)))]);
    out.append(table(`Change log of ${doc.branch || branch() || 'main'}`,
      ['Change', 'Author', 'Time', 'Branch', 'Description'], rows));
    const cur = before;
    out.append(h('div', { class: 'vb-pager' },
      h('button', { type: 'button', disabled: !stack.length, text: 'Previous page',
        onclick: () => { before = stack.pop() ?? null; load(); } }),
      h('button', { type: 'button', disabled: doc.next === null || doc.next === undefined,
        text: 'Next page', onclick: () => { stack.push(cur); before = String(doc.next); load(); } })));
  }
  const reset = () => { stack.length = 0; before = null; load(); };
  box.append(h('form', { class: 'vb-form', role: 'search', onsubmit: (ev) => {
    ev.preventDefault(); reset();
  } }, field('Path filter', filter), h('button', { type: 'submit', text: 'Filter' })), out);
  load();
  return { box, reset };
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

/** The branch picker: a labelled <select> of the branches (the main one first); onPick(name)
 *  when another is chosen. */
function branchPicker(branches, current, onPick) {
  const sel = h('select', { name: 'branch' }, branches.map((b) => h('option', {
    value: b.name, text: b.main && b.name !== 'main' ? `${b.name} (main)` : b.name })));
  sel.value = current;
  sel.addEventListener('change', () => onPick(sel.value));
  return h('div', { class: 'vb-form' }, field('Branch', sel));
}

async function repoView(root, name, query) {
  root.append(crumbs(['Repositories', '#/repos'], name), h('h1', { text: name }));
  const info = await api('GET', `repos/${enc(name)}`);
  const branches = (Array.isArray(info.branches) ? info.branches : [])
    .filter((b) => b && typeof b === 'object').sort((a, b) => (b.main ? 1 : 0) - (a.main ? 1 : 0));
  const main = branches.length ? branches[0].name : '';
  const asked = query.get('branch') || '';
  let branch = branches.some((b) => b.name === asked) ? asked : main;
  const headOf = () => {
    const b = branches.find((x) => x.name === branch);
    return b ? b.head : info.head;
  };
  const filesLink = h('a', {});
  const showFiles = () => {
    const hd = headOf();
    filesLink.hidden = hd === undefined || hd === null;
    filesLink.href = treeHref(name, hd ?? 0, '', branch === main ? '' : branch);
    filesLink.textContent = `Files at the head of ${branch || 'main'}`;
  };
  showFiles();
  root.append(section('Info',
    dl([['Head', info.head], ['Changes', info.changes === undefined ? null : num(info.changes)],
      ['Created', info.created ? fmtTime(info.created) : null],
      ['Size', info.bytes === undefined ? null : fmtBytes(info.bytes)],
      ['Files', info.files === undefined ? null : num(info.files)]])));
  const log = changeLog(name, () => (branch === main ? '' : branch));
  const pick = (b) => {
    branch = b;
    showFiles();
    // The branch goes into the hash for a reload or a bookmark, without re-rendering the view
    // (the picker keeps the focus).
    history.replaceState(null, '', repoHref(name, branch === main ? '' : branch));
    log.reset();
  };
  root.append(section('Changes', branches.length > 1 ? branchPicker(branches, branch, pick) : null,
    h('p', {}, filesLink), log.box));
  const [locks, ws] = await Promise.all([optional(`repos/${enc(name)}/locks`),
    optional(`repos/${enc(name)}/workspaces`)]);
  if (branches.length) {
    root.append(section('Branches', table('Branches', ['Branch', 'Head', 'Created'], branches.map((b) =>
      [u(b.name), b.head === undefined || !b.head ? '—'
        : h('a', { href: changeHref(name, b.head, b.main ? '' : b.name), text: String(b.head) }),
      b.created ? fmtTime(b.created) : '—']))));
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

async function changeView(root, name, id, query) {
  const asked = query.get('branch') || '';
  root.append(crumbs(['Repositories', '#/repos'], [name, repoHref(name, asked)], `Change ${id}`),
    h('h1', { text: `Change ${id}` }));
  const c = await api('GET', `repos/${enc(name)}/changes/${enc(id)}?${withBranch(new URLSearchParams(), asked)}`);
  // The files at the change are read on the branch that accepted it: the change lies in that
  // branch's lifetime even when the picked branch inherited it.
  const at = c.branch || asked;
  root.append(dl([['Author', c.author === undefined ? null : u(c.author)],
    ['Time', c.time === undefined ? null : fmtTime(c.time)], ['Branch', c.branch || null],
    ['Merge of change', c.merge === undefined ? null : String(c.merge)],
    ['Commit', c.commit === undefined ? null : short(c.commit)]]),
    section('Description', h('p', { class: 'vb-pre', text: c.description ?? '' })),
    h('p', {}, h('a', { href: treeHref(name, c.id ?? id, '', at), text: 'Files at this change' })));
  if (Array.isArray(c.journal) && c.journal.length) {
    root.append(section('Journal', h('ol', { class: 'vb-journal' }, c.journal.map(journalItem))));
  }
  root.append(section('Changed paths', table('Changed paths', ['Action', 'Path'],
    (c.paths || []).map((p) => [u(p.action), h('span', { class: 'vb-path' }, u(p.path),
      p.from ? [' (from ', u(p.from), ')'] : null)]))));
}

async function treeView(root, name, query) {
  const change = query.get('change') || '';
  const branch = query.get('branch') || '';
  const dir = (query.get('path') || '').replace(/^\/+|\/+$/g, '');
  const parts = dir ? dir.split('/') : [];
  const trail = parts.map((p, i) => i === parts.length - 1 ? p
    : [p, treeHref(name, change, parts.slice(0, i + 1).join('/'), branch)]);
  root.append(crumbs(['Repositories', '#/repos'], [name, repoHref(name, branch)],
    [`Change ${change}`, changeHref(name, change, branch)],
    dir ? ['Files', treeHref(name, change, '', branch)] : 'Files',
    ...trail), h('h1', { text: dir ? `Files: ${dir}` : 'Files' }));
  const out = h('div', {});
  root.append(out);
  const tokens = [];
  let token = null;
  async function load() {
    const q = withBranch(new URLSearchParams(), branch);
    q.set('change', change);
    if (dir) q.set('path', dir);
    if (token) q.set('token', token);
    let doc;
    try { doc = await api('GET', `repos/${enc(name)}/tree?${q}`); } catch (e) {
      clear(out).append(errorNote(e)); return;
    }
    const rows = (doc.entries || []).map((e) => {
      const full = dir ? `${dir}/${e.name}` : e.name;
      const isDir = e.type === 'dir';
      const dq = withBranch(new URLSearchParams(), branch);
      dq.set('change', change);
      dq.set('path', full);
      return [isDir ? h('a', { href: treeHref(name, change, full, branch) }, u(`${e.name}/`))
        : h('span', { class: 'vb-path' }, u(e.name)),
        isDir ? '—' : fmtBytes(e.size), e.mode === undefined ? '—' : String(e.mode),
        e.manifest === undefined ? '—' : short(e.manifest),
        isDir ? '' : h('a', { href: apiUrl(`repos/${enc(name)}/file?${dq}`), download: e.name,
          text: 'Download' })];
    });
    const cur = token;
    clear(out).append(table(`Files at change ${change}${branch ? ` of ${branch}` : ''}`,
      ['Name', 'Size', 'Mode', 'Manifest', ''], rows),
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
    const q = params && params.query ? params.query : query;
    if (!name) await listView(view);
    else if (seg[2] === 'changes' && seg[3] !== undefined) await changeView(view, name, seg[3], q);
    else if (seg[2] === 'tree') await treeView(view, name, q);
    else await repoView(view, name, q);
  } catch (e) {
    if (!view.querySelector('h1')) view.append(h('h1', { text: 'Repositories' }));
    view.append(errorNote(e));
  }
}
