// `--console ADDR`: the console on a listener (an origin) of its own; the
// HTTP listener no longer serves it; sign-in works there, and presigned links
// it mints point at the HTTP listener.  `--console off` serves no console.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ADMIN_TOKEN, Browser, CONSOLE, CSP, apiLogin, createBucket, go, login, putKeys, request, startServer,
} from './harness.mjs';

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
