// `--console ADDR`: the console on a listener (an origin) of its own; the
// HTTP listener no longer serves it; sign-in works there, and presigned links
// it mints point at the HTTP listener; uploads through it (a small file and a
// 20 MiB multipart one, by presigned PUTs to the console's own listener) are
// stored and come back byte-equal through the GET links it mints.  `--console
// off` serves no console.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  ADMIN_TOKEN, Browser, CONSOLE, CSP, apiLogin, createBucket, go, login, pickAndUpload, putKeys, randomFile,
  request, s3, startServer, until, watchPartPuts,
} from './harness.mjs';

const MiB = 1 << 20;

let srv, br;
before(async () => {
  srv = await startServer({ args: ['--console', '127.0.0.1:0'], waitFor: ['console'] });
  br = await new Browser().launch();
});
after(async () => {
  await br?.close();
  await srv?.stop();
  await br?.assertClean();
});

test('--console ADDR serves the console on its own origin only', async () => {
  assert.notEqual(srv.console, srv.http);
  const own = await request(`${srv.console}${CONSOLE}`);
  assert.equal(own.status, 200);
  assert.equal(own.headers['content-security-policy'], CSP);
  const moved = await request(`${srv.http}${CONSOLE}`);
  assert.ok(moved.status >= 400 && !moved.text().includes('id="app"'), `the HTTP listener still serves it: ${moved.status}`);
  const page = await (await br.context()).newPage();
  await login(page, srv.console);
  await go(page, srv.console, '/buckets', 'Buckets');
  // Links minted there point at the HTTP listener, absolute.
  await createBucket(srv.http, 'bkt');
  await putKeys(srv.http, 'bkt', ['k']);
  const s = await apiLogin(srv.console, ADMIN_TOKEN);
  const r = await s.call('POST', 'buckets/bkt/presign', { method: 'GET', key: 'k', expires: 60 });
  assert.equal(r.status, 200, r.text());
  const url = r.json().url;
  assert.ok(url.startsWith(`${srv.http}/bkt/k?`), url);
  assert.equal((await request(url)).status, 200);
  // A session cookie of the console origin is refused with the HTTP origin.
  const wrong = await s.call('POST', 'buckets', { name: 'x' }, { Origin: srv.http });
  assert.equal(wrong.status, 403);
});

test('uploads through the console on its own origin: small and 20 MiB multipart, downloaded byte-equal', async (t) => {
  await createBucket(srv.http, 'upl');
  const small = randomFile('small.bin', 3000, 7);
  const big = randomFile('big20.bin', 20 * MiB, 20);
  const page = await (await br.context()).newPage();
  await login(page, srv.console);
  await go(page, srv.console, '/buckets/upl');
  const puts = watchPartPuts(page);
  const origins = new Set();
  page.on('request', (r) => { if (r.method() === 'PUT') origins.add(new URL(r.url()).origin); });
  const t0 = Date.now();
  await pickAndUpload(page, [small, big]);
  for (const k of ['small.bin', 'big20.bin']) {
    await until(async () => (await s3(srv.http, 'HEAD', 'upl', k)).status === 200, 180000, `${k} stored`);
  }
  t.diagnostic(`3,000 B and 20 MiB uploaded through --console ADDR in ${Date.now() - t0} ms`);
  puts.stop();
  // The PUTs went to the console's own listener (the links it mints for
  // uploads are relative to its origin), the big file as 8+8+4 MiB parts.
  assert.deepEqual([...origins], [srv.console]);
  const parts = await puts.parts();
  assert.deepEqual([...parts.entries()].sort((a, b) => a[0] - b[0]), [[1, 8 * MiB], [2, 8 * MiB], [3, 4 * MiB]]);
  // Each downloaded through the GET link the console mints: byte-equal.
  const s = await apiLogin(srv.console, ADMIN_TOKEN);
  for (const f of [small, big]) {
    const key = path.basename(f);
    const r = await s.call('POST', 'buckets/upl/presign', { method: 'GET', key, expires: 60 });
    assert.equal(r.status, 200, r.text());
    const url = r.json().url;
    assert.ok(url.startsWith(`${srv.http}/upl/${key}?`), url);
    const got = await request(url);
    assert.equal(got.status, 200);
    assert.ok(got.body.equals(fs.readFileSync(f)), `${key}: the download differs`);
    fs.rmSync(path.dirname(f), { recursive: true });
  }
  await page.close();
});

test('--console off serves no console', async () => {
  const off = await startServer({ args: ['--console', 'off'] });
  try {
    const index = await request(`${off.http}${CONSOLE}`);
    assert.ok(index.status >= 400 && !index.text().includes('id="app"'), `served: ${index.status}`);
    const login = await request(`${off.http}${CONSOLE}api/session`, { method: 'POST',
      body: JSON.stringify({ token: ADMIN_TOKEN }),
      headers: { 'Content-Type': 'application/json', 'X-Cairn-Console': '1', Origin: off.http } });
    assert.ok(login.status >= 400 && !login.headers['set-cookie'], `a session made: ${login.status}`);
  } finally {
    await off.stop();
  }
});
