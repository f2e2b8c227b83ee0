// Buckets through the console: a name checked as typed, create (the bucket
// exists on S3 afterwards), the list with object counts, delete only after an
// in-page confirmation ("Keep" keeps it), refused with BucketNotEmpty while
// objects remain, delete of an empty one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  Browser, createBucket, go, login, putKeys, s3, startServer, until,
} from './harness.mjs';

let srv, br, page;
before(async () => {
  srv = await startServer();
  br = await new Browser().launch();
  page = await (await br.context()).newPage();
  await login(page, srv.console);
});
after(async () => {
  await br?.close();
  await srv?.stop();
  await br?.assertClean();
});

/** Presses "Delete bucket" for b on its own page (the objects view); the
 *  bucket must still be there until "Confirm delete" is pressed too. */
async function deleteBucket(b) {
  await go(page, srv.console, `/buckets/${b}`);
  await page.getByRole('button', { name: 'Delete bucket' }).click();
  const confirm = page.getByRole('button', { name: 'Confirm delete' });
  await confirm.waitFor({ timeout: 2000 });
  await page.waitForTimeout(300);
  assert.equal(await exists(b), true, `${b} deleted before the confirmation`);
  await confirm.click();
}

const exists = async (b) => (await s3(srv.http, 'HEAD', b)).status === 200;

test('delete asks in the page first; "Keep" keeps the bucket', async () => {
  await createBucket(srv.http, 'kept');
  await go(page, srv.console, '/buckets/kept');
  await page.getByRole('button', { name: 'Delete bucket' }).click();
  await page.getByRole('group', { name: /Delete bucket kept/ }).waitFor({ timeout: 2000 });
  await page.getByRole('button', { name: 'Keep' }).click();
  await page.getByRole('button', { name: 'Delete bucket' }).waitFor({ timeout: 2000 });
  assert.equal(await page.getByRole('button', { name: 'Confirm delete' }).count(), 0);
  await page.waitForTimeout(300);
  assert.equal(await exists('kept'), true);
});

test('an invalid bucket name is refused before and by the server', async () => {
  await go(page, srv.console, '/buckets', 'Buckets');
  await page.getByLabel('Bucket name').fill('Bad_Name!');
  const create = page.getByRole('button', { name: 'Create bucket' });
  if (await create.isEnabled()) await create.click();
  await page.waitForTimeout(500);
  assert.equal(await exists('Bad_Name!'), false);
  const shown = await page.locator('[role=alert], [aria-invalid=true], :invalid').count();
  assert.ok(shown > 0, 'nothing tells the user the name is invalid');
});

test('create a bucket through the form', async () => {
  await go(page, srv.console, '/buckets', 'Buckets');
  await page.getByLabel('Bucket name').fill('made-in-console');
  await page.getByRole('button', { name: 'Create bucket' }).click();
  await page.getByRole('table').getByText('made-in-console', { exact: true }).first().waitFor({ timeout: 5000 });
  assert.equal(await exists('made-in-console'), true);
});

test('the list shows each bucket with its object count', async () => {
  await createBucket(srv.http, 'counted');
  await putKeys(srv.http, 'counted', ['a', 'b', 'c/d']);
  await go(page, srv.console, '/buckets', 'Buckets');
  const row = page.getByRole('row').filter({ hasText: 'counted' });
  await row.first().waitFor();
  assert.match(await row.first().innerText(), /(^|\D)3(\D|$)/, 'the object count 3 is not in the row');
  assert.ok(await page.locator('table caption').count() > 0, 'the table has no caption');
});

test('delete: BucketNotEmpty shown while objects remain, then deleted when empty', async () => {
  await createBucket(srv.http, 'doomed');
  await putKeys(srv.http, 'doomed', ['only-key']);
  await deleteBucket('doomed');
  await page.getByText(/BucketNotEmpty|not empty/i).first().waitFor({ timeout: 5000 });
  assert.equal(await exists('doomed'), true);
  assert.equal((await s3(srv.http, 'DELETE', 'doomed', 'only-key')).status, 204);
  await deleteBucket('doomed');
  await until(async () => !(await exists('doomed')), 5000, 'bucket doomed deleted');
  await go(page, srv.console, '/buckets', 'Buckets');
  await page.getByRole('row').filter({ hasText: 'made-in-console' }).first().waitFor();
  assert.equal(await page.getByRole('row').filter({ hasText: 'doomed' }).count(), 0);
});

test('policy: the server\'s MalformedPolicy is shown; a valid policy is saved and read back through S3', async () => {
  await createBucket(srv.http, 'governed');
  await go(page, srv.console, '/buckets/governed');
  const area = page.getByLabel('Policy', { exact: true });
  await area.waitFor({ timeout: 5000 });
  // Valid JSON that is not a valid policy: the server's error, shown.
  await area.fill(JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Maybe' }] }));
  await page.getByRole('button', { name: 'Save policy' }).click();
  await page.getByText(/MalformedPolicy/).first().waitFor({ timeout: 5000 });
  assert.equal((await s3(srv.http, 'GET', 'governed', '', { query: { policy: '' } })).status, 404);
  const policy = { Version: '2012-10-17', Statement: [{ Sid: 'ReadAll', Effect: 'Allow', Principal: '*',
    Action: 's3:GetObject', Resource: 'arn:aws:s3:::governed/*' }] };
  await area.fill(JSON.stringify(policy));
  await page.getByRole('button', { name: 'Save policy' }).click();
  await until(async () => (await s3(srv.http, 'GET', 'governed', '', { query: { policy: '' } })).status === 200,
    5000, 'the policy stored');
  const got = JSON.parse((await s3(srv.http, 'GET', 'governed', '', { query: { policy: '' } })).text());
  assert.equal(got.Statement[0].Sid, 'ReadAll');
  // Remove asks in the page first: "Keep" keeps the policy, "Confirm remove" removes it.
  const stored = async () => (await s3(srv.http, 'GET', 'governed', '', { query: { policy: '' } })).status;
  await page.getByRole('button', { name: 'Remove policy' }).click();
  await page.getByRole('group', { name: /Remove the policy of governed/ }).waitFor({ timeout: 2000 });
  await page.waitForTimeout(300);
  assert.equal(await stored(), 200, 'the policy removed before the confirmation');
  await page.getByRole('button', { name: 'Keep' }).click();
  await page.getByRole('button', { name: 'Remove policy' }).waitFor({ timeout: 2000 });
  await page.waitForTimeout(300);
  assert.equal(await stored(), 200, 'Keep removed the policy');
  await page.getByRole('button', { name: 'Remove policy' }).click();
  await page.getByRole('button', { name: 'Confirm remove' }).click();
  await until(async () => (await stored()) === 404, 5000, 'the policy removed');
});
