// Every console view at 1280×800 and 390×844, against a real server holding
// fixed data: the screenshot is not blank (pixel variance), the page does not
// overflow horizontally, its heading and controls are inside the viewport
// (tables may scroll inside their own wrapper), and every control in
// Chromium's accessibility tree has a name.  CONSOLE_SHOTS=compare also
// compares each screenshot with its golden in golden/ (at most 0.5 % of the
// pixels changed, dynamic text masked); CONSOLE_SHOTS=record re-records the
// goldens and golden/VERSION (the Chromium that made them).  Screenshots are
// taken through CDP so that nothing is injected into the page (the CSP would
// report an injected style).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import {
  ADMIN_TOKEN, Browser, CONSOLE, HERE, apiLogin, createBucket, login, putKeys, startServer,
} from './harness.mjs';

const SHOTS = process.env.CONSOLE_SHOTS || '';
const GOLDEN = path.join(HERE, 'golden');
const SIZES = [[1280, 800], [390, 844]];
const NAMED = new Set(['button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox',
  'spinbutton', 'slider', 'switch', 'tab', 'menuitem', 'option', 'menuitemcheckbox', 'menuitemradio']);

let srv, br, ctx, change;
before(async () => {
  // A fixed node id: the header shows it, and its width moves the layout.
  srv = await startServer({ args: ['--node-id', 'node-console-shots'] });
  await createBucket(srv.http, 'photos');
  await putKeys(srv.http, 'photos', ['readme.txt', '2024/a.jpg', '2024/b.jpg', 'notes/todo.md'],
    (k) => Buffer.from(`fixed body of ${k}\n`), 1, { 'Content-Type': 'text/plain' });
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'cn-ws-'));
  const repo = (...a) => srv.cli(['repo', ...a, '--endpoint', srv.scribe], { env: { USER: 'tester' } });
  repo('create', 'art');
  repo('clone', 'art', path.join(ws, 'art'));
  fs.mkdirSync(path.join(ws, 'art', 'src'));
  fs.writeFileSync(path.join(ws, 'art', 'README.md'), '# art\n');
  fs.writeFileSync(path.join(ws, 'art', 'src', 'main.c'), 'int main(void) { return 0; }\n');
  repo('submit', path.join(ws, 'art'), '-m', 'first change');
  const blob = path.join(ws, 'blob');
  fs.writeFileSync(blob, 'a blob\n');
  srv.cli(['blob', 'put', 'assets', blob, '--url', srv.http, '--token', ADMIN_TOKEN]);
  fs.rmSync(ws, { recursive: true });
  srv.newToken('alice');
  const s = await apiLogin(srv.console, ADMIN_TOKEN);
  const r = await s.call('GET', 'repos/art/changes');
  change = r.status === 200 ? String(r.json().changes[0].id) : '1';
  br = await new Browser().launch();
  ctx = await br.context();
  await login(await ctx.newPage(), srv.console);
  if (SHOTS === 'record') fs.mkdirSync(GOLDEN, { recursive: true });
});
after(async () => {
  if (SHOTS === 'record') fs.writeFileSync(path.join(GOLDEN, 'VERSION'), `chromium ${br.browser.version()}\n`);
  await br?.close();
  await srv?.stop();
  await br?.assertClean();
});

const VIEWS = () => [
  ['buckets', '/buckets'], ['objects', '/buckets/photos'], ['object', '/buckets/photos/object?key=readme.txt'],
  ['repos', '/repos'], ['repo', '/repos/art'], ['change', `/repos/art/changes/${change}`],
  ['tree', `/repos/art/tree?change=${change}&path=`], ['namespaces', '/namespaces'], ['metrics', '/metrics'],
  ['admin', '/admin'],
];

/** Layout facts of the page: overflow, the heading's box, controls outside
 *  the viewport (not counting those inside a horizontally scrolling box),
 *  and the boxes of dynamic text to mask. */
function layout(page, anyDigit = false) {
  return page.evaluate((anyDigit) => {
    const W = document.documentElement.clientWidth;
    const inScroller = (el) => {
      for (let a = el.parentElement; a; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if ((o === 'auto' || o === 'scroll') && a.scrollWidth > a.clientWidth) return true;
      }
      return false;
    };
    const visible = (el) => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
    };
    const outside = [];
    for (const el of document.querySelectorAll('button, a[href], input, select, textarea, h1')) {
      if (!visible(el) || inScroller(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.left < -1 || r.right > W + 1) outside.push(`${el.tagName} "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 40)}" ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
    const h1 = document.querySelector('h1');
    const hr = h1 && h1.getBoundingClientRect();
    const dyn = /\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\b[0-9a-f]{8,}\b|\d+(\.\d+)?\s?(B|KiB|MiB|GiB|kB|MB|GB|ms|\/s)\b|\bago\b/i;
    const masks = [];
    // An element's own text (its text nodes, not its children's).
    const own = (el) => [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('');
    for (const el of document.querySelectorAll('time, svg, progress, [data-dynamic], td, dd, span, li, p, output, div')) {
      if (!visible(el) || el.closest('svg') !== null && el.tagName !== 'svg') continue;
      const text = el.children.length === 0 ? el.textContent : own(el);
      if (el.tagName === 'svg' || el.tagName === 'TIME' || el.tagName === 'PROGRESS' || el.hasAttribute('data-dynamic') ||
          dyn.test(text) || (anyDigit && /\d/.test(text))) {
        const r = el.getBoundingClientRect();
        masks.push([r.left, r.top, r.width, r.height]);
      }
    }
    return {
      scrollWidth: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth), clientWidth: W,
      h1: hr && [hr.left, hr.right, hr.top, hr.bottom], outside, masks,
    };
  }, anyDigit);
}

/** Unnamed controls in Chromium's accessibility tree (through CDP). */
async function unnamed(page) {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  await cdp.detach();
  return nodes.filter((n) => !n.ignored && NAMED.has(n.role?.value) && !String(n.name?.value || '').trim())
    .map((n) => `${n.role.value} (backend node ${n.backendDOMNodeId})`);
}

async function screenshot(page) {
  const cdp = await page.context().newCDPSession(page);
  const { data } = await cdp.send('Page.captureScreenshot', { format: 'png' });
  await cdp.detach();
  return PNG.sync.read(Buffer.from(data, 'base64'));
}

function blankness(png) {
  let n = 0, sum = 0, sq = 0;
  for (let i = 0; i < png.data.length; i += 4 * 7) {
    const y = 0.299 * png.data[i] + 0.587 * png.data[i + 1] + 0.114 * png.data[i + 2];
    sum += y;
    sq += y * y;
    n++;
  }
  return Math.sqrt(sq / n - (sum / n) ** 2); // the luminance's standard deviation
}

function mask(png, boxes, dpr = 1) {
  for (const [x, y, w, h] of boxes) {
    const x0 = Math.max(0, Math.floor(x * dpr)), y0 = Math.max(0, Math.floor(y * dpr));
    const x1 = Math.min(png.width, Math.ceil((x + w) * dpr)), y1 = Math.min(png.height, Math.ceil((y + h) * dpr));
    for (let yy = y0; yy < y1; yy++) {
      for (let xx = x0; xx < x1; xx++) {
        const i = (yy * png.width + xx) * 4;
        png.data[i] = 255; png.data[i + 1] = 0; png.data[i + 2] = 255; png.data[i + 3] = 255;
      }
    }
  }
}

function golden(name, png) {
  const file = path.join(GOLDEN, `${name}.png`);
  if (SHOTS === 'record') {
    fs.writeFileSync(file, PNG.sync.write(png));
    return;
  }
  if (SHOTS !== 'compare') return;
  assert.ok(fs.existsSync(file), `no golden ${path.relative(process.cwd(), file)}: make console-golden`);
  const want = PNG.sync.read(fs.readFileSync(file));
  assert.deepEqual([png.width, png.height], [want.width, want.height], `${name}: size`);
  const diff = new PNG({ width: png.width, height: png.height });
  const changed = pixelmatch(png.data, want.data, diff.data, png.width, png.height, { threshold: 0.1 });
  const share = changed / (png.width * png.height);
  if (share > 0.005) {
    const out = path.join(os.tmpdir(), `cn-console-diff-${name}.png`);
    fs.writeFileSync(out, PNG.sync.write(diff));
    assert.fail(`${name}: ${(share * 100).toFixed(2)} % of the pixels changed (over 0.5 %); diff in ${out}`);
  }
}

async function checkView(page, name, w, h) {
  const png = await screenshot(page);
  const sd = blankness(png);
  assert.ok(sd > 6, `${name}: the screenshot looks blank (luminance deviation ${sd.toFixed(1)})`);
  // Every figure of the metrics view moves from run to run.
  const l = await layout(page, name.startsWith('metrics'));
  assert.ok(l.scrollWidth <= l.clientWidth, `${name}: overflows horizontally (${l.scrollWidth} > ${l.clientWidth})`);
  assert.ok(l.h1, `${name}: no <h1>`);
  assert.ok(l.h1[0] >= 0 && l.h1[1] <= w && l.h1[2] >= 0 && l.h1[3] <= h, `${name}: the <h1> is outside the viewport: ${l.h1}`);
  assert.deepEqual(l.outside, [], `${name}: controls outside the viewport`);
  mask(png, l.masks);
  golden(name, png);
}

for (const [w, h] of SIZES) {
  test(`login view at ${w}×${h}`, async () => {
    const c = await br.context({ viewport: { width: w, height: h } });
    const page = await c.newPage();
    await page.goto(`${srv.console}${CONSOLE}`);
    await page.getByLabel('Token').waitFor({ timeout: 10000 });
    await page.waitForLoadState('networkidle');
    await checkView(page, `login-${w}x${h}`, w, h);
    assert.deepEqual(await unnamed(page), []);
    await c.close();
  });
  test(`every signed-in view at ${w}×${h}`, async () => {
    const page = await ctx.newPage();
    await page.setViewportSize({ width: w, height: h });
    const failures = [];
    for (const [name, hash] of VIEWS()) {
      try {
        await page.goto(`${srv.console}${CONSOLE}#${hash}`);
        await page.locator('h1').first().waitFor({ timeout: 10000 });
        await page.waitForLoadState('networkidle');
        await page.waitForTimeout(300);
        await checkView(page, `${name}-${w}x${h}`, w, h);
        const un = await unnamed(page);
        assert.deepEqual(un, [], `${name}: controls without an accessible name`);
      } catch (e) {
        failures.push(`${name}: ${e.message.split('\n')[0]}`);
      }
    }
    await page.close();
    assert.deepEqual(failures, []);
  });
}

test('keyboard: the login form and the navigation are reachable with Tab', async () => {
  const c = await br.context();
  const page = await c.newPage();
  await page.goto(`${srv.console}${CONSOLE}`);
  await page.getByLabel('Token').waitFor({ timeout: 10000 });
  const focused = [];
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    focused.push(await page.evaluate(() => document.activeElement?.getAttribute('aria-label') ||
      document.activeElement?.labels?.[0]?.textContent || document.activeElement?.textContent || ''));
  }
  assert.ok(focused.some((t) => /Token/.test(t)), `Tab never reached the token field: ${focused}`);
  await page.getByLabel('Token').fill(ADMIN_TOKEN);
  await page.getByLabel('Token').press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10000 });
  await c.close();
});
