"""Browser form uploads (POST object) through the real server: boto3's
presigned POST (SigV4), the older AWSAccessKeyId/signature form, anonymous
POST, success codes and redirects, ${filename}, each policy condition and its
failure, expiry, signature and key errors, metadata / ACL / checksum fields,
a malformed body, and a 100 MiB upload streamed with bounded server memory."""
import base64
import datetime
import hashlib
import hmac
import json
import threading
import time
import urllib.parse

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import Server, assert_no_sanitizer
from s3fixtures import (ADMIN_KEY, ADMIN_SECRET, REGION, S3Server, bucket, checksum_b64,  # noqa: F401
                        s3, s3_args, s3srv, unique)


def code_of(r):
    import re
    m = re.search(r"<Code>([^<]*)</Code>", r.text)
    return m.group(1) if m else None


def post(srv, b, fields, data=b"file-bytes", filename="up.txt", file_ct="text/plain",
         after=None):
    files = [(k, (None, v)) for k, v in fields.items()]
    files.append(("file", (filename, data, file_ct)))
    for k, v in (after or {}).items():
        files.append((k, (None, v)))
    return requests.post("%s/%s" % (srv.endpoint, b), files=files, allow_redirects=False)


def v4_fields(policy, key=ADMIN_KEY, secret=ADMIN_SECRET, date=None):
    """The SigV4 POST fields for a policy dict (conditions get the signing fields)."""
    now = date or datetime.datetime.utcnow()
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    cred = "%s/%s/%s/s3/aws4_request" % (key, amz_date[:8], REGION)
    policy = dict(policy)
    policy["conditions"] = list(policy["conditions"]) + [
        {"x-amz-algorithm": "AWS4-HMAC-SHA256"}, {"x-amz-credential": cred},
        {"x-amz-date": amz_date}]
    b64 = base64.b64encode(json.dumps(policy).encode()).decode()
    k = ("AWS4" + secret).encode()
    for part in (amz_date[:8], REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()
    return {"policy": b64, "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred,
            "x-amz-date": amz_date, "x-amz-signature": sig}


def expiry(seconds=300):
    t = datetime.datetime.utcnow() + datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def signed_post(srv, b, key, conditions, extra=None, **kw):
    fields = {"key": key}
    fields.update(extra or {})
    fields.update(v4_fields({"expiration": expiry(), "conditions": [{"bucket": b}] + conditions}))
    return post(srv, b, fields, **kw)


# ---- boto3's helper and the success codes -------------------------------------------

def test_boto3_presigned_post(s3srv, s3, bucket):
    p = s3.generate_presigned_post(bucket, "uploads/${filename}",
                                   Fields={"Content-Type": "text/plain"},
                                   Conditions=[["starts-with", "$key", "uploads/"],
                                               {"Content-Type": "text/plain"},
                                               ["content-length-range", 1, 1000]],
                                   ExpiresIn=300)
    assert "x-amz-signature" in p["fields"]
    files = [(k, (None, v)) for k, v in p["fields"].items()]
    files.append(("file", ("hello.txt", b"hello from a form", "text/plain")))
    r = requests.post(p["url"], files=files)
    assert r.status_code == 204, r.text
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(b"hello from a form").hexdigest()
    assert r.headers["Location"].endswith("/%s/uploads/hello.txt" % bucket)
    got = s3.get_object(Bucket=bucket, Key="uploads/hello.txt")
    assert got["Body"].read() == b"hello from a form"
    assert got["ContentType"] == "text/plain"


@pytest.mark.parametrize("status,want", [("200", 200), ("201", 201), ("204", 204),
                                         ("302", 204), ("junk", 204), (None, 204)])
def test_success_action_status(s3srv, s3, bucket, status, want):
    extra = {} if status is None else {"success_action_status": status}
    conds = [{"key": "st"}] + ([{"success_action_status": status}] if status else [])
    r = signed_post(s3srv, bucket, "st", conds, extra)
    assert r.status_code == want, r.text
    if want == 201:
        assert "<PostResponse>" in r.text and "<Key>st</Key>" in r.text
        assert "<Bucket>%s</Bucket>" % bucket in r.text
        assert "<ETag>&quot;%s&quot;</ETag>" % hashlib.md5(b"file-bytes").hexdigest() in r.text
    else:
        assert r.content == b""


@pytest.mark.parametrize("field", ["success_action_redirect", "redirect"])
def test_redirect(s3srv, s3, bucket, field):
    target = "http://127.0.0.1:9/done?x=1"
    r = signed_post(s3srv, bucket, "red ir", [{"key": "red ir"}, {field: target}],
                    {field: target})
    assert r.status_code == 303, r.text
    loc = urllib.parse.urlparse(r.headers["Location"])
    assert loc.netloc == "127.0.0.1:9" and loc.path == "/done"
    q = urllib.parse.parse_qs(loc.query)
    assert q["x"] == ["1"] and q["bucket"] == [bucket] and q["key"] == ["red ir"]
    assert q["etag"] == ['"%s"' % hashlib.md5(b"file-bytes").hexdigest()]
    # Not a URL: ignored, the default status answers.
    r = signed_post(s3srv, bucket, "k2", [{"key": "k2"}, {field: "nowhere"}], {field: "nowhere"})
    assert r.status_code == 204


def test_filename_substitution_and_fields(s3srv, s3, bucket):
    r = signed_post(s3srv, bucket, "dir/${filename}",
                    [["starts-with", "$key", "dir/"], ["starts-with", "$Content-Type", "image/"],
                     ["starts-with", "$x-amz-meta-tag", ""], {"acl": "public-read"},
                     ["eq", "$Cache-Control", "max-age=60"]],
                    {"Content-Type": "image/png", "x-amz-meta-Tag": "Blue", "acl": "public-read",
                     "Cache-Control": "max-age=60"},
                    filename="C:\\photos\\pic.png", data=b"\x89PNG...")
    assert r.status_code == 204, r.text
    h = s3.head_object(Bucket=bucket, Key="dir/pic.png")
    assert h["ContentType"] == "image/png" and h["Metadata"] == {"tag": "Blue"}
    assert h["CacheControl"] == "max-age=60"
    assert requests.get(s3srv.endpoint + "/%s/dir/pic.png" % bucket).content == b"\x89PNG..."
    # Fields after the file are ignored, as S3 ignores them.
    r = signed_post(s3srv, bucket, "late", [{"key": "late"}], after={"x-amz-meta-late": "no"})
    assert r.status_code == 204
    assert s3.head_object(Bucket=bucket, Key="late")["Metadata"] == {}


def test_checksum_and_md5_fields(s3srv, s3, bucket):
    data = b"checked body"
    for alg in ("crc32", "crc32c", "sha256"):
        f = "x-amz-checksum-" + alg
        r = signed_post(s3srv, bucket, "ck-" + alg, [{"key": "ck-" + alg}, {f: checksum_b64(alg, data)}],
                        {f: checksum_b64(alg, data)}, data=data)
        assert r.status_code == 204, r.text
        bad = checksum_b64(alg, b"other")
        r = signed_post(s3srv, bucket, "ckbad", [{"key": "ckbad"}, {f: bad}], {f: bad}, data=data)
        assert r.status_code == 400 and code_of(r) == "BadDigest", r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="ckbad")
    md5 = base64.b64encode(hashlib.md5(b"wrong").digest()).decode()
    r = signed_post(s3srv, bucket, "md5", [{"key": "md5"}, {"Content-MD5": md5}],
                    {"Content-MD5": md5}, data=data)
    assert r.status_code == 400 and code_of(r) == "BadDigest"


# ---- the policy's conditions ------------------------------------------------------------

def test_each_condition_failure(s3srv, s3, bucket):
    cases = [
        # (conditions, extra fields, key, code)
        ([{"key": "other"}], {}, "k", "AccessDenied"),
        ([["eq", "$key", "K"]], {}, "k", "AccessDenied"),                    # values: case
        ([["starts-with", "$key", "up/"]], {}, "k", "AccessDenied"),
        ([{"key": "k"}, {"Content-Type": "text/plain"}], {"Content-Type": "text/html"}, "k",
         "AccessDenied"),
        ([{"key": "k"}], {"x-amz-meta-extra": "not covered"}, "k", "AccessDenied"),
        ([{"key": "k"}, {"acl": "private"}], {"acl": "public-read"}, "k", "AccessDenied"),
        ([{"key": "k"}, {"bucket": "some-other-bucket"}], {}, "k", "AccessDenied"),
        ([{"key": "k"}, ["content-length-range", 0, 4]], {}, "k", "EntityTooLarge"),
        ([{"key": "k"}, ["content-length-range", 100, 200]], {}, "k", "EntityTooSmall"),
        ([{"key": "k"}, ["between", "$key", "a"]], {}, "k", "InvalidPolicyDocument"),
    ]
    for conds, extra, key, want in cases:
        # signed_post adds {"bucket": b}: the wrong-bucket case overrides nothing,
        # it adds a second, failing bucket condition.
        r = signed_post(s3srv, bucket, key, conds, extra)
        assert code_of(r) == want, (conds, extra, r.status_code, r.text)
        assert r.status_code == (403 if want == "AccessDenied" else 400)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")
    # Field names match case-insensitively; x-ignore-* needs no condition.
    r = signed_post(s3srv, bucket, "ci", [["eq", "$KEY", "ci"], {"content-type": "a/b"}],
                    {"Content-Type": "a/b", "x-ignore-me": "whatever"})
    assert r.status_code == 204, r.text


def test_expired_policy_and_bad_documents(s3srv, s3, bucket):
    fields = {"key": "e"}
    fields.update(v4_fields({"expiration": expiry(-60), "conditions": [{"bucket": bucket},
                                                                      {"key": "e"}]}))
    r = post(s3srv, bucket, fields)
    assert r.status_code == 403 and code_of(r) == "AccessDenied" and "expired" in r.text
    for doc in ({"conditions": [{"key": "e"}]}, {"expiration": "tomorrow", "conditions": []},
                {"expiration": expiry()}):
        fields = {"key": "e"}
        f = v4_fields(dict(doc, conditions=doc.get("conditions", [])))
        if "conditions" not in doc or "expiration" not in doc:
            # Rebuild the policy without the missing member, signed anyway.
            raw = json.loads(base64.b64decode(f["policy"]))
            for m in ("expiration", "conditions"):
                if m not in doc:
                    raw.pop(m, None)
            f = resign(raw, f)
        fields.update(f)
        r = post(s3srv, bucket, fields)
        assert r.status_code == 400 and code_of(r) == "InvalidPolicyDocument", (doc, r.text)
    fields = {"key": "e"}
    f = v4_fields({"expiration": expiry(), "conditions": []})
    f["policy"] = "!!!not base64!!!"
    fields.update(f)
    r = post(s3srv, bucket, fields)
    assert code_of(r) in ("InvalidPolicyDocument", "SignatureDoesNotMatch")


def resign(raw, f, secret=ADMIN_SECRET):
    b64 = base64.b64encode(json.dumps(raw).encode()).decode()
    k = ("AWS4" + secret).encode()
    for part in (f["x-amz-date"][:8], REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    g = dict(f)
    g["policy"] = b64
    g["x-amz-signature"] = hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()
    return g


# ---- signatures and keys ------------------------------------------------------------------

def test_signature_errors(s3srv, s3, bucket):
    base = {"expiration": expiry(), "conditions": [{"bucket": bucket}, {"key": "s"}]}
    f = v4_fields(base)
    f["x-amz-signature"] = "0" * 64
    r = post(s3srv, bucket, dict(key="s", **f))
    assert r.status_code == 403 and code_of(r) == "SignatureDoesNotMatch"
    f = v4_fields(base, secret="not-the-secret")
    r = post(s3srv, bucket, dict(key="s", **f))
    assert r.status_code == 403 and code_of(r) == "SignatureDoesNotMatch"
    f = v4_fields(base, key="no-such-key-id")
    r = post(s3srv, bucket, dict(key="s", **f))
    assert r.status_code == 403 and code_of(r) == "InvalidAccessKeyId"
    f = v4_fields(base)
    del f["x-amz-signature"]
    r = post(s3srv, bucket, dict(key="s", **f))
    assert r.status_code == 400 and code_of(r) == "InvalidArgument"
    f = v4_fields(base)
    del f["policy"]
    r = post(s3srv, bucket, dict(key="s", **f))
    assert r.status_code == 400 and code_of(r) == "InvalidArgument"
    # Missing key.
    f = v4_fields({"expiration": expiry(), "conditions": [{"bucket": bucket}]})
    r = post(s3srv, bucket, f)
    assert r.status_code == 400 and code_of(r) == "InvalidArgument" and "key" in r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="s")


def test_v2_signature_form(s3srv, s3, bucket):
    policy = base64.b64encode(json.dumps({"expiration": expiry(), "conditions": [
        {"bucket": bucket}, ["starts-with", "$key", "v2/"]]}).encode()).decode()
    sig = base64.b64encode(hmac.new(ADMIN_SECRET.encode(), policy.encode(),
                                    hashlib.sha1).digest()).decode()
    fields = {"key": "v2/${filename}", "AWSAccessKeyId": ADMIN_KEY, "policy": policy,
              "signature": sig}
    r = post(s3srv, bucket, fields, filename="old.bin", data=b"sha1 signed")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="v2/old.bin")["Body"].read() == b"sha1 signed"
    fields["signature"] = base64.b64encode(b"x" * 20).decode()
    r = post(s3srv, bucket, fields)
    assert r.status_code == 403 and code_of(r) == "SignatureDoesNotMatch"


def test_signer_permissions_apply(s3srv, s3, bucket):
    name = unique("ro")
    key, secret = s3srv.new_account(name, perms=["object:get"])
    fields = {"key": "ro"}
    fields.update(v4_fields({"expiration": expiry(), "conditions": [
        {"bucket": bucket}, {"key": "ro"}]}, key=key, secret=secret))
    r = post(s3srv, bucket, fields)
    assert r.status_code == 403 and code_of(r) == "AccessDenied"


def test_anonymous_post(s3srv, s3):
    b = unique("anonpost")
    s3.create_bucket(Bucket=b)
    r = post(s3srv, b, {"key": "a"})
    assert r.status_code == 403 and code_of(r) == "AccessDenied"
    s3.put_bucket_acl(Bucket=b, ACL="public-read-write")
    r = post(s3srv, b, {"key": "a", "success_action_status": "201"})
    assert r.status_code == 201, r.text
    assert s3.get_object(Bucket=b, Key="a")["Body"].read() == b"file-bytes"
    assert s3.get_object_acl(Bucket=b, Key="a")["Owner"]["ID"] == "admin"
    r = post(s3srv, "no-such-bucket-post", {"key": "a"})
    assert r.status_code == 404 and code_of(r) == "NoSuchBucket"


def test_malformed_bodies(s3srv, bucket):
    url = "%s/%s" % (s3srv.endpoint, bucket)
    r = requests.post(url, data=b"key=x", headers={"Content-Type":
                                                   "application/x-www-form-urlencoded"})
    assert r.status_code == 412
    body = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--XyZ\r\n" \
           b"Content-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\ntrunc"
    r = requests.post(url, data=body, headers={"Content-Type":
                                               "multipart/form-data; boundary=XyZ"})
    assert r.status_code in (400, 403) and code_of(r) in ("MalformedPOSTRequest", "AccessDenied")
    body = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--XyZ--\r\n"
    r = requests.post(url, data=body, headers={"Content-Type":
                                               "multipart/form-data; boundary=XyZ"})
    assert r.status_code == 400 and code_of(r) == "IncorrectNumberOfFilesInPostRequest"
    body = b"--XyZ\r\nno colon here\r\n\r\nk\r\n--XyZ--\r\n"
    r = requests.post(url, data=body, headers={"Content-Type":
                                               "multipart/form-data; boundary=XyZ"})
    assert r.status_code == 400 and code_of(r) == "MalformedPOSTRequest"
    big = {"key": "k", "x-ignore-pad": "p" * (21 * 1024)}
    r = post(s3srv, bucket, big)
    assert r.status_code == 400 and code_of(r) == "MaxPostPreDataLengthExceededError"


def test_boundary_lookalikes_in_file(s3srv, s3, bucket):
    # A file holding partial delimiters, CRLFs and the boundary without its
    # leading CRLF must arrive byte for byte.
    boundary = "b0undary"
    data = (b"\r\n--b0undar\r\n-\r\n--b0undarX--b0undary\r\r\n\r\n--" * 1000) + b"\r\n--b0undar"
    parts = [b"--%s\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nlook\r\n" %
             boundary.encode(),
             b"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n"
             b"Content-Type: application/octet-stream\r\n\r\n" % boundary.encode(),
             data, b"\r\n--%s--\r\n" % boundary.encode()]
    b2 = unique("look")
    s3.create_bucket(Bucket=b2, ACL="public-read-write")

    def gen():
        blob = b"".join(parts)
        for i in range(0, len(blob), 7):      # awkward slicing
            yield blob[i:i + 7]
    r = requests.post("%s/%s" % (s3srv.endpoint, b2), data=gen(),
                      headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=b2, Key="look")["Body"].read() == data


# ---- a large upload streams ----------------------------------------------------------------

def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_100mib_post_streams_with_bounded_memory(tmp_path):
    srv = Server(tmp_path / "big", args=s3_args())
    srv.start(wait_for=("jay", "http"))
    try:
        s = S3Server(srv)
        c = s.client()
        c.create_bucket(Bucket="big")
        size = 100 << 20
        boundary = "----cairnbig"
        fields = {"key": "big.bin"}
        fields.update(v4_fields({"expiration": expiry(), "conditions": [
            {"bucket": "big"}, {"key": "big.bin"}, ["content-length-range", 1, size]]}))
        head = b"".join(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" %
                        (boundary.encode(), k.encode(), v.encode()) for k, v in fields.items())
        head += (b"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b\"\r\n\r\n"
                 % boundary.encode())
        tail = b"\r\n--%s--\r\n" % boundary.encode()
        block = hashlib.sha256(b"seed").digest() * 32768     # 1 MiB, not compressible to nothing
        md5 = hashlib.md5()
        peak = [0]
        base = rss_kib(srv.proc.pid)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib(srv.proc.pid))
                time.sleep(0.05)
        t = threading.Thread(target=sample)
        t.start()

        def gen():
            yield head
            for _ in range(size // len(block)):
                md5.update(block)
                yield block
            yield tail
        import http.client
        host, port = srv.addrs["http"]
        conn = http.client.HTTPConnection(host, port, timeout=120)
        try:
            conn.putrequest("POST", "/big")
            conn.putheader("Content-Type", "multipart/form-data; boundary=" + boundary)
            conn.putheader("Content-Length", str(len(head) + size + len(tail)))
            conn.endheaders()
            for piece in gen():
                conn.send(piece)
            r = conn.getresponse()
            body = r.read()
        finally:
            stop.set()
            t.join()
            conn.close()
        assert r.status == 204, body
        assert r.getheader("ETag") == '"%s"' % md5.hexdigest()
        h = c.head_object(Bucket="big", Key="big.bin")
        assert h["ContentLength"] == size
        # Memory grew by far less than the upload (it is never held whole).
        assert peak[0] - base < 40 * 1024, (base, peak[0])
        print("rss base %d KiB, peak %d KiB" % (base, peak[0]))
    finally:
        srv.stop()
        out = srv.output()
        assert_no_sanitizer(out)
