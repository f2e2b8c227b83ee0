// Login, sessions and their ends through the real console: a wrong token
// refused with an alert, a right one signed in with the cookie's attributes
// and no credential left in web storage, the DOM, document.cookie or any URL;
// sign-out; a revoked token ending the session within 2 s; idle expiry with a
// short CAIRN_CONSOLE_IDLE_MS; the sixth failed login within a minute → 429.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ADMIN_KEY, ADMIN_SECRET, ADMIN_TOKEN, Browser, CONSOLE, apiCall, apiLogin, login, openLogin, pageApi, request,
  sleep, startServer, until,
} from './harness.mjs';

let srv, br;
before(async () => {
  srv = await startServer();
  br = await new Browser().launch();
});
after(async () => {
  await br?.close();
  await srv?.stop();
  await br?.assertClean();
});

/** After its session ended on the server, the page is back at the login form
 * within 5 s: at the next call a click on Buckets makes, or at one of its own
 * it made first (the header, link and all, is then gone before the click). */
async function backAtLogin(page) {
  const form = page.getByLabel('Token');
  if (!(await form.isVisible()))
    await page.getByRole('link', { name: 'Buckets' }).click({ timeout: 5000 }).catch(() => {});
  await form.waitFor({ timeout: 5000 });
}

/** Everything the page keeps where a script could read it. */
function stored(page) {
  return page.evaluate(async () => {
    const out = { local: {}, session: {}, idb: {}, cookie: document.cookie, url: location.href,
      inputs: [...document.querySelectorAll('input, textarea')].map((i) => i.value) };
    for (let i = 0; i < localStorage.length; i++) out.local[localStorage.key(i)] = localStorage.getItem(localStorage.key(i));
    for (let i = 0; i < sessionStorage.length; i++)
      out.session[sessionStorage.key(i)] = sessionStorage.getItem(sessionStorage.key(i));
    for (const d of await indexedDB.databases()) {
      const db = await new Promise((res, rej) => {
        const r = indexedDB.open(d.name);
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      for (const s of db.objectStoreNames) {
        out.idb[`${d.name}/${s}`] = await new Promise((res) => {
          const r = db.transaction(s).objectStore(s).getAll();
          r.onsuccess = () => res(JSON.stringify(r.result));
          r.onerror = () => res('?');
        });
      }
      db.close();
    }
    return out;
  });
}

test('a wrong token is refused with an alert and no session', async () => {
  const ctx = await br.context();
  const page = await ctx.newPage();
  await openLogin(page, srv.console);
  await page.getByLabel('Token').fill(`${ADMIN_KEY}:not-the-secret`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: /\S/ }).first().waitFor({ timeout: 5000 });
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0);
  assert.deepEqual((await ctx.cookies()).filter((c) => c.name === 'cairn_session'), []);
  const r = await request(`${srv.console}${CONSOLE}api/session`, {
    method: 'POST', body: JSON.stringify({ token: 'nobody:nothing' }),
    headers: { 'Content-Type': 'application/json', 'X-Cairn-Console': '1', Origin: srv.console },
  });
  assert.equal(r.status, 401);
  assert.equal(r.json().error, 'Unauthorized');
  assert.equal((await request(`${srv.console}${CONSOLE}api/session`)).status, 401);
  await ctx.close();
});

test('the right token signs in: cookie attributes, no credential kept by the page', async () => {
  const ctx = await br.context();
  const page = await ctx.newPage();
  const urlsBefore = br.urls.length;
  await login(page, srv.console);
  const cookies = (await ctx.cookies()).filter((c) => c.name === 'cairn_session');
  assert.equal(cookies.length, 1);
  const c = cookies[0];
  assert.match(c.value, /^[0-9a-f]{64}$/);
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  assert.equal(c.path, '/_cairn/console/');
  assert.equal(c.secure, false);
  assert.equal(c.expires, -1, 'a session cookie, not a persistent one');
  // The raw Set-Cookie line, as the server writes it.
  const s = await apiLogin(srv.console, ADMIN_TOKEN);
  const line = s.setCookie.find((l) => l.startsWith('cairn_session='));
  assert.match(line, /;\s*HttpOnly/i);
  assert.match(line, /;\s*SameSite=Strict/i);
  assert.match(line, /;\s*Path=\/_cairn\/console\//);
  assert.doesNotMatch(line, /;\s*Secure/i);
  for (const k of ['account', 'admin', 'idle_s', 'max_s', 'node', 'perms', 'token_id'])
    assert.ok(k in s.doc, `the session document lacks ${k}: ${JSON.stringify(s.doc)}`);
  assert.deepEqual([s.doc.idle_s, s.doc.max_s], [1800, 43200]);
  assert.equal(s.doc.admin, true);
  // Nothing the page keeps holds the token id or its secret.
  await page.getByRole('link', { name: 'Buckets' }).click();
  await page.getByRole('heading', { level: 1, name: 'Buckets' }).waitFor();
  const kept = JSON.stringify(await stored(page));
  assert.ok(!kept.includes(ADMIN_SECRET), `the secret is kept: ${kept}`);
  assert.ok(!kept.includes(`${ADMIN_KEY}:`), `the credential is kept: ${kept}`);
  assert.ok(!kept.includes(ADMIN_KEY), `the token id is kept: ${kept}`);
  for (const u of br.urls.slice(urlsBefore)) {
    assert.ok(!u.includes(ADMIN_SECRET) && !u.includes(ADMIN_KEY), `a URL holds the credential: ${u}`);
  }
  await ctx.close();
});

test('sign out ends the session on the server', async () => {
  const ctx = await br.context();
  const page = await ctx.newPage();
  await login(page, srv.console);
  const cookie = (await ctx.cookies()).find((c) => c.name === 'cairn_session');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Token').waitFor({ timeout: 5000 });
  assert.deepEqual((await ctx.cookies()).filter((x) => x.name === 'cairn_session'), []);
  const r = await apiCall(srv.console, `cairn_session=${cookie.value}`, 'GET', 'session');
  assert.equal(r.status, 401, 'the old cookie still opens a session');
  await ctx.close();
});

test('revoking the token ends its session within 2 s', async () => {
  const token = srv.newToken('revokee');
  const id = token.split(':')[0];
  const ctx = await br.context();
  const page = await ctx.newPage();
  await login(page, srv.console, token);
  assert.equal((await pageApi(page, 'GET', 'session')).status, 200);
  srv.admin('token', 'revoke', id);
  const t0 = Date.now();
  await until(async () => (await pageApi(page, 'GET', 'session')).status === 401, 2000,
    'GET session answers 401 after the revocation');
  const took = Date.now() - t0;
  assert.ok(took <= 2000, `took ${took} ms`);
  // The UI notices at its next call and returns to the login form.
  await backAtLogin(page);
  await ctx.close();
});

test('idle sessions end (CAIRN_CONSOLE_IDLE_MS), and the sixth failed login in a minute is 429', async () => {
  const idle = await startServer({ env: { CAIRN_CONSOLE_IDLE_MS: '1500' } });
  try {
    const ctx = await br.context();
    const page = await ctx.newPage();
    await login(page, idle.console);
    assert.equal((await pageApi(page, 'GET', 'session')).status, 200);
    await sleep(2500);
    assert.equal((await pageApi(page, 'GET', 'session')).status, 401, 'an idle session lives on');
    await backAtLogin(page);
    await ctx.close();
    const statuses = [];
    let last;
    for (let i = 0; i < 6; i++) {
      last = await request(`${idle.console}${CONSOLE}api/session`, {
        method: 'POST', body: JSON.stringify({ token: `${ADMIN_KEY}:wrong-${i}` }),
        headers: { 'Content-Type': 'application/json', 'X-Cairn-Console': '1', Origin: idle.console },
      });
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    assert.ok(Number(last.headers['retry-after']) > 0, 'no Retry-After');
    assert.equal(last.json().error, 'TooManyRequests');
  } finally {
    await idle.stop();
  }
});
