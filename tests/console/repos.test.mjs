// Repositories through the console, made with the real `cairn repo` client
// over Scribe: the list, the change log (with a path filter), a change with
// its description, revision journal, author and paths, the files at a change
// and a file downloaded at that change, equal byte for byte.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ADMIN_TOKEN, Browser, apiLogin, go, login, startServer, until } from './harness.mjs';

let srv, br, page, ws, changes;
const blob = crypto.createHash('sha512').update('blob').digest();
const BLOB = Buffer.concat(Array.from({ length: 4800 }, (_, i) => Buffer.concat([blob, Buffer.from([i & 255])])));
const README1 = '# art\nfirst version\n';

function write(p, data) {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
}

before(async () => {
  srv = await startServer();
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
