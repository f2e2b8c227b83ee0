// Buckets through the console: a name checked as typed, create (the bucket
// exists on S3 afterwards), the list with object counts, delete only after an
// in-page confirmation ("Keep" keeps it), refused with BucketNotEmpty while
// objects remain, delete of an empty one; a bucket's configurations (visibility,
// lifecycle, CORS, object lock) saved through its page, the server's errors shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createBucket, go, putKeys, s3, signedInSuite, until,
} from './harness.mjs';

let srv, page;
signedInSuite((s) => { ({ srv, page } = s); });

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

test('configuration: visibility, a lifecycle rule and a CORS rule saved; the server\'s error for a bad one shown',
  async () => {
    await createBucket(srv.http, 'configured');
    const s3text = async (query) => {
      const r = await s3(srv.http, 'GET', 'configured', '', { query });
      return r.status === 200 ? r.text() : '';
    };
    await go(page, srv.console, '/buckets/configured');
    const pub = page.getByLabel('Public', { exact: true });
    await pub.waitFor({ timeout: 5000 });
    assert.equal(await pub.isChecked(), false);
    await pub.check();
    await until(async () => (await s3text({ acl: '' })).includes('AllUsers'), 5000, 'the public-read ACL');
    await page.getByText('Visibility: public').waitFor({ timeout: 5000 });

    // A lifecycle rule from the template, listed after the save and stored for S3.
    await page.getByRole('table', { name: 'Lifecycle rules' }).getByText('No rules.').waitFor({ timeout: 5000 });
    await page.getByRole('button', { name: 'Add lifecycle rule' }).click();
    await page.getByRole('button', { name: 'Save lifecycle' }).click();
    await page.getByRole('table', { name: 'Lifecycle rules' }).getByText('expire-tmp').waitFor({ timeout: 5000 });
    assert.match(await s3text({ lifecycle: '' }), /<ID>expire-tmp<\/ID>.*<Days>30<\/Days>/s);
    // Valid JSON the server refuses: its code and reason shown, the stored rules kept.
    const lc = page.getByLabel('Lifecycle configuration (JSON)');
    await lc.fill(JSON.stringify({ Rules: [{ ID: 'bad', Status: 'Enabled', Filter: { Prefix: '' },
      Expiration: { Days: 0 } }] }));
    await page.getByRole('button', { name: 'Save lifecycle' }).click();
    await page.getByText(/InvalidArgument: .*Days/).first().waitFor({ timeout: 5000 });
    assert.match(await s3text({ lifecycle: '' }), /expire-tmp/);

    // A CORS rule typed in, then one with a method S3 refuses.
    const cors = page.getByLabel('CORS configuration (JSON)');
    await cors.fill(JSON.stringify({ CORSRules: [{ AllowedOrigins: ['https://app.example'],
      AllowedMethods: ['GET'], MaxAgeSeconds: 60 }] }));
    await page.getByRole('button', { name: 'Save CORS' }).click();
    await page.getByRole('table', { name: 'CORS rules' }).getByText('https://app.example').waitFor({ timeout: 5000 });
    assert.match(await s3text({ cors: '' }), /<AllowedOrigin>https:\/\/app\.example<\/AllowedOrigin>/);
    await cors.fill(JSON.stringify({ CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['PATCH'] }] }));
    await page.getByRole('button', { name: 'Save CORS' }).click();
    await page.getByText(/InvalidRequest: .*PATCH/).first().waitFor({ timeout: 5000 });
    assert.match(await s3text({ cors: '' }), /app\.example/);
    await page.getByText('not enabled').first().waitFor({ timeout: 5000 });
  });

test('a bucket created with object lock shows its default retention form', async () => {
  await go(page, srv.console, '/buckets', 'Buckets');
  await page.getByLabel('Bucket name').fill('locked-one');
  await page.getByLabel(/Object lock/).check();
  await page.getByRole('button', { name: 'Create bucket' }).click();
  await page.getByRole('table').getByText('locked-one', { exact: true }).first().waitFor({ timeout: 5000 });
  await go(page, srv.console, '/buckets/locked-one');
  await page.getByLabel('Default retention').selectOption('GOVERNANCE');
  await page.getByLabel('Period').fill('0');
  await page.getByRole('button', { name: 'Save retention' }).click();
  await page.getByText(/InvalidRetentionPeriod/).first().waitFor({ timeout: 5000 });
  await page.getByLabel('Period').fill('3');
  await page.getByRole('button', { name: 'Save retention' }).click();
  await until(async () => /<Mode>GOVERNANCE<\/Mode><Days>3<\/Days>/.test(
    (await s3(srv.http, 'GET', 'locked-one', '', { query: { 'object-lock': '' } })).text()), 5000,
  'the default retention stored');
});
