// What every console test shares: a real cairnd started from the build
// (CAIRN_BUILD, default build/) on ephemeral loopback ports with a temporary
// data dir and the test administrator token, Debian's chromium driven by
// playwright-core with a fresh profile, and the watchers the whole suite
// asserts on (securitypolicyviolation events, dialogs, the CSP header of
// every console response).  Also: SigV4 for S3 requests made from Node (test
// data is written through the real S3 face, quickly), the console API called
// from Node with a session cookie, and the `cairn` client.
//
// Nothing here downloads a browser or reaches beyond loopback; a helper that
// finds something wrong throws, so a missing view or endpoint fails its test
// rather than skipping it.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '..', '..');
export const BUILD = path.resolve(ROOT, process.env.CAIRN_BUILD || 'build');
export const ADMIN_TOKEN = 'cnadmin:test-admin-secret-0123456789';
export const [ADMIN_KEY, ADMIN_SECRET] = ADMIN_TOKEN.split(':');
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
export const CONSOLE = '/_cairn/console/';
export const REGION = 'us-east-1';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The path of a built binary; throws when it is not built. */
export function binary(name) {
  const p = path.join(BUILD, name);
  if (!fs.existsSync(p)) throw new Error(`${p} is not built; run make`);
  return p;
}

/** Polls fn until it returns a truthy value (returned) or ms pass (throws
 *  with what). */
export async function until(fn, ms, what) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}${last ? ` (${last.message})` : ''}`);
    await sleep(50);
  }
}

// ---- cairnd ---------------------------------------------------------------------------

// Servers still running when the test process exits (a crashed file) are killed.
const live = new Set();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/**
 * Starts cairnd from the build on loopback port 0 for HTTP and Scribe (Jay
 * off) in a fresh temporary data dir, waits for its listeners' log lines and
 * for GET /_cairn/health, and returns {http, scribe, console, data, stop(),
 * output(), cli(...)}; `http` and `console` are origins ("http://127.0.0.1:P";
 * console is http unless --console ADDR gave it a listener of its own).
 * opts.args: more flags; opts.env: more environment; opts.waitFor: more
 * listener names to wait for.
 */
export async function startServer(opts = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cn-console-'));
  const data = path.join(dir, 'data');
  const logPath = path.join(dir, 'cairnd.log');
  const log = fs.openSync(logPath, 'a');
  const args = ['--data', data, '--jay', 'off', '--scribe', '127.0.0.1:0', '--http', '127.0.0.1:0',
    ...(opts.args || [])];
  const env = { ...process.env, CAIRN_ADMIN_TOKEN: ADMIN_TOKEN, ...(opts.env || {}) };
  const proc = spawn(binary('cairnd'), args, { stdio: ['ignore', log, log], env });
  const output = () => {
    try {
      return fs.readFileSync(logPath, 'utf8');
    } catch {
      return '';
    }
  };
  let exited = null;
  live.add(proc);
  proc.on('exit', (code, sig) => {
    exited = { code, sig };
    live.delete(proc);
  });
  const addrs = {};
  const want = ['http', 'scribe', ...(opts.waitFor || [])];
  await until(() => {
    if (exited) throw new Error(`cairnd exited ${JSON.stringify(exited)}:\n${output()}`);
    for (const m of output().matchAll(/listening (\w+) on (\S+)/g)) addrs[m[1]] = m[2];
    return want.every((k) => addrs[k]);
  }, 60000, `cairnd listening (${want})`).catch((e) => {
    proc.kill('SIGKILL');
    throw new Error(`${e.message}\n${output()}`);
  });
  const srv = {
    dir, data, proc, addrs, output,
    http: `http://${addrs.http}`,
    scribe: addrs.scribe,
    console: addrs.console ? `http://${addrs.console}` : `http://${addrs.http}`,
    async stop() {
      if (!exited) {
        proc.kill('SIGTERM');
        await until(() => exited, 20000, 'cairnd to stop').catch(() => proc.kill('SIGKILL'));
      }
      fs.closeSync(log);
      const out = output();
      if (/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/.test(out))
        throw new Error(`sanitizer report in cairnd's log:\n${out}`);
      fs.rmSync(dir, { recursive: true, force: true });
    },
    /** Runs `cairn ARGS` (check: exit 0 required); {status, stdout, stderr}. */
    cli(args, { check = true, env: more = {}, cwd, input } = {}) {
      const r = spawnSync(binary('cairn'), args, {
        env: { ...process.env, CAIRN_ADMIN_TOKEN: ADMIN_TOKEN, ...more }, cwd, input,
        encoding: 'utf8', timeout: 120000,
      });
      const res = { status: r.status, stdout: r.stdout || '', stderr: r.stderr || '' };
      if (/Sanitizer|runtime error:/.test(res.stderr)) throw new Error(`sanitizer report: ${res.stderr}`);
      if (check && r.status !== 0) throw new Error(`cairn ${args.join(' ')} exited ${r.status}: ${res.stderr}`);
      return res;
    },
    /** `cairn admin --data DATA ARGS`. */
    admin(...a) {
      return srv.cli(['admin', '--data', data, ...a]).stdout.trim();
    },
    /** A new account (unless it exists) and a token for it: "ID:SECRET".
     *  perms: permission names (default: every one but admin). */
    newToken(account, perms = []) {
      srv.cli(['admin', '--data', data, 'account', 'create', account], { check: false });
      const a = ['token', 'create', '--account', account];
      for (const p of perms) a.push('--perm', p);
      return srv.admin(...a).split('\n').pop().trim();
    },
  };
  await until(async () => (await request(`${srv.http}/_cairn/health`)).status === 200, 30000,
    'GET /_cairn/health answers 200');
  return srv;
}

// ---- raw HTTP from Node ---------------------------------------------------------------

/** One HTTP request; resolves {status, headers, body (Buffer), text()}. body:
 *  Buffer or string. */
export function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        const b = Buffer.concat(parts);
        resolve({ status: res.statusCode, headers: res.headers, body: b, text: () => b.toString('utf8'),
          json: () => JSON.parse(b.toString('utf8')) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

/**
 * A console API session made from Node: POST session with token; returns
 * {cookie, setCookie, doc, call(method, path, body, headers)} where call sends
 * the cookie and the guards' headers (X-Cairn-Console, JSON type, Origin =
 * base) unless headers override them (a header set to null is left out).
 */
export async function apiLogin(base, token) {
  const r = await request(`${base}${CONSOLE}api/session`, {
    method: 'POST', body: JSON.stringify({ token }),
    headers: { 'Content-Type': 'application/json', 'X-Cairn-Console': '1', Origin: base },
  });
  if (r.status !== 200) throw new Error(`POST session: ${r.status} ${r.text()}`);
  const setCookie = [].concat(r.headers['set-cookie'] || []);
  const m = setCookie.join('\n').match(/cairn_session=([0-9a-f]{64})/);
  if (!m) throw new Error(`no cairn_session cookie in ${setCookie}`);
  const cookie = `cairn_session=${m[1]}`;
  return {
    cookie, setCookie, doc: r.json(),
    call: (method, p, body, headers = {}) => apiCall(base, cookie, method, p, body, headers),
  };
}

/** One console API call (see apiLogin); resolves request()'s answer. */
export function apiCall(base, cookie, method, p, body, headers = {}) {
  const h = { Cookie: cookie, 'X-Cairn-Console': '1', Origin: base };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  for (const [k, v] of Object.entries(headers)) {
    if (v === null) delete h[k];
    else h[k] = v;
  }
  return request(`${base}${CONSOLE}api/${p}`, {
    method, headers: h, body: body === undefined ? undefined : JSON.stringify(body),
  });
}

// ---- S3 with SigV4 (own code, for setting up data) ------------------------------------

const sha256hex = (b) => crypto.createHash('sha256').update(b).digest('hex');
const hmac = (k, s) => crypto.createHmac('sha256', k).update(s).digest();
const amzDate = (d = new Date()) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
/** RFC 3986 encoding as SigV4 wants it; '/' kept when slash. */
export function uriEncode(s, slash = false) {
  return Array.from(Buffer.from(s, 'utf8')).map((c) => {
    const ch = String.fromCharCode(c);
    if (/[A-Za-z0-9\-._~]/.test(ch) || (slash && ch === '/')) return ch;
    return '%' + c.toString(16).toUpperCase().padStart(2, '0');
  }).join('');
}

function signingKey(secret, day) {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, day), REGION), 's3'), 'aws4_request');
}

function canonicalQuery(q) {
  return Object.keys(q).sort().map((k) => `${uriEncode(k)}=${uriEncode(String(q[k]))}`).join('&');
}

/** A SigV4 header-signed S3 request (path style): method, bucket, key
 *  ('' for the bucket), query object, body Buffer. */
export function s3(base, method, bucket, key = '', { query = {}, body = Buffer.alloc(0), headers = {},
  id = ADMIN_KEY, secret = ADMIN_SECRET } = {}) {
  const host = new URL(base).host;
  const now = amzDate();
  const p = `/${uriEncode(bucket)}${key ? '/' + uriEncode(key, true) : ''}`;
  const h = { ...headers, host, 'x-amz-date': now, 'x-amz-content-sha256': sha256hex(body) };
  const names = Object.keys(h).map((k) => k.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), String(v).trim()]));
  const creq = [method, p, canonicalQuery(query), names.map((n) => `${n}:${lower[n]}\n`).join(''),
    names.join(';'), lower['x-amz-content-sha256']].join('\n');
  const scope = `${now.slice(0, 8)}/${REGION}/s3/aws4_request`;
  const sts = ['AWS4-HMAC-SHA256', now, scope, sha256hex(creq)].join('\n');
  const sig = hmac(signingKey(secret, now.slice(0, 8)), sts).toString('hex');
  const auth = `AWS4-HMAC-SHA256 Credential=${id}/${scope}, SignedHeaders=${names.join(';')}, Signature=${sig}`;
  const qs = canonicalQuery(query);
  delete h.host;
  return request(`${base}${p}${qs ? '?' + qs : ''}`, { method, body, headers: { ...h, Authorization: auth } });
}

/** A presigned S3 URL (query form, UNSIGNED-PAYLOAD) valid for expires s. */
export function presignUrl(base, method, bucket, key, expires = 300, { id = ADMIN_KEY, secret = ADMIN_SECRET,
  extra = {} } = {}) {
  const host = new URL(base).host;
  const now = amzDate();
  const scope = `${now.slice(0, 8)}/${REGION}/s3/aws4_request`;
  const p = `/${uriEncode(bucket)}/${uriEncode(key, true)}`;
  const q = { ...extra, 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256', 'X-Amz-Credential': `${id}/${scope}`,
    'X-Amz-Date': now, 'X-Amz-Expires': String(expires), 'X-Amz-SignedHeaders': 'host' };
  const creq = [method, p, canonicalQuery(q), `host:${host}\n`, 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const sts = ['AWS4-HMAC-SHA256', now, scope, sha256hex(creq)].join('\n');
  const sig = hmac(signingKey(secret, now.slice(0, 8)), sts).toString('hex');
  return `${base}${p}?${canonicalQuery(q)}&X-Amz-Signature=${sig}`;
}

/** Creates bucket (200 required). */
export async function createBucket(base, bucket) {
  const r = await s3(base, 'PUT', bucket);
  if (r.status !== 200) throw new Error(`CreateBucket ${bucket}: ${r.status} ${r.text()}`);
}

/** PUTs every key of keys (with body(key)) through S3, `parallel` at a time. */
export async function putKeys(base, bucket, keys, body = (k) => Buffer.from(`body of ${k}\n`), parallel = 24,
  headers = {}) {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const k = keys[next++];
      const r = await s3(base, 'PUT', bucket, k, { body: body(k), headers });
      if (r.status !== 200) throw new Error(`PUT ${k}: ${r.status} ${r.text()}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** Every key under prefix in bucket (ListObjectsV2, all pages). */
export async function listKeys(base, bucket, prefix = '') {
  const keys = [];
  let token;
  for (;;) {
    const query = { 'list-type': '2', prefix };
    if (token) query['continuation-token'] = token;
    const r = await s3(base, 'GET', bucket, '', { query });
    if (r.status !== 200) throw new Error(`ListObjectsV2: ${r.status} ${r.text()}`);
    const x = r.text();
    for (const m of x.matchAll(/<Key>([^<]*)<\/Key>/g)) keys.push(xmlText(m[1]));
    const t = x.match(/<NextContinuationToken>([^<]*)</);
    if (!t) return keys;
    token = xmlText(t[1]);
  }
}

/** The keys of the bucket's open multipart uploads (ListMultipartUploads). */
export async function openUploads(base, bucket) {
  const r = await s3(base, 'GET', bucket, '', { query: { uploads: '' } });
  if (r.status !== 200) throw new Error(`ListMultipartUploads: ${r.status} ${r.text()}`);
  return [...r.text().matchAll(/<Upload>[\s\S]*?<Key>([^<]*)<\/Key>/g)].map((m) => xmlText(m[1]));
}

const xmlText = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
  .replace(/&apos;/g, "'").replace(/&#x?([0-9a-fA-F]+);/g, (m, n) => String.fromCodePoint(
    m.startsWith('&#x') ? parseInt(n, 16) : parseInt(n, 10))).replace(/&amp;/g, '&');

// ---- the browser ----------------------------------------------------------------------

/** Debian's chromium (`command -v chromium`); throws when it is missing. */
export function chromiumPath() {
  const r = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' });
  const p = (r.stdout || '').trim();
  if (!p) throw new Error('chromium is not installed (scripts/deps.sh test installs it)');
  return p;
}

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * A browser session for one test file: launch() starts Debian's chromium;
 * context() opens a fresh context (its own cookies and storage) whose pages
 * report every securitypolicyviolation event, every dialog (dismissed), every
 * console response's CSP header and every request URL; assertClean() throws
 * on any violation, dialog or response without the CSP.
 */
export class Browser {
  constructor() {
    this.violations = [];
    this.dialogs = [];
    this.badCsp = [];
    this.consoleResponses = 0;
    this.urls = [];
    this.pageErrors = [];
    this.pending = [];
  }

  async launch() {
    this.browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
    return this;
  }

  async context(opts = {}) {
    const ctx = await this.browser.newContext({ viewport: { width: 1280, height: 800 }, ...opts });
    await ctx.exposeBinding('__cairnViolation', (_src, v) => { this.violations.push(v); });
    await ctx.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__cairnViolation({ directive: e.violatedDirective, blocked: e.blockedURI, doc: e.documentURI,
          sample: e.sample, line: e.lineNumber, source: e.sourceFile });
      }, true);
    });
    ctx.on('page', (p) => this.watch(p));
    ctx.on('request', (r) => this.urls.push(r.url()));
    ctx.on('response', (r) => { this.pending.push(this.checkCsp(r)); });
    return ctx;
  }

  /** A new page in ctx (a fresh context when ctx is missing). */
  async page(ctx) {
    const c = ctx || (await this.context());
    const p = await c.newPage();
    return p;
  }

  watch(p) {
    if (p.__cairnWatched) return;
    p.__cairnWatched = true;
    p.on('dialog', (d) => {
      this.dialogs.push({ type: d.type(), message: d.message(), url: p.url() });
      d.dismiss().catch(() => {});
    });
    p.on('pageerror', (e) => this.pageErrors.push(String(e)));
  }

  async checkCsp(r) {
    let u;
    try {
      u = new URL(r.url());
    } catch {
      return;
    }
    if (!u.pathname.startsWith('/_cairn/console')) return;
    this.consoleResponses++;
    let h;
    try {
      h = await r.allHeaders(); // the raw headers, also of opaque (no-cors) answers
    } catch {
      h = r.headers();
    }
    // An opaque (no-cors) answer's headers are not exposed to the browser's
    // tools: nothing to check there (security.test.mjs checks it from Node).
    if (Object.keys(h).length === 0) return;
    if (h['content-security-policy'] !== CSP || h['x-content-type-options'] !== 'nosniff' ||
        h['referrer-policy'] !== 'no-referrer' || h['cross-origin-opener-policy'] !== 'same-origin')
      this.badCsp.push(`${r.status()} ${r.url()}: ${JSON.stringify(h)}`);
  }

  async assertClean() {
    await Promise.allSettled(this.pending);
    // Uncaught page errors are reported, not failed on: a view's own test fails
    // when its behaviour does.
    for (const e of this.pageErrors) process.stderr.write(`console page error: ${e}\n`);
    const problems = [];
    if (this.violations.length) problems.push(`CSP violations: ${JSON.stringify(this.violations)}`);
    if (this.dialogs.length) problems.push(`dialogs: ${JSON.stringify(this.dialogs)}`);
    if (this.badCsp.length) problems.push(`console responses without the security headers:\n${this.badCsp.join('\n')}`);
    if (problems.length) throw new Error(problems.join('\n'));
  }

  async close() {
    await Promise.allSettled(this.pending);
    if (this.browser) await this.browser.close();
  }
}

// ---- the console through the UI -------------------------------------------------------

/** Opens the console at base in page and waits for the login form. */
export async function openLogin(page, base) {
  await page.goto(base + CONSOLE);
  await page.getByLabel('Token').waitFor({ timeout: 10000 });
}

/** Logs in through the UI with token; waits for the "Sign out" button. */
export async function login(page, base, token = ADMIN_TOKEN) {
  await openLogin(page, base);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10000 });
}

/**
 * The set-up most test files share: before their tests, a cairnd
 * (startServer(opts.server)), a Browser and one page signed in as
 * opts.token (the administrator when missing); after them, the browser
 * closed, the server stopped and the run's watchers asserted clean
 * (Browser.assertClean).  ready(s) runs once all of that is up, with
 * s = {srv, br, ctx, page}, before opts.login signs in (false: no sign-in);
 * the same object is returned, its fields set once the before hook ran.
 */
export function signedInSuite(ready = () => {}, opts = {}) {
  const s = { srv: null, br: null, ctx: null, page: null };
  before(async () => {
    s.srv = await startServer(opts.server);
    s.br = await new Browser().launch();
    s.ctx = await s.br.context();
    s.page = await s.ctx.newPage();
    await ready(s);
    if (opts.login !== false) await login(s.page, s.srv.console, opts.token);
  });
  after(async () => {
    await s.br?.close();
    await s.srv?.stop();
    await s.br?.assertClean();
  });
  return s;
}

/**
 * Records, from the page's network events, the presigned part PUTs of its
 * multipart uploads (a PUT whose URL carries partNumber): resolves
 * {parts(): Map partNumber → the Content-Length of a finished PUT of it,
 * maxInFlight(): the most part PUTs the page had started and not yet seen
 * finish or fail at one time, stop()}.
 */
export function watchPartPuts(page) {
  const parts = new Map();
  const live = new Set();
  const sizes = [];
  let max = 0;
  const isPart = (r) => r.method() === 'PUT' && new URL(r.url()).searchParams.has('partNumber');
  const onRequest = (r) => {
    if (!isPart(r)) return;
    live.add(r);
    max = Math.max(max, live.size);
  };
  const onFailed = (r) => { live.delete(r); };
  const onEnd = (r) => {
    if (!live.delete(r)) return;
    // The body is a Blob, which the request events do not carry: its size
    // is the Content-Length the browser sent.
    sizes.push(r.allHeaders().then((hd) => {
      parts.set(Number(new URL(r.url()).searchParams.get('partNumber')), Number(hd['content-length']));
    }, () => {}));
  };
  page.on('request', onRequest);
  page.on('requestfinished', onEnd);
  page.on('requestfailed', onFailed);
  return {
    async parts() { await Promise.all(sizes); return parts; },
    maxInFlight: () => max,
    stop() {
      page.off('request', onRequest);
      page.off('requestfinished', onEnd);
      page.off('requestfailed', onFailed);
    },
  };
}

/** Goes to the console route hash (without '#') and waits for its <h1>. */
export async function go(page, base, hash, h1) {
  const url = `${base}${CONSOLE}#${hash}`;
  if (page.url() === url) await page.reload();
  else await page.goto(url);
  const heading = h1 ? page.getByRole('heading', { level: 1, name: h1 }) : page.locator('h1').first();
  await heading.waitFor({ timeout: 10000 });
}

/** Calls the console API from inside the page (its cookie, its origin),
 *  with the guards' headers; resolves {status, body}. */
export function pageApi(page, method, p, body) {
  return page.evaluate(async ([m, pp, b]) => {
    const init = { method: m, credentials: 'same-origin', headers: { 'X-Cairn-Console': '1' } };
    if (b !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(b);
    }
    const r = await fetch('/_cairn/console/api/' + pp, init);
    const t = await r.text();
    return { status: r.status, body: t };
  }, [method, p, body]);
}

/** The SHA-256 (hex) of a file. */
export function fileSha256(p) {
  return crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
}

/** Writes size pseudo-random bytes (seeded) to a temp file; returns its path. */
export function randomFile(name, size, seed = 1) {
  const p = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cn-up-')), name);
  const chunk = 1 << 20;
  const fd = fs.openSync(p, 'w');
  const key = crypto.createHash('sha256').update(String(seed)).digest().subarray(0, 16);
  const aes = crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  for (let off = 0; off < size; off += chunk) fs.writeSync(fd, aes.update(Buffer.alloc(Math.min(chunk, size - off))));
  fs.closeSync(fd);
  return p;
}

/** When the page asks to confirm in place (a role=dialog or alertdialog),
 *  presses its confirming button; a window.confirm would count as a dialog
 *  and fail the run. */
export async function confirmIfAsked(page) {
  const d = page.locator('[role=dialog]:visible, [role=alertdialog]:visible, dialog[open]');
  try {
    await d.first().waitFor({ timeout: 700 });
  } catch {
    return;
  }
  await d.first().getByRole('button', { name: /^(delete|confirm|yes|ok|abort|revoke|end)/i }).first().click();
}

/** Presses the button named name in the table row holding text (or, when
 *  no row holds such a button, the first such button on the page). */
export async function rowButton(page, text, name) {
  const inRow = page.getByRole('row').filter({ hasText: text }).getByRole('button', { name });
  if (await inRow.count()) await inRow.first().click();
  else await page.getByRole('button', { name }).first().click();
  await confirmIfAsked(page);
}

/** Starts recording, in the page, every value a progress indicator shows
 *  (<progress> value/max, role=progressbar aria-valuenow/aria-valuemax) as a
 *  fraction in window.__cnProgress; read them with progressSamples(page). */
export async function watchProgress(page) {
  await page.evaluate(() => {
    window.__cnProgress = [];
    const read = () => {
      for (const el of document.querySelectorAll('progress, [role=progressbar]')) {
        let v, max;
        if (el.tagName === 'PROGRESS') {
          if (!el.hasAttribute('value')) continue;
          v = el.value;
          max = el.max || 1;
        } else {
          v = Number(el.getAttribute('aria-valuenow'));
          max = Number(el.getAttribute('aria-valuemax') || 100);
        }
        if (!Number.isFinite(v) || !max) continue;
        const f = v / max;
        const a = window.__cnProgress;
        if (a[a.length - 1] !== f) a.push(f);
      }
    };
    new MutationObserver(read).observe(document, { subtree: true, childList: true, attributes: true,
      characterData: true });
    window.__cnProgressTimer = setInterval(read, 20);
  });
}

export const progressSamples = (page) => page.evaluate(() => window.__cnProgress.slice());

/** Selects files in the upload picker (the input labelled "Files"); when no
 *  progress indicator appears within 2 s (the view waits for a button),
 *  presses "Upload", answering a file chooser it opens with the same files. */
export async function pickAndUpload(page, files) {
  await page.getByLabel('Files').setInputFiles(files);
  const bars = page.locator('progress, [role=progressbar]');
  try {
    await bars.first().waitFor({ state: 'attached', timeout: 2000 });
    return;
  } catch {
    // not started by the selection
  }
  const chooser = page.waitForEvent('filechooser', { timeout: 2000 }).catch(() => null);
  await page.getByRole('button', { name: 'Upload', exact: true }).first().click();
  const fc = await chooser;
  if (fc) await fc.setFiles(files);
}
