"""A real browser: a static page served from a second loopback origin uploads
a file to cairn with a presigned POST (FormData), writes another with a
presigned PUT that needs a CORS preflight, and reads both back with CORS
GETs, in headless Chromium (Debian's `chromium`), driven from the test.  The
page reports what it saw to its own origin, which the test waits for."""
import http.server
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from s3fixtures import s3, s3srv, unique  # noqa: F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def run_page(origin_srv, origin, cfg, *flags):
    """Serves the test page (PAGE with cfg) from origin_srv at origin and
    loads it in a headless Chromium with its own profile (extra flags
    appended) until the page reports to Origin.result, at most 90 s."""
    Origin.page = (PAGE % json.dumps(cfg)).encode()
    Origin.result = None
    Origin.done.clear()
    threading.Thread(target=origin_srv.serve_forever, daemon=True).start()
    profile = tempfile.mkdtemp(prefix="cn-chromium-")
    proc = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                             "--no-first-run", "--disable-extensions",
                             "--disable-background-networking", *flags,
                             "--user-data-dir=" + profile, origin + "/index.html"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert Origin.done.wait(90), "the page never reported"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        origin_srv.shutdown()
        shutil.rmtree(profile, ignore_errors=True)

PAGE = """<!doctype html><html><body><pre id="out">running</pre><script>
const cfg = %s;
async function run() {
  const res = {};
  try {
    const fd = new FormData();
    for (const [k, v] of Object.entries(cfg.post.fields)) fd.append(k, v);
    fd.append("file", new Blob([cfg.content], {type: "text/plain"}), "browser.txt");
    const p = await fetch(cfg.post.url, {method: "POST", body: fd});
    res.post_status = p.status;
    res.post_etag = p.headers.get("ETag");
    const g = await fetch(cfg.get_url);
    res.get_status = g.status;
    res.get_text = await g.text();
    const u = await fetch(cfg.put_url, {method: "PUT", body: cfg.content + " (put)",
                                        headers: {"Content-Type": "text/plain"}});
    res.put_status = u.status;
    res.put_etag = u.headers.get("ETag");
    const g2 = await fetch(cfg.get2_url);
    res.get2_text = await g2.text();
    try {
      await fetch(cfg.denied_url);
      res.denied = "readable";
    } catch (e) {
      res.denied = "blocked";
    }
  } catch (e) {
    res.error = String(e);
  }
  document.getElementById("out").textContent = JSON.stringify(res);
  await fetch("/result", {method: "POST", body: JSON.stringify(res)});
}
run();
</script></body></html>"""


class Origin(http.server.BaseHTTPRequestHandler):
    page = b""
    result = None
    done = threading.Event()

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        type(self).result = json.loads(self.rfile.read(n))
        type(self).done.set()
        self.send_response(204)
        self.end_headers()


@pytest.mark.skipif(not CHROMIUM, reason="Debian's chromium is not installed")
def test_browser_presigned_post_and_cors_get(s3srv, s3):
    b = unique("browser")
    s3.create_bucket(Bucket=b)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    origin = "http://127.0.0.1:%d" % srv.server_address[1]
    other_bucket = unique("nocorsb")
    s3.create_bucket(Bucket=other_bucket, ACL="public-read")
    s3.put_object(Bucket=other_bucket, Key="x", Body=b"x", ACL="public-read")
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": [origin], "AllowedMethods": ["GET", "PUT", "POST"],
        "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 60}]})
    content = "uploaded by a browser \u2713"
    post = s3.generate_presigned_post(b, "web/${filename}",
                                      Conditions=[["starts-with", "$key", "web/"],
                                                  ["content-length-range", 1, 4096]],
                                      ExpiresIn=300)
    cfg = {"post": post, "content": content,
           "get_url": s3.generate_presigned_url("get_object", Params={
               "Bucket": b, "Key": "web/browser.txt"}),
           "put_url": s3.generate_presigned_url("put_object", Params={
               "Bucket": b, "Key": "web/put.txt", "ContentType": "text/plain"}),
           "get2_url": s3.generate_presigned_url("get_object", Params={
               "Bucket": b, "Key": "web/put.txt"}),
           # A bucket without CORS rules: the browser must not let the page read it.
           "denied_url": "%s/%s/x" % (s3srv.endpoint, other_bucket)}
    run_page(srv, origin, cfg)
    res = Origin.result
    assert "error" not in res, res
    assert res["post_status"] == 204, res
    assert res["post_etag"] and res["post_etag"].startswith('"'), res
    assert res["get_status"] == 200 and res["get_text"] == content, res
    assert res["put_status"] == 200 and res["put_etag"], res
    assert res["get2_text"] == content + " (put)", res
    assert res["denied"] == "blocked", res
    body = s3.get_object(Bucket=b, Key="web/browser.txt")["Body"].read()
    assert body.decode() == content
