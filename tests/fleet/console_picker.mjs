// The metrics view's node picker in a real Chromium, against a fleet that
// tests/fleet/test_fleet_console_metrics.py started (n0 and n1 advertise
// their HTTP listeners, n2 none): signed in on n0 (argv[2], its origin),
// the picker lists the three nodes with n0 as "this node"; choosing n1
// shows n1's charts, still n1's after a refresh; choosing n2 shows the
// server's NodeUnavailable; back on n0, n0's own.  Exits non-zero on any
// failure, CSP violation or dialog.
import assert from 'node:assert/strict';
import { Browser, go, login, until } from '../console/harness.mjs';

const base = process.argv[2];
const br = await new Browser().launch();
try {
  const page = await (await br.context()).newPage();
  await login(page, base);
  await go(page, base, '/metrics', 'Metrics');
  const main = () => page.locator('main').innerText();
  const sel = page.getByLabel('Node');
  await sel.waitFor({ timeout: 10000 });
  assert.deepEqual(await sel.locator('option').allInnerTexts(), ['n0 (this node)', 'n1', 'n2']);
  await sel.selectOption('n1');
  await until(async () => (await main()).includes('Node n1') && (await page.locator('svg').count()) > 0,
    20000, "n1's charts");
  const refreshed = (await main()).match(/updated (.*)/)?.[1];
  await until(async () => (await main()).match(/updated (.*)/)?.[1] !== refreshed, 20000, 'a refresh');
  assert.ok((await main()).includes('Node n1'), 'the refresh went back to another node');
  await sel.selectOption('n2');
  await until(async () => /advertises no/.test(await main()), 10000, "n2's NodeUnavailable");
  await sel.selectOption('n0');
  await until(async () => (await main()).includes('Node n0') && (await page.locator('svg').count()) > 0,
    10000, "n0's own charts");
} finally {
  await br.close();
}
await br.assertClean();
