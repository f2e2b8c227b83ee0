// api.js — the console's only door to /_cairn/console/api/. Sends the guard headers the server
// requires on mutations and the session cookie (same-origin); never puts a credential in a URL
// and never stores one anywhere.

const BASE = '/_cairn/console/api/';

/** An API failure: HTTP status, the server's error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** apiUrl(path): the absolute path of an API resource (path relative to the API base). */
export function apiUrl(path) {
  return BASE + String(path).replace(/^\/+/, '');
}

/** api(method, path, body): calls the API; resolves to the parsed JSON answer (null for 204 or
 *  an empty body); rejects with ApiError. A 401 also dispatches `cairn:logout` on window. */
export async function api(method, path, body) {
  const headers = { 'X-Cairn-Console': '1', Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined && body !== null) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(apiUrl(path), init);
  } catch (e) {
    throw new ApiError(0, 'NetworkError', 'The server could not be reached.');
  }
  const text = res.status === 204 ? '' : await res.text();
  let doc = null;
  if (text) {
    try { doc = JSON.parse(text); } catch (e) { doc = null; }
  }
  if (!res.ok) {
    const code = (doc && doc.error) || `HTTP${res.status}`;
    const msg = (doc && doc.message) || res.statusText || code;
    if (res.status === 401 && path !== 'session') {
      window.dispatchEvent(new CustomEvent('cairn:logout'));
    }
    throw new ApiError(res.status, code, msg);
  }
  return doc;
}
