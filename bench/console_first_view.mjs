// console_first_view.mjs — how soon the web console is usable: the time to the login form
// being interactive (its token input in the page, its submit handler attached) and to the
// buckets view after signing in, cold (a fresh browser context: empty cache, no cookie) and
// warm (a reload: cached assets, and for the buckets view a live session), each the median
// of N runs, with the same page load's navigation timing. A benchmark, not a test: it prints
// figures and asserts nothing about them.
//
// usage: CAIRN_BUILD=BUILD node bench/console_first_view.mjs [--runs N] [--quick]
// Prints lines "name value unit" (bench.sh's format). Starts one cairnd from BUILD on
// loopback (tests/console/harness.mjs: temp data dir, test admin token) and Debian's chromium
// through playwright-core; both are stopped at the end. Times are taken inside the page
// (performance.now(), from the navigation's start, or from the sign-in submit) by an observer
// added through the DevTools protocol, so the browser driver's round trips are not counted.
import {
  ADMIN_TOKEN, Browser, CONSOLE, createBucket, putKeys, startServer,
} from '../tests/console/harness.mjs';
import fs from 'node:fs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i < 0 ? dflt : Number(argv[i + 1]);
};
const RUNS = argv.includes('--quick') ? 5 : opt('--runs', 20);
const BUCKETS = 20;

// Runs in the page before its scripts: marks when the login input and the buckets table
// first exist (performance.now(), ms since the navigation started) and when the sign-in
// form is submitted.
function marker() {
  const t = (window.__cnT = {});
  const seen = () => {
    if (t.login === undefined && document.getElementById('login-token')) t.login = performance.now();
    const table = document.querySelector('table.buckets');
    if (t.buckets === undefined && table && table.querySelector('tbody tr')) t.buckets = performance.now();
  };
  new MutationObserver(seen).observe(document, { subtree: true, childList: true });
  document.addEventListener('submit', () => { t.submit = performance.now(); }, true);
}

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Waits for window.__cnT[key] in page; returns it. */
async function mark(page, key) {
  await page.waitForFunction((k) => window.__cnT && window.__cnT[k] !== undefined, key, { timeout: 30000 });
  return page.evaluate((k) => window.__cnT[k], key);
}

/** The navigation timing of page's current document (ms from its start). */
function navTiming(page) {
  return page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource');
    return {
      ttfb: n.responseStart, domInteractive: n.domInteractive, dcl: n.domContentLoadedEventEnd,
      load: n.loadEventEnd, resources: res.length,
      transfer: n.transferSize + res.reduce((s, r) => s + r.transferSize, 0),
      decoded: n.decodedBodySize + res.reduce((s, r) => s + r.decodedBodySize, 0),
    };
  });
}

async function main() {
  const srv = await startServer();
  const br = await new Browser().launch();
  const out = [];
  const say = (name, v, unit) => {
    const line = `${name} ${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
    out.push(line);
    console.log(line);
  };
  try {
    for (let i = 0; i < BUCKETS; i++) await createBucket(srv.http, `bench-${String(i).padStart(2, '0')}`);
    await putKeys(srv.http, 'bench-00', ['a', 'b', 'c']);
    const url = srv.console + CONSOLE;
    const r = { coldLogin: [], warmLogin: [], coldBuckets: [], warmBuckets: [], coldNav: [], warmNav: [] };
    for (let i = 0; i < RUNS; i++) {
      const ctx = await br.browser.newContext({ viewport: { width: 1280, height: 800 } });
      await ctx.addInitScript(marker);
      const page = await ctx.newPage();
      // Cold: empty cache, no cookie.
      await page.goto(url);
      r.coldLogin.push(await mark(page, 'login'));
      await page.waitForLoadState('load');
      r.coldNav.push(await navTiming(page));
      // Warm login form: the same context reloaded (assets cached, still no session).
      await page.reload();
      r.warmLogin.push(await mark(page, 'login'));
      await page.waitForLoadState('load');
      r.warmNav.push(await navTiming(page));
      // Sign in: submit to the buckets table (this context's first bucket list).
      await page.locator('#login-token').fill(ADMIN_TOKEN);
      await page.locator('#login-token').press('Enter');
      const b = await mark(page, 'buckets');
      r.coldBuckets.push(b - (await mark(page, 'submit')));
      // Warm buckets: a reload with the session: navigation start to the table.
      await page.reload();
      r.warmBuckets.push(await mark(page, 'buckets'));
      await ctx.close();
    }
    say('console_runs', RUNS, 'runs');
    say('console_load_avg', Number(fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]), 'load');
    say('console_login_interactive_cold', median(r.coldLogin), 'ms');
    say('console_login_interactive_warm', median(r.warmLogin), 'ms');
    say('console_buckets_after_signin', median(r.coldBuckets), 'ms');
    say('console_buckets_reload_warm', median(r.warmBuckets), 'ms');
    say('console_login_interactive_cold_max', Math.max(...r.coldLogin), 'ms');
    for (const [k, nav] of [['cold', r.coldNav], ['warm', r.warmNav]]) {
      say(`console_nav_${k}_ttfb`, median(nav.map((n) => n.ttfb)), 'ms');
      say(`console_nav_${k}_dom_interactive`, median(nav.map((n) => n.domInteractive)), 'ms');
      say(`console_nav_${k}_dcl`, median(nav.map((n) => n.dcl)), 'ms');
      say(`console_nav_${k}_load`, median(nav.map((n) => n.load)), 'ms');
      say(`console_nav_${k}_resources`, median(nav.map((n) => n.resources)), 'files');
      say(`console_nav_${k}_transfer`, median(nav.map((n) => n.transfer)) / 1024, 'KiB');
    }
    say('console_nav_decoded', median(r.coldNav.map((n) => n.decoded)) / 1024, 'KiB');
  } finally {
    await br.close();
    await srv.stop();
  }
}

main().catch((e) => {
  console.error(`console_first_view: ${e.stack || e}`);
  process.exit(1);
});
