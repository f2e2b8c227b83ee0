// upload.js — uploads one file into a bucket through presigned PUT URLs the API mints, so the
// token's secret never reaches the browser: one PUT up to 16 MiB, else a multipart upload of
// 8 MiB parts, 4 in flight. Cancelling aborts every request and the multipart upload; it
// never deletes a key (an object already under it must survive a cancelled re-upload). Never
// touches the DOM.
import { api } from './api.js';

export const SINGLE_MAX = 16 * 1024 * 1024;
export const PART_SIZE = 8 * 1024 * 1024;
export const PARALLEL = 4;
const URL_TTL = 3600;
const TRIES = 3;

/** An upload that was cancelled (not a failure). */
export class Cancelled extends Error {
  constructor() { super('Upload cancelled'); this.name = 'Cancelled'; }
}

function s3Error(xhr) {
  const t = xhr.responseText || '';
  const code = (t.match(/<Code>([^<]*)<\/Code>/) || [])[1];
  const msg = (t.match(/<Message>([^<]*)<\/Message>/) || [])[1];
  const e = new Error(code ? `${code}: ${msg || ''}` : `HTTP ${xhr.status}`);
  e.status = xhr.status;
  return e;
}

/** PUTs blob to url; onProgress(bytesSent). Returns {promise → ETag, abort()}; track(xhr)
 *  lets the caller abort it. */
function put(url, blob, type, onProgress, track) {
  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    xhr.open('PUT', url);
    if (type) xhr.setRequestHeader('Content-Type', type);
    xhr.upload.addEventListener('progress', (e) => onProgress(e.loaded));
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(blob.size);
        resolve(xhr.getResponseHeader('ETag') || '');
      } else {
        reject(s3Error(xhr));
      }
    });
    xhr.addEventListener('error', () => reject(new Error('Network error during upload')));
    xhr.addEventListener('abort', () => reject(new Cancelled()));
    xhr.send(blob);
  });
  track(xhr, promise);
  return promise;
}

/**
 * startUpload(bucket, key, file, onProgress): begins uploading file as key; onProgress(sent,
 * total) is called as bytes go out. Returns {promise, cancel}: promise resolves when the object
 * exists and rejects with Cancelled after cancel() or an Error on failure. cancel() resolves to
 * 'uploaded' when the upload had already completed (the single PUT's status or the multipart
 * completion had arrived: the object is stored and promise resolves), else to 'cancelled' once
 * every request is aborted and any multipart upload aborted. It never deletes the key.
 */
export function startUpload(bucket, key, file, onProgress) {
  const b = encodeURIComponent(bucket);
  const type = file.type || 'application/octet-stream';
  const live = new Set();
  const st = { cancelled: false, stop: false, uploadId: null, putXhr: null };
  const track = (xhr, p) => { live.add(xhr); p.then(() => live.delete(xhr), () => live.delete(xhr)); };
  const mint = (extra) => api('POST', `buckets/${b}/presign`,
    { method: 'PUT', key, expires: URL_TTL, ...extra }).then((d) => d.url);
  const check = () => { if (st.cancelled || st.stop) throw new Cancelled(); };

  const single = async () => {
    const url = await mint({});
    check();
    await put(url, file, type, (n) => onProgress(n, file.size), (xhr, p) => {
      st.putXhr = xhr;
      track(xhr, p);
    });
  };

  const multipart = async () => {
    const doc = await api('POST', `buckets/${b}/uploads`, { key, type });
    st.uploadId = doc.upload_id;
    check();
    const count = Math.ceil(file.size / PART_SIZE);
    const sent = new Array(count).fill(0);
    const etags = new Array(count);
    const report = () => onProgress(sent.reduce((a, x) => a + x, 0), file.size);
    let next = 0;
    const one = async (i) => {
      const blob = file.slice(i * PART_SIZE, Math.min(file.size, (i + 1) * PART_SIZE));
      for (let attempt = 1; ; attempt++) {
        check();
        try {
          const url = await mint({ upload_id: st.uploadId, part: i + 1 });
          check();
          etags[i] = await put(url, blob, '', (n) => { sent[i] = n; report(); }, track);
          return;
        } catch (e) {
          if (e instanceof Cancelled || st.cancelled || st.stop || attempt >= TRIES) throw e;
          sent[i] = 0;
          report();
        }
      }
    };
    const worker = async () => {
      while (next < count) await one(next++);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count) }, worker));
    check();
    const parts = etags.map((etag, i) => ({ part: i + 1, etag }));
    await api('POST', `buckets/${b}/uploads/complete`, { key, upload_id: st.uploadId, parts });
    st.uploadId = null;
  };

  const abortServer = async () => {
    if (st.uploadId) {
      const id = st.uploadId;
      st.uploadId = null;
      try { await api('POST', `buckets/${b}/uploads/abort`, { key, upload_id: id }); } catch (e) { /* gone */ }
    }
  };

  let done = false;
  const promise = (file.size <= SINGLE_MAX ? single() : multipart()).then(() => { done = true; }, async (e) => {
    st.stop = true;
    for (const x of live) x.abort();
    await abortServer();
    throw st.cancelled ? new Cancelled() : e;
  });

  // The single PUT's 2xx status arrived: the server stored the object, aborting cannot undo it.
  const committed = () => {
    const x = st.putXhr;
    return !!x && x.readyState >= 2 && x.status >= 200 && x.status < 300;
  };
  const cancel = async () => {
    if (done || committed()) {
      await promise.catch(() => {});
      return 'uploaded';
    }
    if (st.cancelled) return 'cancelled';
    st.cancelled = true;
    for (const x of live) x.abort();
    await promise.catch(() => {});
    await abortServer();
    return done ? 'uploaded' : 'cancelled';
  };
  return { promise, cancel };
}
