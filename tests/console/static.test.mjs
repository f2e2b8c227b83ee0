// Static checks of the console's sources (no browser, no server): the web
// sources under src/console/web never build markup from strings or evaluate
// code, carry no inline script or style, and stay within the 150 KiB budget.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './harness.mjs';

const WEB = path.join(ROOT, 'src', 'console', 'web');
const BUDGET = 150 * 1024;
const BANNED = [/innerHTML/, /outerHTML/, /insertAdjacentHTML/, /document\.write/, /\beval\s*\(/,
  /new\s+Function\b/];

function files(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else out.push(p);
  }
  return out;
}

test('the web sources exist: index.html, app.css, js/app.js, js/dom.js, js/api.js', () => {
  for (const f of ['index.html', 'app.css', 'js/app.js', 'js/dom.js', 'js/api.js'])
    assert.ok(fs.existsSync(path.join(WEB, f)), `${f} is missing under src/console/web`);
});

test('no innerHTML, outerHTML, insertAdjacentHTML, document.write, eval( or new Function', () => {
  const hits = [];
  for (const f of files(WEB)) {
    const text = fs.readFileSync(f, 'utf8');
    text.split('\n').forEach((line, i) => {
      for (const re of BANNED) if (re.test(line)) hits.push(`${path.relative(ROOT, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(hits, []);
});

test('no inline script, inline style or style= attribute in the HTML', () => {
  for (const f of files(WEB).filter((p) => p.endsWith('.html'))) {
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
      assert.match(m[1], /\bsrc=/, `${f}: a <script> without src`);
      assert.equal(m[2].trim(), '', `${f}: inline script`);
    }
    assert.doesNotMatch(text, /<style\b/i, `${f}: a <style> element`);
    assert.doesNotMatch(text, /\sstyle\s*=/i, `${f}: a style= attribute`);
    assert.doesNotMatch(text, /\son[a-z]+\s*=/i, `${f}: an inline event handler`);
  }
});

test('the console fits the 150 KiB budget (uncompressed)', () => {
  const total = files(WEB).reduce((n, f) => n + fs.statSync(f).size, 0);
  assert.ok(total > 0, 'no web sources');
  assert.ok(total <= BUDGET, `src/console/web holds ${total} bytes, over ${BUDGET}`);
});
