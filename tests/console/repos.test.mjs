// Repositories through the console, made with the real `cairn repo` client
// over Scribe: the list, the change log (with a path filter), a change with
// its description, revision journal, author and paths, the files at a change
// and a file downloaded at that change, equal byte for byte; the branch
// picker (log, change, files and download of another branch); paging of the
// log and of the tree (CAIRN_CONSOLE_REPOS_PAGE makes pages of 4); and the
// views by keyboard.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ADMIN_TOKEN, Browser, apiLogin, go, login, startServer, until } from './harness.mjs';

const PAGE = 4; // CAIRN_CONSOLE_REPOS_PAGE: changes of a log page, entries of a tree page
const FEATURE_README = '# art\non the feature branch\n';
// The root of "wide": files and directories, the directories' rows cut by reads of 4 rows.
const WIDE = ['a.txt', 'b/1', 'b/2', 'b/3', 'b/4', 'b/5', 'b.txt', 'c/x/y', 'd.txt', 'e/1', 'f.txt',
  'g/1', 'g/2', 'h.txt'];
const WIDE_ROOT = ['a.txt', 'b.txt', 'b', 'c', 'd.txt', 'e', 'f.txt', 'g', 'h.txt'];
const WIDE_CHANGES = 6;
let srv, br, page, ws, changes;
const blob = crypto.createHash('sha512').update('blob').digest();
const BLOB = Buffer.concat(Array.from({ length: 4800 }, (_, i) => Buffer.concat([blob, Buffer.from([i & 255])])));
const README1 = '# art\nfirst version\n';

function write(p, data) {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
}

before(async () => {
  srv = await startServer({ env: { CAIRN_CONSOLE_REPOS_PAGE: String(PAGE) } });
  const repo = (...a) => srv.cli(['repo', ...a, '--endpoint', srv.scribe], { env: { USER: 'tester' } });
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'cn-ws-'));
  const dir = path.join(ws, 'art');
  repo('create', 'art');
  repo('clone', 'art', dir);
  write(path.join(dir, 'README.md'), README1);
  write(path.join(dir, 'src', 'main.c'), 'int main(void) { return 0; }\n');
  repo('submit', dir, '-m', 'first change');
  write(path.join(dir, 'README.md'), '# art\nsecond version\n');
  write(path.join(dir, 'assets', 'blob.bin'), BLOB);
  repo('submit', dir, '-m', 'second change');
  const s = await apiLogin(srv.console, ADMIN_TOKEN);
  const r = await s.call('GET', 'repos/art/changes');
  assert.equal(r.status, 200, r.text());
  changes = r.json().changes; // newest first
  assert.ok(changes.length >= 2, JSON.stringify(changes));
  repo('describe', dir, String(changes[0].id), '-m', 'second change, revised');
  // A branch from main's head with a change of its own (main keeps its two).
  srv.cli(['repo', 'branch', 'create', 'feature', '--endpoint', srv.scribe], { cwd: dir, env: { USER: 'tester' } });
  srv.cli(['repo', 'switch', 'feature', '--endpoint', srv.scribe], { cwd: dir, env: { USER: 'tester' } });
  write(path.join(dir, 'README.md'), FEATURE_README);
  write(path.join(dir, 'feature.txt'), 'only here\n');
  repo('submit', dir, '-m', 'feature change');
  // "wide": more changes than a log page and more root entries than a tree page.
  const wide = path.join(ws, 'wide');
  repo('create', 'wide');
  repo('clone', 'wide', wide);
  for (const f of WIDE) write(path.join(wide, f), `${f}\n`);
  repo('submit', wide, '-m', 'wide 1');
  for (let i = 2; i <= WIDE_CHANGES; i++) {
    write(path.join(wide, 'a.txt'), `version ${i}\n`);
    repo('submit', wide, '-m', `wide ${i}`);
  }
  br = await new Browser().launch();
  page = await (await br.context()).newPage();
  await login(page, srv.console);
});
after(async () => {
  await br?.close();
  await srv?.stop();
  if (ws) fs.rmSync(ws, { recursive: true, force: true });
  await br?.assertClean();
});

/** The change log's table (its caption names it). */
const log = () => page.getByRole('table', { name: /change log/i });
const [second, first] = [() => String(changes[0].id), () => String(changes[1].id)];

test('the repository list and the change log with a path filter', async () => {
  await go(page, srv.console, '/repos', 'Repositories');
  await page.getByRole('link', { name: 'art', exact: true }).click();
  await log().getByRole('link', { name: second(), exact: true }).waitFor({ timeout: 5000 });
  assert.equal(await log().getByRole('link', { name: first(), exact: true }).count(), 1);
  await page.getByLabel('Path filter').fill('src/main.c');
  await page.getByLabel('Path filter').press('Enter');
  // The log is cleared while the filtered page loads: wait for the new table, not just the
  // second change's absence.
  const shown = async (id) => log().getByRole('link', { name: id, exact: true }).count();
  await until(async () => (await shown(second())) === 0 && (await shown(first())) === 1,
    5000, 'the second change filtered out, the first kept');
});

test('a change: description, journal, author, paths', async () => {
  await go(page, srv.console, '/repos/art');
  await log().getByRole('link', { name: second(), exact: true }).click();
  await page.getByText('second change, revised').first().waitFor({ timeout: 5000 });
  const text = await page.locator('main').innerText();
  assert.match(text, /Journal[\s\S]*second change, revised/, 'the journal lacks the revision');
  assert.match(text, /tester/, 'no author');
  assert.match(text, /README\.md/);
  assert.match(text, /assets\/blob\.bin/);
  assert.doesNotMatch(text, /src\/main\.c/, 'a path the change did not touch');
});

test('files at a change, and a file downloaded at that change byte for byte', async () => {
  await go(page, srv.console, `/repos/art/tree?change=${second()}&path=`);
  for (const n of ['README.md', 'src', 'assets'])
    await page.getByRole('row').filter({ hasText: n }).first().waitFor({ timeout: 5000 });
  await page.getByRole('link', { name: /^assets\/?$/ }).first().click();
  const row = page.getByRole('row').filter({ hasText: 'blob.bin' }).first();
  await row.waitFor({ timeout: 5000 });
  const dl = page.waitForEvent('download', { timeout: 20000 });
  await row.getByRole('button', { name: 'Download' }).or(row.getByRole('link', { name: 'Download' })).first().click();
  assert.ok(fs.readFileSync(await (await dl).path()).equals(BLOB), 'blob.bin differs');
  // README.md at the first change is its first version.
  await go(page, srv.console, `/repos/art/tree?change=${first()}&path=`);
  const r1 = page.getByRole('row').filter({ hasText: 'README.md' }).first();
  await r1.waitFor({ timeout: 5000 });
  const dl1 = page.waitForEvent('download', { timeout: 20000 });
  await r1.getByRole('button', { name: 'Download' }).or(r1.getByRole('link', { name: 'Download' })).first().click();
  assert.equal(fs.readFileSync(await (await dl1).path(), 'utf8'), README1);
});

/** The change ids the change log shows, in order. */
const logIds = async () => (await log().getByRole('link').allInnerTexts()).map((t) => t.trim());

test('the branch picker: log, change, files and a download follow the chosen branch', async () => {
  await go(page, srv.console, '/repos/art', 'art');
  await log().getByRole('link', { name: second(), exact: true }).waitFor({ timeout: 5000 });
  const feature = String(Number(second()) + 1);
  assert.equal(await log().getByRole('link', { name: feature, exact: true }).count(), 0, 'main shows a feature change');
  await page.getByLabel('Branch').selectOption('feature');
  await log().getByRole('link', { name: feature, exact: true }).waitFor({ timeout: 5000 });
  assert.deepEqual(await logIds(), [feature, second(), first()]);
  assert.match(page.url(), /#\/repos\/art\?branch=feature$/);
  // The files at the branch's head: its own file and README.
  await page.getByRole('link', { name: /files at the head of feature/i }).click();
  const row = page.getByRole('row').filter({ hasText: 'feature.txt' }).first();
  await row.waitFor({ timeout: 5000 });
  const readme = page.getByRole('row').filter({ hasText: 'README.md' }).first();
  const dl = page.waitForEvent('download', { timeout: 20000 });
  await readme.getByRole('link', { name: 'Download' }).click();
  assert.equal(fs.readFileSync(await (await dl).path(), 'utf8'), FEATURE_README);
  // The change of the branch, from its log; a reload keeps the branch.
  await go(page, srv.console, '/repos/art?branch=feature', 'art');
  assert.equal(await page.getByLabel('Branch').inputValue(), 'feature');
  await log().getByRole('link', { name: feature, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: `Change ${feature}` }).waitFor({ timeout: 5000 });
  // The heading comes before the change's details: wait for its message.
  await page.locator('main').getByText('feature change').first().waitFor({ timeout: 5000 });
  const text = await page.locator('main').innerText();
  assert.match(text, /feature change/);
  assert.match(text, /feature\.txt/);
  // An inherited change opened from the branch's log reads its files on main.
  await go(page, srv.console, '/repos/art?branch=feature', 'art');
  await log().getByRole('link', { name: first(), exact: true }).click();
  await page.getByRole('link', { name: 'Files at this change' }).click();
  await page.getByRole('row').filter({ hasText: 'src' }).first().waitFor({ timeout: 5000 });
  assert.equal(await page.getByRole('row').filter({ hasText: 'feature.txt' }).count(), 0);
});

test('paging: the change log and the tree, a page at a time, each entry once', async () => {
  await go(page, srv.console, '/repos/wide', 'wide');
  const all = Array.from({ length: WIDE_CHANGES }, (_, i) => String(WIDE_CHANGES - i));
  await until(async () => (await logIds()).join() === all.slice(0, PAGE).join(), 5000, 'the first log page');
  await page.getByRole('button', { name: 'Next page' }).click();
  await until(async () => (await logIds()).join() === all.slice(PAGE).join(), 5000, 'the second log page');
  assert.ok(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'a third log page');
  await page.getByRole('button', { name: 'Previous page' }).click();
  await until(async () => (await logIds()).join() === all.slice(0, PAGE).join(), 5000, 'back to the first page');

  await page.getByRole('link', { name: /files at the head/i }).click();
  const files = page.getByRole('table', { name: /files at change/i });
  const names = async () => (await files.locator('tbody tr td:first-child').allInnerTexts()).map((t) => t.trim());
  const seen = [];
  for (let p = 0; ; p++) {
    await until(async () => (await names()).length > 0 && !seen.includes((await names())[0]), 5000, `tree page ${p + 1}`);
    const got = await names();
    assert.ok(got.length <= PAGE, `a page of ${got.length}`);
    seen.push(...got);
    const next = page.getByRole('button', { name: 'Next page' });
    if (await next.isDisabled()) break;
    assert.ok(p < 10, 'too many pages');
    await next.click();
  }
  assert.deepEqual(seen.map((n) => n.replace(/\/$/, '')), WIDE_ROOT);
});

test('by keyboard: Tab to a repository, Enter opens it, the change log and a change', async () => {
  await go(page, srv.console, '/repos', 'Repositories');
  const focused = () => page.evaluate(() => {
    const a = document.activeElement;
    return a ? `${a.tagName}:${(a.textContent || '').trim()}:${a.closest('table')?.querySelector('caption')?.textContent || ''}` : '';
  });
  async function tabTo(re, what) {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      if (re.test(await focused())) return;
    }
    throw new Error(`Tab never reached ${what} (last: ${await focused()})`);
  }
  await tabTo(/^A:art:Repositories$/, 'the art link');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'art' }).waitFor({ timeout: 5000 });
  await log().getByRole('link', { name: second(), exact: true }).waitFor({ timeout: 5000 });
  // The branch picker by keyboard: main is first, feature next.
  await tabTo(/^SELECT:/, 'the branch picker');
  await page.keyboard.press('ArrowDown');
  const feature = String(Number(second()) + 1);
  await log().getByRole('link', { name: feature, exact: true }).waitFor({ timeout: 5000 });
  await tabTo(new RegExp(`^A:${feature}:Change log of feature$`), 'the newest change in the log');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: `Change ${feature}` }).waitFor({ timeout: 5000 });
});
