"""The web console's data and admin API against a real cairnd
(docs/console.md): buckets, object listing pages, details and DeleteObjects,
presigned GET / PUT / part URLs that the S3 face verifies, multipart through
the API, a Scribe repository's log, change, tree and file bytes, namespaces
and grants, the metrics ring, tokens and the admin gate, and a bucket policy
that binds the console exactly as it binds S3.  Every call signs in through
POST session and sends the guard headers a browser would."""
import concurrent.futures
import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from cairnutil import cairn_at
from conftest import ADMIN_TOKEN, metrics_text

API = "/_cairn/console/api/"


class Api:
    """A signed-in console session on one listener: JSON in, JSON out."""

    def __init__(self, addr, token=ADMIN_TOKEN):
        self.host, self.port = addr
        self.origin = "http://%s:%d" % (self.host, self.port)
        self.cookie = None
        st, hd, doc = self.call("POST", "session", {"token": token})
        assert st == 200, (st, doc)
        m = re.match(r"cairn_session=([0-9a-f]{64});", hd["Set-Cookie"])
        assert m, hd["Set-Cookie"]
        self.cookie = m.group(1)
        self.session = doc

    def raw(self, method, path, doc=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        h = {}
        if method not in ("GET", "HEAD"):
            h = {"X-Cairn-Console": "1", "Origin": self.origin}
        if doc is not None:
            h["Content-Type"] = "application/json"
        if self.cookie:
            h["Cookie"] = "cairn_session=" + self.cookie
        try:
            c.request(method, API + path, body=None if doc is None else json.dumps(doc).encode(),
                      headers=h)
            r = c.getresponse()
            return r.status, r.headers, r.read()
        finally:
            c.close()

    def call(self, method, path, doc=None):
        st, hd, body = self.raw(method, path, doc)
        return st, hd, (json.loads(body) if body else None)

    def ok(self, method, path, doc=None, status=200):
        st, _, out = self.call(method, path, doc)
        assert st == status, (method, path, st, out)
        return out

    def url(self, rel):
        """A presigned link as the browser resolves it against the page."""
        return rel if rel.startswith("http") else self.origin + rel


def q(s):
    return urllib.parse.quote(s, safe="")


def s3_client(addr, token=ADMIN_TOKEN):
    key, secret = token.split(":", 1)
    return boto3.client("s3", endpoint_url="http://%s:%d" % addr, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 0}, signature_version="s3v4"))


def fetch(url, method="GET", data=None):
    """A plain request with no cookie and no credential: (status, headers, body)."""
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture
def node(server_factory):
    srv = server_factory(args=["--jay", "off", "--scribe", "127.0.0.1:0", "--http",
                               "127.0.0.1:0"], wait_for=("http", "scribe"),
                         env={"CAIRN_CONSOLE_METRICS_MS": "200"})
    return srv


def test_buckets_create_list_delete(node):
    api = Api(node.addrs["http"])
    assert api.ok("POST", "buckets", {"name": "photos"}, 201) == {"name": "photos"}
    names = [b["name"] for b in api.ok("GET", "buckets")["buckets"]]
    assert names == ["photos"]
    st, _, err = api.call("POST", "buckets", {"name": "photos"})
    assert (st, err["error"]) == (409, "BucketAlreadyOwnedByYou")
    st, _, err = api.call("POST", "buckets", {"name": "No_Such!"})
    assert (st, err["error"]) == (400, "InvalidBucketName")
    info = api.ok("GET", "buckets/photos")
    assert info["name"] == "photos" and info["versioning"] == "Off"
    assert info["policy"] is None and info["public"] is False
    assert (info["objects"], info["bytes"]) == (0, 0)
    s3_client(node.addrs["http"]).put_object(Bucket="photos", Key="a.jpg", Body=b"xyz")
    listed = api.ok("GET", "buckets")["buckets"][0]
    assert (listed["name"], listed["objects"], listed["bytes"]) == ("photos", 1, 3)
    st, _, err = api.call("DELETE", "buckets/photos")
    assert (st, err["error"]) == (409, "BucketNotEmpty")
    out = api.ok("POST", "buckets/photos/delete", {"keys": ["a.jpg"]})
    assert out == {"deleted": ["a.jpg"], "errors": []}
    assert api.raw("DELETE", "buckets/photos")[0] == 204
    st, _, err = api.call("GET", "buckets/photos")
    assert (st, err["error"]) == (404, "NoSuchBucket")
    assert api.ok("GET", "buckets")["buckets"] == []


def test_listing_2500_keys_by_delimiter_and_pages(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "many"}, 201)
    keys = ["p%d/k%04d" % (i % 5, i) for i in range(2450)] + ["top%02d" % i for i in range(50)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket="many", Key=k, Body=k.encode()), keys))
    usage = api.ok("GET", "buckets/many")
    assert (usage["objects"], usage["bytes"]) == (2500, sum(len(k) for k in keys))
    root = api.ok("GET", "buckets/many/objects?delimiter=/")
    assert root["prefixes"] == ["p%d/" % i for i in range(5)]
    assert [o["key"] for o in root["objects"]] == sorted(k for k in keys if "/" not in k)
    assert root["next"] is None
    seen, token, pages = [], None, 0
    while True:
        path = "buckets/many/objects?prefix=p3/&delimiter=/&max=200"
        page = api.ok("GET", path + ("&token=" + q(token) if token else ""))
        assert page["prefixes"] == [] and len(page["objects"]) <= 200
        seen += [o["key"] for o in page["objects"]]
        pages += 1
        token = page["next"]
        if token is None:
            break
    assert seen == sorted(k for k in keys if k.startswith("p3/")) and pages == 3
    everything, token = [], None
    while True:
        page = api.ok("GET", "buckets/many/objects?max=1000" +
                      ("&token=" + q(token) if token else ""))
        everything += [o["key"] for o in page["objects"]]
        token = page["next"]
        if token is None:
            break
    assert everything == sorted(keys)
    st, _, err = api.call("GET", "buckets/many/objects?token=zz")
    assert st == 400 and err["error"] == "BadRequest"
    st, _, err = api.call("GET", "buckets/many/objects?max=1001")
    assert st == 400


def test_object_details_and_delete_many(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "docs"}, 201)
    key = "r\u00e9ports/<img src=x onerror=alert(1)>.txt"
    s3.put_object(Bucket="docs", Key=key, Body=b"hello details", ContentType="text/plain",
                  Metadata={"owner": "ops"})
    d = api.ok("GET", "buckets/docs/object?key=" + q(key))
    assert d["key"] == key and d["size"] == 13 and d["type"] == "text/plain"
    assert d["etag"] == hashlib.md5(b"hello details").hexdigest()
    assert d["metadata"] == {"owner": "ops"} and d["versions"] == []
    assert re.match(r"^\d{4}-\d\d-\d\dT", d["modified"])
    st, _, err = api.call("GET", "buckets/docs/object?key=missing")
    assert (st, err["error"]) == (404, "NoSuchKey")
    for i in range(3):
        s3.put_object(Bucket="docs", Key="d%d" % i, Body=b"z")
    out = api.ok("POST", "buckets/docs/delete", {"keys": ["d0", "d1", "d2", "never"]})
    assert sorted(out["deleted"]) == ["d0", "d1", "d2", "never"] and out["errors"] == []
    left = [o["Key"] for o in s3.list_objects_v2(Bucket="docs").get("Contents", [])]
    assert left == [key]
    st, _, _ = api.call("POST", "buckets/docs/delete", {"keys": []})
    assert st == 400


def test_versioning_lists_versions(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "vers"}, 201)
    assert api.raw("PUT", "buckets/vers/versioning", {"status": "Enabled"})[0] == 204
    assert api.ok("GET", "buckets/vers")["versioning"] == "Enabled"
    s3.put_object(Bucket="vers", Key="k", Body=b"one")
    s3.put_object(Bucket="vers", Key="k", Body=b"two!")
    v = api.ok("GET", "buckets/vers/object?key=k")["versions"]
    assert [x["size"] for x in v] == [4, 3] and [x["latest"] for x in v] == [True, False]


def test_presigned_get_works_without_cookie_and_tampering_fails(node):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "share"}, 201)
    body = os.urandom(5000)
    s3_client(node.addrs["http"]).put_object(Bucket="share", Key="dir/file name.bin", Body=body)
    out = api.ok("POST", "buckets/share/presign",
                 {"method": "GET", "key": "dir/file name.bin", "expires": 60})
    assert out["url"].startswith("/share/dir/file%20name.bin?")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(out["url"]).query)
    assert query["X-Amz-Expires"] == ["60"]
    assert query["response-content-disposition"] == ["attachment"]
    assert query["X-Amz-Credential"][0].startswith("cnadmin/")
    assert "test-admin-secret" not in out["url"]
    t = time.mktime(time.strptime(out["expires_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(t - (time.time() + 60)) < 5
    st, hd, got = fetch(api.url(out["url"]))
    assert st == 200 and got == body
    assert hd["Content-Disposition"] == "attachment"
    sig = query["X-Amz-Signature"][0]
    bad = out["url"].replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
    assert fetch(api.url(bad))[0] == 403
    longer = out["url"].replace("X-Amz-Expires=60", "X-Amz-Expires=600")
    assert fetch(api.url(longer))[0] == 403
    for bad_req in ({"method": "GET", "key": "k", "expires": 59},
                    {"method": "GET", "key": "k", "expires": 604801},
                    {"method": "DELETE", "key": "k", "expires": 60}):
        st, _, err = api.call("POST", "buckets/share/presign", bad_req)
        assert st == 400, bad_req


def test_presigned_put_upload(node):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "drop"}, 201)
    out = api.ok("POST", "buckets/drop/presign", {"method": "PUT", "key": "up/x.bin",
                                                  "expires": 300})
    body = os.urandom(100000)
    st, _, _ = fetch(api.url(out["url"]), method="PUT", data=body)
    assert st == 200
    got = s3_client(node.addrs["http"]).get_object(Bucket="drop", Key="up/x.bin")["Body"].read()
    assert got == body


def test_multipart_through_minted_part_urls(node):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "big"}, 201)
    up = api.ok("POST", "buckets/big/uploads", {"key": "movie.bin", "type": "video/mp4"})
    parts = [os.urandom(5 << 20), os.urandom(12345)]
    done = []
    for n, data in enumerate(parts, 1):
        out = api.ok("POST", "buckets/big/presign", {"method": "PUT", "key": "movie.bin",
                                                     "expires": 600, "part": n,
                                                     "upload_id": up["upload_id"]})
        st, hd, _ = fetch(api.url(out["url"]), method="PUT", data=data)
        assert st == 200
        done.append({"part": n, "etag": hd["ETag"].strip('"')})
    res = api.ok("POST", "buckets/big/uploads/complete",
                 {"key": "movie.bin", "upload_id": up["upload_id"], "parts": done})
    assert res["etag"].endswith("-2")
    obj = s3_client(node.addrs["http"]).get_object(Bucket="big", Key="movie.bin")
    assert obj["Body"].read() == b"".join(parts) and obj["ContentType"] == "video/mp4"
    other = api.ok("POST", "buckets/big/uploads", {"key": "gone.bin"})
    abort = {"key": "gone.bin", "upload_id": other["upload_id"]}
    assert api.raw("POST", "buckets/big/uploads/abort", abort)[0] == 204
    st, _, err = api.call("POST", "buckets/big/uploads/abort", abort)
    assert (st, err["error"]) == (404, "NoSuchUpload")
    listed = s3_client(node.addrs["http"]).list_multipart_uploads(Bucket="big")
    assert listed.get("Uploads", []) == []


def console_multipart(api, bucket, key, parts):
    """Uploads parts through minted part URLs; answers the completion's
    (status, document)."""
    up = api.ok("POST", "buckets/%s/uploads" % bucket, {"key": key})
    done = []
    for n, data in enumerate(parts, 1):
        out = api.ok("POST", "buckets/%s/presign" % bucket,
                     {"method": "PUT", "key": key, "expires": 600, "part": n,
                      "upload_id": up["upload_id"]})
        st, hd, _ = fetch(api.url(out["url"]), method="PUT", data=data)
        assert st == 200
        done.append({"part": n, "etag": hd["ETag"].strip('"')})
    return api.call("POST", "buckets/%s/uploads/complete" % bucket,
                    {"key": key, "upload_id": up["upload_id"], "parts": done})


def test_multipart_complete_checks_the_minimum_part_size(node):
    """As S3's CompleteMultipartUpload: every part but the last holds 5 MiB,
    else 400 EntityTooSmall and nothing is stored; the last may be smaller."""
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "tiny"}, 201)
    small = (5 << 20) - 1
    st, _, err = console_multipart(api, "tiny", "k", [os.urandom(small), os.urandom(10)])
    assert (st, err["error"]) == (400, "EntityTooSmall"), (st, err)
    s3 = s3_client(node.addrs["http"])
    assert s3.list_objects_v2(Bucket="tiny").get("KeyCount") == 0
    # the same parts through S3 itself: the same answer
    up = s3.create_multipart_upload(Bucket="tiny", Key="s3")["UploadId"]
    etags = [s3.upload_part(Bucket="tiny", Key="s3", UploadId=up, PartNumber=n,
                            Body=os.urandom(small if n == 1 else 10))["ETag"] for n in (1, 2)]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="tiny", Key="s3", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": n, "ETag": t} for n, t in zip((1, 2), etags)]})
    assert e.value.response["Error"]["Code"] == "EntityTooSmall"
    # one small part alone is the last part: allowed
    st, _, res = console_multipart(api, "tiny", "one", [os.urandom(10)])
    assert st == 200 and res["size"] == 10


def test_console_minimum_follows_the_s3_face(server_factory):
    """CAIRN_S3_MIN_PART_SIZE lowers the minimum for the console as for S3."""
    srv = server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                         wait_for=("http",), env={"CAIRN_S3_MIN_PART_SIZE": "4"})
    api = Api(srv.addrs["http"])
    api.ok("POST", "buckets", {"name": "low"}, 201)
    st, _, res = console_multipart(api, "low", "k", [b"12345", b"6"])
    assert st == 200 and res["size"] == 6, res
    st, _, err = console_multipart(api, "low", "k2", [b"123", b"6"])
    assert (st, err["error"]) == (400, "EntityTooSmall"), (st, err)


def scribe_ep(node):
    host, port = node.addrs["scribe"]
    return "%s:%d" % (host, port)


def test_repository_log_change_tree_and_file(node, tmp_path):
    ep = scribe_ep(node)
    ws = str(tmp_path / "ws")
    cairn_at(ep, "repo", "create", "art")
    cairn_at(ep, "repo", "clone", "art", ws)
    big = os.urandom(300000)
    os.makedirs(os.path.join(ws, "tex", "hi"))
    with open(os.path.join(ws, "tex", "hi", "rock.bin"), "wb") as f:
        f.write(big)
    with open(os.path.join(ws, "README.md"), "w") as f:
        f.write("first\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "add the rock")
    with open(os.path.join(ws, "README.md"), "a") as f:
        f.write("second\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "edit readme")
    api = Api(node.addrs["http"])
    repos = api.ok("GET", "repos")["repos"]
    assert [(r["name"], r["head"]) for r in repos] == [("art", 2)] and repos[0]["bytes"] > 300000
    info = api.ok("GET", "repos/art")
    assert info["head"] == 2 and [b["name"] for b in info["branches"]] == ["main"]
    log = api.ok("GET", "repos/art/changes")
    assert [(c["id"], c["description"]) for c in log["changes"]] == [
        (2, "edit readme"), (1, "add the rock")]
    assert log["next"] is None
    page = api.ok("GET", "repos/art/changes?max=1")
    assert [c["id"] for c in page["changes"]] == [2] and page["next"] == 2
    page = api.ok("GET", "repos/art/changes?max=1&before=2")
    assert [c["id"] for c in page["changes"]] == [1]
    only = api.ok("GET", "repos/art/changes?path=tex")
    assert [c["id"] for c in only["changes"]] == [1]
    ch = api.ok("GET", "repos/art/changes/1")
    assert ch["description"] == "add the rock" and ch["journal"] == []
    assert sorted((p["path"], p["action"]) for p in ch["paths"]) == [
        ("README.md", "add"), ("tex/hi/rock.bin", "add")]
    assert api.ok("GET", "repos/art/changes/2")["paths"] == [
        {"path": "README.md", "action": "modify"}]
    assert api.call("GET", "repos/art/changes/9")[0] == 404
    root = api.ok("GET", "repos/art/tree")
    assert [(e["name"], e["type"]) for e in root["entries"]] == [("README.md", "file"),
                                                                  ("tex", "dir")]
    sub = api.ok("GET", "repos/art/tree?change=1&path=tex/hi")["entries"]
    assert sub[0]["name"] == "rock.bin" and sub[0]["size"] == 300000
    assert re.match(r"^[0-9a-f]{64}$", sub[0]["manifest"])
    st, hd, got = api.raw("GET", "repos/art/file?change=1&path=tex/hi/rock.bin")
    assert st == 200 and got == big
    assert hd["Content-Disposition"].startswith("attachment")
    assert "sandbox" in hd["Content-Security-Policy"]
    assert hd["X-Content-Type-Options"] == "nosniff"
    st, _, old = api.raw("GET", "repos/art/file?change=1&path=README.md")
    assert (st, old) == (200, b"first\n")
    assert api.raw("GET", "repos/art/file?path=README.md")[2] == b"first\nsecond\n"
    assert api.call("GET", "repos/art/file?path=nope")[0] == 404
    assert api.ok("GET", "repos/art/locks")["locks"] == []
    assert len(api.ok("GET", "repos/art/workspaces")["workspaces"]) == 1
    assert api.call("GET", "repos/none")[0] == 404


def new_token(api, account, perms):
    api.call("POST", "accounts", {"name": account})
    out = api.ok("POST", "tokens", {"account": account, "perms": perms}, 201)
    return out["token"]


def test_namespaces_and_grants(node):
    admin = Api(node.addrs["http"])
    tok = new_token(admin, "alice", ["blobs:read"])
    assert admin.raw("POST", "namespaces/team/x/grants",
                     {"account": "alice", "perms": ["read"]})[0] == 204
    grants = admin.ok("GET", "namespaces/team/x/grants")["grants"]
    assert grants == [{"account": "alice", "perms": ["read"]}]
    alice = Api(node.addrs["http"], tok)
    ns = alice.ok("GET", "namespaces")["namespaces"]
    assert ns == [{"name": "team/x", "members": 0, "bytes": 0}]
    digest = "ab" * 32
    stat = alice.ok("GET", "namespaces/team/x/blobs/" + digest)
    assert stat == {"digest": digest, "present": False}
    assert alice.call("GET", "namespaces/team/x/grants")[0] == 403
    assert admin.raw("DELETE", "namespaces/team/x/grants/alice")[0] == 204
    assert admin.ok("GET", "namespaces/team/x/grants")["grants"] == []
    st, _, err = alice.call("GET", "namespaces/team/x/blobs/" + digest)
    assert (st, err["error"]) == (403, "AccessDenied")


def test_metrics_has_points_after_load(node):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "load"}, 201)
    s3 = s3_client(node.addrs["http"])
    for i in range(20):
        s3.put_object(Bucket="load", Key="k%d" % i, Body=os.urandom(1000))
    for i in range(5):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="load", Key="missing%d" % i)
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    deadline = time.time() + 20
    while True:
        doc = api.ok("GET", "metrics")
        per = [s["requests"].get("http", {}) for s in doc["samples"]]
        ok, missing = (sum(h.get(c, 0) for h in per) for c in ("2xx", "4xx"))
        busy = [s for s, h in zip(doc["samples"], per) if sum(h.values()) and s["bytes_in"]]
        blobs = sum(x["store_blobs"] for x in doc["samples"])
        if (busy and blobs >= 20 and ok >= 20 and missing >= 5) or time.time() > deadline:
            break
        time.sleep(0.3)
    assert doc["interval_s"] == 0.2 and doc["node"]
    assert busy, doc["samples"][-3:]
    # The http face (S3 and this API) by status class, never with a total
    # beside them: the view sums a face's members.
    assert ok >= 20 and missing >= 5, per
    assert all(set(h) <= {"1xx", "2xx", "3xx", "4xx", "5xx"} for h in per), per
    s = busy[-1]
    assert s["p50_ms"] is not None and s["p99_ms"] >= s["p50_ms"] >= 0
    assert s["store_bytes"] >= 0 and s["connections"] >= 0 and isinstance(s["t"], int)
    for x in doc["samples"]:
        assert set(x["queues"]) == {"handshake", "query", "storage"}, x["queues"]
        assert all(isinstance(v, int) and v >= 0 for v in x["queues"].values()), x["queues"]
    assert blobs >= 20
    assert len(doc["samples"]) <= 720
    # The same classes in Prometheus form, at /_cairn/metrics.
    text = metrics_text(node.addrs["http"])
    got = dict(re.findall(r'^cairn_requests_total\{face="http",status="(\dxx)"\} (\d+)$', text,
                          re.M))
    assert int(got["2xx"]) >= 20 and int(got["4xx"]) >= 5, got


def test_admin_tokens_shown_once_and_revoked(node):
    admin = Api(node.addrs["http"])
    assert admin.ok("POST", "accounts", {"name": "bob"}, 201) == {"name": "bob"}
    out = admin.ok("POST", "tokens", {"account": "bob", "perms": ["object:get",
                                                                "bucket:list"]}, 201)
    tid, secret = out["token"].split(":", 1)
    assert out["id"] == tid and secret
    st, _, raw = admin.raw("GET", "tokens")
    assert st == 200 and secret.encode() not in raw
    mine = [t for t in json.loads(raw)["tokens"] if t["id"] == tid]
    assert mine == [{"id": tid, "account": "bob", "perms": ["bucket:list", "object:get"],
                     "created": mine[0]["created"], "expires": None, "revoked": False}]
    assert secret.encode() not in admin.raw("GET", "tokens?account=bob")[2]
    bob = Api(node.addrs["http"], out["token"])
    assert bob.session["account"] == "bob"
    sessions = admin.ok("GET", "sessions")["sessions"]
    assert any(s["token_id"] == tid for s in sessions)
    assert admin.raw("DELETE", "tokens/" + tid)[0] == 204
    assert bob.call("GET", "buckets")[0] == 401
    revoked = [t for t in admin.ok("GET", "tokens?account=bob")["tokens"] if t["id"] == tid]
    assert revoked[0]["revoked"] is True
    c = Api.__new__(Api)
    c.host, c.port, c.origin, c.cookie = bob.host, bob.port, bob.origin, None
    assert c.call("POST", "session", {"token": out["token"]})[0] == 401
    assert admin.call("DELETE", "tokens/nope")[0] == 404
    assert admin.raw("PUT", "accounts/bob/disabled", {"disabled": True})[0] == 204
    assert [a["disabled"] for a in admin.ok("GET", "accounts")["accounts"]
            if a["name"] == "bob"] == [True]


def test_non_admin_gets_403_on_admin_calls(node):
    admin = Api(node.addrs["http"])
    user = Api(node.addrs["http"], new_token(admin, "dave", ["object:get"]))
    assert user.session["admin"] is False
    for method, path, doc in (("GET", "accounts", None), ("POST", "accounts", {"name": "x"}),
                              ("GET", "tokens", None),
                              ("POST", "tokens", {"account": "dave", "perms": ["admin"]}),
                              ("DELETE", "tokens/cnadmin", None), ("GET", "sessions", None),
                              ("PUT", "accounts/admin/disabled", {"disabled": True}),
                              ("POST", "namespaces/ns/grants", {"account": "dave",
                                                                "perms": ["read"]})):
        st, _, err = user.call(method, path, doc)
        assert (st, err["error"]) == (403, "Forbidden"), (method, path, st, err)
    assert admin.ok("GET", "accounts")["accounts"][0]["disabled"] is False
    assert admin.call("GET", "tokens")[0] == 200


def test_bucket_policy_denies_the_console_as_it_denies_s3(node):
    admin = Api(node.addrs["http"])
    tok = new_token(admin, "carol", ["bucket:create", "bucket:list", "object:get", "object:put",
                                     "object:list", "object:delete"])
    carol = Api(node.addrs["http"], tok)
    s3 = s3_client(node.addrs["http"], tok)
    carol.ok("POST", "buckets", {"name": "vault"}, 201)
    s3.put_object(Bucket="vault", Key="secret/plan.txt", Body=b"classified")
    s3.put_object(Bucket="vault", Key="open/readme.txt", Body=b"hello")
    st, _, err = carol.call("PUT", "buckets/vault/policy", {"policy": {"Version": "2012-10-17"}})
    assert (st, err["error"]) == (400, "MalformedPolicy") and err["message"]
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": {"AWS": "carol"},
        "Action": ["s3:GetObject", "s3:DeleteObject"],
        "Resource": "arn:aws:s3:::vault/secret/*"}]}
    assert carol.raw("PUT", "buckets/vault/policy", {"policy": policy})[0] == 204
    assert carol.ok("GET", "buckets/vault")["policy"]["Statement"][0]["Effect"] == "Deny"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="vault", Key="secret/plan.txt")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    st, _, err = carol.call("GET", "buckets/vault/object?key=secret/plan.txt")
    assert (st, err["error"]) == (403, "AccessDenied")
    assert carol.ok("GET", "buckets/vault/object?key=open/readme.txt")["size"] == 5
    link = carol.ok("POST", "buckets/vault/presign", {"method": "GET", "key": "secret/plan.txt",
                                                      "expires": 60})
    assert fetch(carol.url(link["url"]))[0] == 403
    out = carol.ok("POST", "buckets/vault/delete", {"keys": ["secret/plan.txt"]})
    assert out["deleted"] == [] and [(x["key"], x["code"]) for x in out["errors"]] == [
        ("secret/plan.txt", "AccessDenied")]
    assert carol.raw("DELETE", "buckets/vault/policy")[0] == 204
    assert carol.ok("GET", "buckets/vault/object?key=secret/plan.txt")["size"] == 10
    assert fetch(carol.url(link["url"]))[2] == b"classified"


def test_presign_from_a_console_origin_of_its_own_points_at_the_http_listener(server_factory):
    srv = server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0",
                               "--console", "127.0.0.1:0"], wait_for=("http", "console"))
    api = Api(srv.addrs["console"])
    api.ok("POST", "buckets", {"name": "far"}, 201)
    s3_client(srv.addrs["http"]).put_object(Bucket="far", Key="k", Body=b"from afar")
    out = api.ok("POST", "buckets/far/presign", {"method": "GET", "key": "k", "expires": 120})
    assert out["url"].startswith("http://%s:%d/far/k?" % srv.addrs["http"])
    assert fetch(out["url"])[2] == b"from afar"
