// Objects through the console against the real S3 data: 2,500 keys across
// prefixes browsed as folders, paged by continuation token and searched by
// prefix; a 40 MiB upload through the picker (multipart through presigned PUT
// URLs) whose progress rises to 100 % and whose download has the same
// SHA-256; a cancelled upload that leaves no object and no open upload; a
// cancelled single-PUT re-upload that leaves the object already under its
// key (a cancel never deletes) and says "already uploaded" once the PUT's
// status arrived; the checksum an S3 multipart upload was made with shown
// as "SHA256 value";
// delete of several keys and of one object, each only once confirmed in the
// page; files dropped on the list (a DataTransfer of Files) stored
// byte-equal; a presigned link that works in a fresh cookie-less
// context and fails after its expiry.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  confirmIfAsked, createBucket, fileSha256, go, listKeys, openUploads, pageApi, pickAndUpload,
  progressSamples, putKeys, randomFile, s3, signedInSuite, sleep, until, watchPartPuts, watchProgress,
} from './harness.mjs';

const MiB = 1 << 20;
let srv, br, ctx, page, putMs;
const pad = (n) => String(n).padStart(4, '0');
const keys = [
  ...Array.from({ length: 1200 }, (_, i) => `a/k${pad(i)}`),
  ...Array.from({ length: 1000 }, (_, i) => `b/k${pad(i)}`),
  ...Array.from({ length: 300 }, (_, i) => `c/deep/k${pad(i)}`),
];

signedInSuite(async (s) => {
  ({ srv, br, ctx, page } = s);
  await createBucket(srv.http, 'many');
  await createBucket(srv.http, 'uploads');
  const t0 = Date.now();
  await putKeys(srv.http, 'many', keys);
  putMs = Date.now() - t0;
});

const tableText = async () => (await page.getByRole('table').allInnerTexts()).join('\n');
const numbers = (text) => [...text.matchAll(/k(\d{4})/g)].map((m) => Number(m[1]));

test('2,500 keys: folders by delimiter, paging through a folder, prefix search', async (t) => {
  t.diagnostic(`2,500 keys written through S3 in ${putMs} ms`);
  assert.equal((await listKeys(srv.http, 'many')).length, 2500);
  await go(page, srv.console, '/buckets/many');
  await until(async () => /\ba\//.test(await tableText()) && /\bb\//.test(await tableText()) &&
    /\bc\//.test(await tableText()), 5000, 'the folders a/, b/, c/ listed');
  assert.deepEqual(numbers(await tableText()), [], 'keys inside folders listed at the top level');
  await page.getByRole('link', { name: /^a\/?$/ }).first().click();
  await until(async () => numbers(await tableText()).length > 0, 5000, 'keys of a/');
  const seen = new Set();
  const pages = [];
  for (let i = 0; i < 20; i++) {
    const text = await tableText();
    const ns = numbers(text);
    assert.ok(ns.length > 0 && ns.length <= 1000, `a page of ${ns.length} keys`);
    pages.push(ns);
    ns.forEach((n) => seen.add(n));
    const next = page.getByRole('button', { name: 'Next page' });
    if (!(await next.count()) || !(await next.isEnabled())) break;
    await next.click();
    await until(async () => (await tableText()) !== text, 5000, 'the next page');
  }
  assert.ok(pages.length >= 2, `all of a/ on ${pages.length} page(s)`);
  assert.equal(seen.size, 1200, `saw ${seen.size} distinct keys of 1,200`);
  assert.deepEqual([...seen].sort((x, y) => x - y), Array.from({ length: 1200 }, (_, i) => i));
  const before = await tableText();
  await page.getByRole('button', { name: 'Previous page' }).click();
  await until(async () => (await tableText()) !== before, 5000, 'the previous page');
  assert.deepEqual(numbers(await tableText()), pages[pages.length - 2]);
  // Prefix search from the bucket's top.
  await go(page, srv.console, '/buckets/many');
  await page.getByLabel('Prefix').fill('b/k01');
  await page.getByLabel('Prefix').press('Enter');
  await until(async () => {
    const ns = numbers(await tableText());
    return ns.length === 100 && ns.every((n) => n >= 100 && n < 200);
  }, 5000, 'exactly b/k0100..b/k0199 after the prefix search');
});

test('a 40 MiB upload through the picker: 8 MiB parts, at most 4 in flight, progress rises to 100 %, ' +
  'the download has the same SHA-256', async (t) => {
  const file = randomFile('big.bin', 40 * MiB, 40);
  const sum = fileSha256(file);
  await go(page, srv.console, '/buckets/uploads');
  await watchProgress(page);
  const puts = watchPartPuts(page);
  const t0 = Date.now();
  await pickAndUpload(page, file);
  await until(async () => (await s3(srv.http, 'HEAD', 'uploads', 'big.bin')).status === 200, 180000,
    'big.bin stored');
  await until(async () => (await progressSamples(page)).at(-1) === 1, 10000, 'progress at 100 %');
  t.diagnostic(`40 MiB uploaded through the console in ${Date.now() - t0} ms`);
  puts.stop();
  // Multipart through presigned part PUTs: five parts of 8 MiB, the page
  // keeping between 2 and 4 of them in flight at once.
  const parts = await puts.parts();
  assert.deepEqual([...parts.keys()].sort((a, b) => a - b), [1, 2, 3, 4, 5], 'the part numbers PUT');
  for (const [n, size] of parts) assert.equal(size, 8 * MiB, `part ${n}: ${size} bytes`);
  t.diagnostic(`part PUTs in flight at most: ${puts.maxInFlight()}`);
  assert.ok(puts.maxInFlight() >= 2 && puts.maxInFlight() <= 4, `parts in flight: ${puts.maxInFlight()}`);
  const p = await progressSamples(page);
  for (let i = 1; i < p.length; i++) assert.ok(p[i] >= p[i - 1], `progress went back: ${p}`);
  assert.ok(p.some((f) => f > 0 && f < 1), `no progress between 0 and 100 %: ${p}`);
  assert.deepEqual(await openUploads(srv.http, 'uploads'), [], 'a multipart upload left open');
  const got = await s3(srv.http, 'GET', 'uploads', 'big.bin');
  assert.equal(got.body.length, 40 * MiB);
  // The console's download of it.
  await go(page, srv.console, `/buckets/uploads/object?key=big.bin`);
  const dl = page.waitForEvent('download', { timeout: 60000 });
  await page.getByRole('button', { name: 'Download' }).or(page.getByRole('link', { name: 'Download' })).first().click();
  const d = await dl;
  assert.equal(fileSha256(await d.path()), sum);
  fs.rmSync(path.dirname(file), { recursive: true });
});

/** Slows the page's uploads to 2 MiB/s (so a cancel lands mid-transfer);
 *  resolves the CDP session, on which the caller lifts it and detaches. */
async function throttleUploads() {
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1,
    uploadThroughput: 2 * MiB });
  return cdp;
}

test('a cancelled upload leaves no object and no open multipart upload', async () => {
  const file = randomFile('cancel.bin', 40 * MiB, 41);
  const cdp = await throttleUploads();
  try {
    await go(page, srv.console, '/buckets/uploads');
    await watchProgress(page);
    await pickAndUpload(page, file);
    await until(async () => (await openUploads(srv.http, 'uploads')).includes('cancel.bin'), 20000,
      'the multipart upload of cancel.bin opened');
    await page.getByRole('button', { name: 'Cancel upload' }).first().click();
    await confirmIfAsked(page);
    await until(async () => (await openUploads(srv.http, 'uploads')).length === 0, 10000, 'the upload aborted');
    await sleep(3000); // parts still in flight must not bring it back
    assert.deepEqual(await openUploads(srv.http, 'uploads'), []);
    assert.equal((await s3(srv.http, 'HEAD', 'uploads', 'cancel.bin')).status, 404);
  } finally {
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1,
      uploadThroughput: -1 });
    await cdp.detach();
    fs.rmSync(path.dirname(file), { recursive: true });
  }
});

// Replaces the page's XMLHttpRequest with one whose PUTs report every byte sent and then wait:
// mode 'hang' never answers (the server never committed), mode 'ok' has its 200 status in hand
// and fires load when window.__cnFireLoad() is called.
async function stubXhr(mode) {
  await page.evaluate((m) => {
    window.__cnRealXhr = window.__cnRealXhr || window.XMLHttpRequest;
    window.__cnSent = false;
    window.XMLHttpRequest = class extends EventTarget {
      constructor() { super(); this.upload = new EventTarget(); this.readyState = 1; this.status = 0; this.responseText = ''; }
      open() {}
      setRequestHeader() {}
      getResponseHeader() { return null; }
      send(blob) {
        setTimeout(() => {
          this.upload.dispatchEvent(new ProgressEvent('progress', { lengthComputable: true, loaded: blob.size, total: blob.size }));
          if (m === 'ok') {
            this.readyState = 2;
            this.status = 200;
            window.__cnFireLoad = () => { this.readyState = 4; this.dispatchEvent(new Event('load')); };
          }
          window.__cnSent = true;
        }, 0);
      }
      abort() { if (this.readyState < 4) { this.readyState = 4; this.dispatchEvent(new Event('abort')); } }
    };
  }, mode);
}
const unstubXhr = () => page.evaluate(() => { if (window.__cnRealXhr) window.XMLHttpRequest = window.__cnRealXhr; });
const uploadStatus = (name) => page.locator('li.upload').filter({ hasText: name }).first().locator('.status').innerText();

test('a cancelled single-PUT re-upload never deletes the object already under the key', async () => {
  const ORIGINAL = Buffer.from('the object that was here first\n');
  await putKeys(srv.http, 'uploads', ['keep.bin'], () => ORIGINAL);
  const file = randomFile('keep.bin', 1 * MiB, 43);
  try {
    // Every byte sent, no answer yet: the PUT may never commit, so nothing may be deleted.
    await go(page, srv.console, '/buckets/uploads');
    await stubXhr('hang');
    await pickAndUpload(page, file);
    await until(() => page.evaluate(() => window.__cnSent), 10000, 'every byte of the PUT reported sent');
    await page.getByRole('button', { name: 'Cancel upload' }).first().click();
    await until(async () => (await uploadStatus('keep.bin')) === 'Cancelled', 10000, 'the upload shown as cancelled');
    await unstubXhr();
    await sleep(500);
    let got = await s3(srv.http, 'GET', 'uploads', 'keep.bin');
    assert.equal(got.status, 200, 'the existing object was deleted by the cancel');
    assert.ok(got.body.equals(ORIGINAL), 'the existing object changed');
    // A real PUT cancelled half-way through (throttled upload) leaves it too.
    const big = randomFile('keep.bin', 12 * MiB, 44);
    const cdp = await throttleUploads();
    try {
      await go(page, srv.console, '/buckets/uploads');
      await watchProgress(page);
      await pickAndUpload(page, big);
      await until(async () => (await progressSamples(page)).some((f) => f > 0.05), 20000, 'the PUT under way');
      await page.getByRole('button', { name: 'Cancel upload' }).first().click();
      await until(async () => (await uploadStatus('keep.bin')) === 'Cancelled', 10000, 'the real PUT cancelled');
    } finally {
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1,
        uploadThroughput: -1 });
      await cdp.detach();
      fs.rmSync(path.dirname(big), { recursive: true });
    }
    await sleep(1000);
    got = await s3(srv.http, 'GET', 'uploads', 'keep.bin');
    assert.equal(got.status, 200);
    assert.ok(got.body.equals(ORIGINAL), 'the existing object changed after a cancelled real PUT');
    // The PUT's 200 already in hand: cancel says so instead of pretending.
    await go(page, srv.console, '/buckets/uploads');
    await stubXhr('ok');
    await pickAndUpload(page, file);
    await until(() => page.evaluate(() => window.__cnSent), 10000, 'the PUT answered 200');
    await page.getByRole('button', { name: 'Cancel upload' }).first().click();
    await page.evaluate(() => window.__cnFireLoad());
    await until(async () => /already uploaded/i.test(await uploadStatus('keep.bin')), 10000,
      'the row says the upload was already done');
  } finally {
    await unstubXhr().catch(() => {});
    fs.rmSync(path.dirname(file), { recursive: true });
  }
});

test('object details show the checksum of an upload made with one as "ALGORITHM value"', async () => {
  // The object's own checksum is what an S3 client asked for (x-amz-checksum-algorithm on
  // CreateMultipartUpload, x-amz-checksum-sha256 on each part): S3's composite SHA-256.
  const body = crypto.createHash('sha512').update('checksummed').digest();
  const partSum = crypto.createHash('sha256').update(body).digest();
  const init = await s3(srv.http, 'POST', 'uploads', 'cks.bin', { query: { uploads: '' },
    headers: { 'x-amz-checksum-algorithm': 'SHA256' } });
  assert.equal(init.status, 200, init.text());
  const id = xmlValue(init.text(), 'UploadId');
  const part = await s3(srv.http, 'PUT', 'uploads', 'cks.bin', { query: { partNumber: 1, uploadId: id }, body,
    headers: { 'x-amz-checksum-sha256': partSum.toString('base64') } });
  assert.equal(part.status, 200, part.text());
  const xml = '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>' +
    `<ETag>${part.headers.etag}</ETag><ChecksumSHA256>${partSum.toString('base64')}</ChecksumSHA256>` +
    '</Part></CompleteMultipartUpload>';
  const done = await s3(srv.http, 'POST', 'uploads', 'cks.bin', { query: { uploadId: id }, body: Buffer.from(xml) });
  assert.equal(done.status, 200, done.text());
  const composite = `${crypto.createHash('sha256').update(partSum).digest('base64')}-1`;
  assert.equal(xmlValue(done.text(), 'ChecksumSHA256'), composite);
  await go(page, srv.console, '/buckets/uploads/object?key=cks.bin');
  const dd = page.locator('dl.facts dt', { hasText: /^Checksum$/ }).locator('xpath=following-sibling::dd[1]');
  await until(async () => (await dd.count()) > 0, 5000, 'the details shown');
  assert.equal((await dd.innerText()).trim(), `SHA256 ${composite}`);
  assert.doesNotMatch(await page.locator('dl.facts').innerText(), /\[object Object\]/);
});

const xmlValue = (xml, tag) => (xml.match(new RegExp(`<${tag}>([^<]*)</${tag}>`)) || [])[1];

test('delete selected objects', async () => {
  await putKeys(srv.http, 'uploads', ['del/x1', 'del/x2', 'del/x3']);
  await go(page, srv.console, '/buckets/uploads?prefix=del%2F');
  for (const k of ['x1', 'x2']) {
    const row = page.getByRole('row').filter({ has: page.getByText(new RegExp(`^(del/)?${k}$`)) });
    await row.first().getByRole('checkbox').check();
  }
  await page.getByRole('button', { name: 'Delete selected' }).click();
  const confirm = page.getByRole('button', { name: 'Confirm delete' });
  await page.getByRole('group', { name: 'Delete 2 selected objects?' }).waitFor({ timeout: 2000 });
  await page.waitForTimeout(300);
  assert.equal((await listKeys(srv.http, 'uploads', 'del/')).length, 3, 'deleted before the confirmation');
  await confirm.click();
  await until(async () => (await listKeys(srv.http, 'uploads', 'del/')).join() === 'del/x3', 5000,
    'del/x1 and del/x2 deleted, del/x3 kept');
  await until(async () => !/x1|x2/.test(await tableText()), 5000, 'the list updated');
  // One object from its own page: "Keep" keeps it, "Confirm delete" deletes it.
  await go(page, srv.console, '/buckets/uploads/object?key=del%2Fx3');
  await page.getByRole('button', { name: 'Delete object' }).click();
  await page.getByRole('button', { name: 'Keep' }).click();
  await page.getByRole('button', { name: 'Delete object' }).click();
  await page.waitForTimeout(300);
  assert.equal((await s3(srv.http, 'HEAD', 'uploads', 'del/x3')).status, 200, 'deleted before the confirmation');
  await confirm.click();
  await until(async () => (await s3(srv.http, 'HEAD', 'uploads', 'del/x3')).status === 404, 5000, 'del/x3 deleted');
  // The page then goes back to the object's folder: let it land before the
  // next test navigates, or that navigation would be overtaken.
  await page.waitForFunction(() => decodeURIComponent(location.hash).includes('prefix=del/'), null,
    { timeout: 10000 });
});

test('drag and drop: files dropped on the list are uploaded byte-equal', async () => {
  await go(page, srv.console, '/buckets/uploads?prefix=dnd%2F');
  // go() returns on the old view's heading; drop only once the list is dnd/'s.
  await page.getByText('They go to uploads/dnd/.').waitFor({ timeout: 10000 });
  // Every byte value, then pseudo-random bytes: 300 KiB and an empty file.
  const rnd = randomFile('r', 300 * 1024, 7);
  const big = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    crypto.createHash('sha512').update('dnd').digest(), fs.readFileSync(rnd)]);
  fs.rmSync(path.dirname(rnd), { recursive: true });
  const files = [['dropped.bin', big], ['empty.txt', Buffer.alloc(0)]];
  const dt = await page.evaluateHandle((list) => {
    const d = new DataTransfer();
    for (const [name, b64] of list) {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      d.items.add(new File([bytes], name, { type: 'application/octet-stream' }));
    }
    return d;
  }, files.map(([n, b]) => [n, b.toString('base64')]));
  const target = page.getByRole('region', { name: 'Objects' });
  await target.dispatchEvent('dragenter', { dataTransfer: dt });
  await target.dispatchEvent('dragover', { dataTransfer: dt });
  assert.match(await target.getAttribute('class'), /\bdropping\b/, 'no drop highlight while dragging');
  await target.dispatchEvent('drop', { dataTransfer: dt });
  assert.doesNotMatch(await target.getAttribute('class'), /\bdropping\b/, 'the highlight stays after the drop');
  for (const [name, body] of files) {
    await until(async () => (await s3(srv.http, 'HEAD', 'uploads', `dnd/${name}`)).status === 200, 30000,
      `dnd/${name} stored`);
    const got = await s3(srv.http, 'GET', 'uploads', `dnd/${name}`);
    assert.equal(got.status, 200);
    assert.ok(got.body.equals(body), `dnd/${name}: ${got.body.length} bytes differ from the ${body.length} dropped`);
  }
  await until(async () => /dropped\.bin/.test(await tableText()), 5000, 'the list shows the dropped file');
  assert.deepEqual(await openUploads(srv.http, 'uploads'), []);
});

let link; // {url, expiresAt}: the presigned link, checked again after its expiry
const LINK_BODY = 'a presigned link\n';

test('a presigned GET link works in a fresh context without cookies', async () => {
  await putKeys(srv.http, 'uploads', ['link.txt'], () => Buffer.from(LINK_BODY));
  await go(page, srv.console, '/buckets/uploads/object?key=link.txt');
  const exp = page.getByLabel('Link expiry');
  if ((await exp.evaluate((e) => e.tagName)) === 'SELECT') {
    const values = await exp.locator('option').evaluateAll((os) => os.map((o) => o.value));
    await exp.selectOption(values[0]);
  } else {
    const min = await exp.getAttribute('min');
    await exp.fill(min || '60');
  }
  await page.getByRole('button', { name: 'Create link' }).click();
  assert.ok(await page.getByRole('button', { name: 'Copy link' }).count() > 0, 'no "Copy link" button');
  const url = await until(() => page.evaluate(() => {
    for (const el of document.querySelectorAll('input, textarea, a, output, code, span, div, p, td')) {
      const v = el.value || el.getAttribute('href') || (el.children.length ? '' : el.textContent);
      if (v && v.includes('X-Amz-Signature=')) return v.trim();
    }
    return null;
  }), 5000, 'the link shown');
  const abs = url.startsWith('/') ? srv.http + url : url;
  const u = new URL(abs);
  assert.equal(u.origin, srv.http);
  assert.equal(u.searchParams.get('response-content-disposition')?.startsWith('attachment'), true);
  const id = u.searchParams.get('X-Amz-Credential').split('/')[0];
  assert.equal(id, 'cnadmin', 'not signed with the session token');
  const fresh = await br.context();
  assert.deepEqual(await fresh.cookies(), []);
  const p2 = await fresh.newPage();
  const dl = p2.waitForEvent('download', { timeout: 20000 });
  p2.goto(abs).catch(() => {});
  const d = await dl;
  assert.equal(fs.readFileSync(await d.path(), 'utf8'), LINK_BODY);
  await fresh.close();
  const date = u.searchParams.get('X-Amz-Date');
  const start = Date.parse(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:` +
    `${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
  link = { url: abs, expiresAt: start + Number(u.searchParams.get('X-Amz-Expires')) * 1000 };
  if (Number(u.searchParams.get('X-Amz-Expires')) > 120) {
    // The view's shortest expiry is longer than the test waits: check the
    // expiry on a 60 s link minted through the same API instead.
    const r = await pageApi(page, 'POST', 'buckets/uploads/presign', { method: 'GET', key: 'link.txt', expires: 60 });
    assert.equal(r.status, 200, r.body);
    const v = JSON.parse(r.body).url;
    link = { url: v.startsWith('/') ? srv.http + v : v, expiresAt: Date.now() + 60000 };
  }
});

test('the presigned link fails after its expiry', async () => {
  assert.ok(link, 'no link was made');
  const wait = link.expiresAt + 2000 - Date.now();
  if (wait > 0) await sleep(wait);
  const fresh = await br.context();
  const p2 = await fresh.newPage();
  let downloaded = false;
  p2.on('download', () => { downloaded = true; });
  const r = await p2.goto(link.url).catch(() => null);
  assert.ok(r, 'the expired link started a download');
  assert.equal(r.status(), 403);
  assert.equal(downloaded, false);
  await fresh.close();
});
