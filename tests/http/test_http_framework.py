"""The HTTP framework through a real server (tests/http/http_test_server) over
real sockets: SigV4 in every form botocore produces, aws-chunked uploads
crafted per the AWS spec, 100-continue, chunked and large streamed bodies,
keep-alive, sendfile, TLS, and the proxy-header rule."""
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import subprocess
import time
import zlib

import pytest
import requests
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import assert_no_sanitizer, binary

KEY = "AKIDTEST"
SECRET = "test-secret/0123+abc"
REGION = "us-east-1"
CREDS = Credentials(KEY, SECRET)


class HttpTestServer:
    def __init__(self, tmp_path, *args, env=None):
        self.log_path = str(tmp_path / ("hts-%d.log" % time.monotonic_ns()))
        self.log = open(self.log_path, "wb")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen([binary("tests/http/http_test_server"), "--dir", str(tmp_path),
                                      *args], stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        deadline = time.time() + 20
        while time.time() < deadline:
            m = re.search(r"listening (\w+) on (\S+)", self.output())
            if m:
                host, _, port = m.group(2).rpartition(":")
                self.host, self.port = host.strip("[]"), int(port)
                return
            if self.proc.poll() is not None:
                raise RuntimeError("test server exited:\n" + self.output())
            time.sleep(0.02)
        raise RuntimeError("test server did not listen:\n" + self.output())

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def url(self, path, scheme="http"):
        return "%s://%s:%d%s" % (scheme, self.host, self.port, path)

    def rss_hwm_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        out = self.output()
        assert_no_sanitizer(out)
        assert "LeakSanitizer" not in out, out


@pytest.fixture
def start(tmp_path):
    servers = []

    def make(*args, env=None):
        s = HttpTestServer(tmp_path, *args, env=env)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


@pytest.fixture
def srv(start):
    return start()


def signed(method, url, body=b"", headers=None, auth_cls=S3SigV4Auth, creds=CREDS):
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    auth_cls(creds, "s3", REGION).add_auth(req)
    return req.prepare()


def send(prepared, session=None):
    s = session or requests
    return s.request(prepared.method, prepared.url, headers=dict(prepared.headers),
                     data=prepared.body)


def s3_error(resp):
    m = re.search(r"<Code>([^<]*)</Code>", resp.text)
    return m.group(1) if m else None


def test_health_and_metrics(srv):
    r = requests.get(srv.url("/_cairn/health"))
    assert r.status_code == 200 and r.text == "ok"
    assert re.fullmatch(r"[0-9A-F]{16}", r.headers["x-amz-request-id"])
    assert r.headers["x-amz-id-2"]
    # A request is counted by its worker after the answer is written
    # (src/http/serve.c, req_end), which may come a moment after the client
    # has it: poll briefly.
    want = 'cairn_http_requests_total{route="health",status="2xx"} 1'
    for _ in range(50):
        r = requests.get(srv.url("/_cairn/metrics"))
        assert r.status_code == 200
        if want in r.text:
            break
        time.sleep(0.05)
    assert want in r.text
    assert 'cairn_connections_open{listener="http"}' in r.text
    assert "cairn_http_open_connections" not in r.text
    assert "cairn_http_request_duration_seconds_bucket" in r.text


def test_no_route_is_not_implemented(srv):
    r = requests.get(srv.url("/nothing/here"))
    assert r.status_code == 501 and s3_error(r) == "NotImplemented"
    assert "<RequestId>%s</RequestId>" % r.headers["x-amz-request-id"] in r.text
    assert "<Resource>/nothing/here</Resource>" in r.text


def test_anonymous_and_query_decoding(srv):
    r = requests.get(srv.url("/whoami?prefix=a%20b%2Bc&acl&empty="))
    j = r.json()
    assert j["auth"] == "anonymous" and j["key"] is None
    assert j["query"] == {"prefix": "a b+c", "acl": "", "empty": ""}


def test_header_form_ok(srv):
    r = send(signed("GET", srv.url("/whoami/some%20key?list-type=2&prefix=x")))
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["auth"] == "sigv4-header" and j["key"] == KEY
    assert j["path"] == "/whoami/some key"
    # The plain SigV4 signer (no x-amz-content-sha256) works too.
    r = send(signed("GET", srv.url("/whoami"), auth_cls=SigV4Auth))
    assert r.status_code == 200 and r.json()["auth"] == "sigv4-header"


def test_header_form_keys_that_break_naive_servers(srv):
    # Spaces, '+', unicode, '%' and '~' in the key: the canonical URI is encoded once.
    for key in ["a b", "a+b", "caf\u00e9/\u6f22\u5b57", "100%", "x~y!*'()", "dir//double"]:
        path = "/whoami/" + requests.utils.quote(key, safe="/~")
        r = send(signed("GET", srv.url(path)))
        assert r.status_code == 200, (key, r.text)
        assert r.json()["path"] == "/whoami/" + key


def test_bad_signature(srv):
    bad = Credentials(KEY, "wrong-secret")
    r = send(signed("GET", srv.url("/whoami"), creds=bad))
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"
    assert r.headers["x-amz-request-id"] in r.text
    r = send(signed("GET", srv.url("/whoami"), creds=Credentials("NOSUCHKEY", SECRET)))
    assert r.status_code == 403 and s3_error(r) == "InvalidAccessKeyId"
    # A header changed after signing.
    p = signed("GET", srv.url("/whoami"), headers={"x-amz-meta-a": "1"})
    p.headers["x-amz-meta-a"] = "2"
    r = send(p)
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"
    r = requests.get(srv.url("/whoami"), headers={"Authorization": "AWS4-HMAC-SHA256 garbage"})
    assert r.status_code == 400 and s3_error(r) == "AuthorizationHeaderMalformed"
    r = requests.get(srv.url("/whoami"), headers={"Authorization": "AWS AKID:sig"})
    assert r.status_code == 400 and s3_error(r) == "InvalidRequest"
    metrics = requests.get(srv.url("/_cairn/metrics")).text
    assert re.search(r"cairn_http_auth_failures_total [1-9]", metrics)


def test_skew(start):
    s = start("--clock-offset-s", "1200")
    r = send(signed("GET", s.url("/whoami")))
    assert r.status_code == 403 and s3_error(r) == "RequestTimeTooSkewed"
    s2 = start("--clock-offset-s", "600")
    r = send(signed("GET", s2.url("/whoami")))
    assert r.status_code == 200


def test_region_pinned(start):
    s = start("--region", "eu-central-1")
    r = send(signed("GET", s.url("/whoami")))
    assert r.status_code == 400 and s3_error(r) == "AuthorizationHeaderMalformed"
    assert "eu-central-1" in r.text


def test_bearer(srv):
    r = requests.get(srv.url("/whoami"), headers={"Authorization": "Bearer tok1:sekrit"})
    assert r.json()["auth"] == "bearer" and r.json()["key"] == "tok1"
    r = requests.get(srv.url("/whoami"), headers={"Authorization": "Bearer tok1:nope"})
    assert r.status_code == 403 and s3_error(r) == "AccessDenied"


def _s3_client(srv):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=srv.url(""), aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET, region_name=REGION,
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


def test_presigned(srv):
    c = _s3_client(srv)
    url = c.generate_presigned_url("get_object", Params={"Bucket": "whoami", "Key": "a b/c+d"},
                                   ExpiresIn=60)
    r = requests.get(url)
    assert r.status_code == 200, r.text
    assert r.json()["auth"] == "sigv4-query" and r.json()["path"] == "/whoami/a b/c+d"
    # Tampering with the query breaks it.
    r = requests.get(url.replace("X-Amz-Expires=60", "X-Amz-Expires=61"))
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"
    # A presigned PUT carries an unsigned body.
    put = c.generate_presigned_url("put_object", Params={"Bucket": "echo", "Key": "k"}, ExpiresIn=60)
    r = requests.put(put, data=b"presigned body")
    assert r.status_code == 200, r.text
    assert r.json()["sha256"] == hashlib.sha256(b"presigned body").hexdigest()


def test_presigned_expired(srv):
    c = _s3_client(srv)
    url = c.generate_presigned_url("get_object", Params={"Bucket": "whoami", "Key": "k"},
                                   ExpiresIn=1)
    time.sleep(2.2)
    r = requests.get(url)
    assert r.status_code == 403 and s3_error(r) == "AccessDenied"
    assert "expired" in r.text


def test_signed_payload_hash(srv):
    body = os.urandom(100000)
    r = send(signed("PUT", srv.url("/echo/obj"), body))
    assert r.status_code == 200, r.text
    assert r.json()["sha256"] == hashlib.sha256(body).hexdigest()
    assert r.json()["len"] == len(body)
    # Same length, different bytes: the signed hash no longer matches.
    p = signed("PUT", srv.url("/echo/obj"), body)
    r = requests.put(p.url, headers=dict(p.headers), data=bytes(reversed(body)))
    assert r.status_code == 400 and s3_error(r) == "XAmzContentSHA256Mismatch"


def test_deferred_payload_signature(srv):
    # SigV4Auth signs the body hash without sending x-amz-content-sha256.
    p = signed("PUT", srv.url("/echo/x"), b"deferred body", auth_cls=SigV4Auth)
    assert "X-Amz-Content-SHA256" not in p.headers
    r = send(p)
    assert r.status_code == 200 and r.json()["len"] == 13
    r = requests.put(p.url, headers=dict(p.headers), data=b"deferred bodY")
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"


def test_request_state_does_not_carry_over(srv):
    """A request struct is reused (each thread keeps its last one) and only
    part of it is cleared: on one keep-alive connection, nothing of a signed,
    checksummed or refused request shows in the anonymous one after it."""
    body = b"carried?"
    crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    with requests.Session() as s:
        for _ in range(3):  # the same threads serve the connection again and again
            r = s.put(srv.url("/echo"), data=body, headers={"x-amz-checksum-crc32": crc})
            assert r.status_code == 200 and r.json()["checksum"] == crc
            r = s.put(srv.url("/echo"), data=body)
            assert r.status_code == 200, r.text
            assert r.json()["checksum"] is None and r.json()["checksum_alg"] is None
            r = send(signed("GET", srv.url("/whoami")), s)
            assert r.status_code == 200 and r.json()["key"] == KEY
            r = s.get(srv.url("/whoami"))
            j = r.json()
            assert j["auth"] == "anonymous" and j["key"] is None and j["peer"], j
            bad = signed("GET", srv.url("/whoami"),
                         creds=Credentials(KEY, "not-the-secret-at-all"))
            r = send(bad, s)
            assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"
            r = s.get(srv.url("/whoami?x=1"))
            assert r.status_code == 200 and r.json()["auth"] == "anonymous", r.text


def test_checksum_header(srv):
    body = b"checksummed"
    crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    r = requests.put(srv.url("/echo"), data=body, headers={"x-amz-checksum-crc32": crc})
    assert r.status_code == 200 and r.json()["checksum"] == crc
    assert r.json()["checksum_alg"] == "CRC32"
    bad = base64.b64encode((zlib.crc32(body) ^ 1).to_bytes(4, "big")).decode()
    r = requests.put(srv.url("/echo"), data=body, headers={"x-amz-checksum-crc32": bad})
    assert r.status_code == 400 and s3_error(r) == "BadDigest"
    sha = base64.b64encode(hashlib.sha256(body).digest()).decode()
    r = requests.put(srv.url("/echo"), data=body, headers={"x-amz-checksum-sha256": sha})
    assert r.status_code == 200
    r = requests.put(srv.url("/echo"), data=body, headers={"x-amz-checksum-crc32": "!!"})
    assert r.status_code == 400 and s3_error(r) == "InvalidRequest"


def _raw(srv, data, timeout=10):
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    s.sendall(data)
    return s


def _read_response(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    m = re.search(rb"Content-Length: (\d+)", head, re.I)
    n = int(m.group(1)) if m else 0
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head.decode(), rest[:n], rest[n:]


def test_expect_100_continue(srv):
    s = _raw(srv, b"PUT /echo/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
    first = s.recv(4096)
    assert first.startswith(b"HTTP/1.1 100 Continue"), first
    s.sendall(b"hello")
    head, body, _ = _read_response(s)
    assert head.startswith("HTTP/1.1 200"), head
    assert json.loads(body)["len"] == 5
    # A rejected credential is answered instead of 100 Continue: no body is sent.
    s.sendall(b"PUT /echo/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
              b"Authorization: Bearer tok1:wrong\r\nExpect: 100-continue\r\n\r\n")
    head, body, _ = _read_response(s)
    assert head.startswith("HTTP/1.1 403"), head
    s.close()
    # An expectation other than 100-continue.
    s = _raw(srv, b"PUT /echo/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nExpect: teapot\r\n\r\n")
    head, body, _ = _read_response(s)
    assert head.startswith("HTTP/1.1 417"), head
    s.close()


def test_expect_100_continue_zero_length(srv):
    s = _raw(srv, b"PUT /echo/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                  b"Expect: 100-continue\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    saw_continue = buf.startswith(b"HTTP/1.1 100")
    if saw_continue:
        buf = buf.partition(b"\r\n\r\n")[2]
    head, body, _ = _read_tail(s, buf)
    assert head.startswith("HTTP/1.1 200"), head
    assert json.loads(body)["len"] == 0
    s.close()
    assert saw_continue, "no interim 100 Continue for a zero-length PUT"


def _read_tail(sock, buf):
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
    while len(rest) < n:
        rest += sock.recv(65536)
    return head.decode(), rest[:n], rest[n:]


def test_chunked_upload_streamed(srv):
    total = 512 << 20
    block = os.urandom(1 << 20)
    h = hashlib.sha256()
    hwm_before = srv.rss_hwm_kib()

    def gen():
        for _ in range(total // len(block)):
            h.update(block)
            yield block

    r = requests.put(srv.url("/echo/big"), data=gen())
    assert r.status_code == 200, r.text
    assert r.json()["len"] == total and r.json()["declared"] == -1
    assert r.json()["sha256"] == h.hexdigest()
    grown_mib = (srv.rss_hwm_kib() - hwm_before) / 1024
    assert grown_mib < 64, "server peak RSS grew %.0f MiB for a 512 MiB body" % grown_mib


def test_pause_resume(srv):
    body = os.urandom(3 << 20)
    r = requests.put(srv.url("/echo/p?pause=1"), data=body)
    assert r.status_code == 200
    assert r.json()["sha256"] == hashlib.sha256(body).hexdigest()
    assert r.json()["pauses"] > 0


def _sign_chunk(key, amz_date, scope, prev, data):
    sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev,
                     hashlib.sha256(b"").hexdigest(), hashlib.sha256(data).hexdigest()])
    return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


def _signing_key(date8):
    k = ("AWS4" + SECRET).encode()
    for part in (date8, REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def _streaming_request(srv, mode, payload, chunk_size, extra_headers=None, body_len=None):
    headers = {"x-amz-content-sha256": mode, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(payload))}
    headers.update(extra_headers or {})
    req = AWSRequest(method="PUT", url=srv.url("/echo/stream"), data=b"", headers=headers)
    SigV4Auth(CREDS, "s3", REGION).add_auth(req)
    p = req.prepare()
    auth = p.headers["Authorization"]
    seed = re.search(r"Signature=([0-9a-f]{64})", auth).group(1)
    amz_date = p.headers["X-Amz-Date"]
    scope = "%s/%s/s3/aws4_request" % (amz_date[:8], REGION)
    return p, seed, amz_date, scope


def test_aws_chunked_signed_streaming(srv):
    payload = os.urandom(200000)
    p, seed, amz_date, scope = _streaming_request(srv, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                                                  payload, 65536)
    key = _signing_key(amz_date[:8])

    def build(tamper=False):
        out, prev = b"", seed
        chunks = [payload[i:i + 65536] for i in range(0, len(payload), 65536)] + [b""]
        for c in chunks:
            sig = _sign_chunk(key, amz_date, scope, prev, c)
            prev = sig
            data = c
            if tamper and c:
                data = bytes([c[0] ^ 1]) + c[1:]
                tamper = False
            out += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode()) + data + b"\r\n"
        return out

    headers = dict(p.headers)
    body = build()
    headers["Content-Length"] = str(len(body))
    r = requests.put(p.url, headers=headers, data=body)
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["len"] == len(payload) and j["sha256"] == hashlib.sha256(payload).hexdigest()
    assert j["content_encoding"] is None and j["declared"] == len(payload)
    # Also over Transfer-Encoding: chunked, sliced awkwardly.
    del headers["Content-Length"]
    r = requests.put(p.url, headers=headers, data=(body[i:i + 777] for i in range(0, len(body), 777)))
    assert r.status_code == 200 and r.json()["len"] == len(payload)
    # A flipped payload byte breaks that chunk's signature.
    bad = build(tamper=True)
    headers["Content-Length"] = str(len(bad))
    r = requests.put(p.url, headers=headers, data=bad)
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"


def test_aws_chunked_signed_trailer(srv):
    payload = os.urandom(70000)
    p, seed, amz_date, scope = _streaming_request(
        srv, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", payload, 65536,
        {"x-amz-trailer": "x-amz-checksum-crc32c"})
    key = _signing_key(amz_date[:8])
    prev, body = seed, b""
    for c in [payload[:65536], payload[65536:], b""]:
        sig = _sign_chunk(key, amz_date, scope, prev, c)
        prev = sig
        body += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode())
        if c:
            body += c + b"\r\n"
    # CRC32C of the payload, computed here independently.
    crc = 0xFFFFFFFF
    for b in payload:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    crc ^= 0xFFFFFFFF
    value = base64.b64encode(crc.to_bytes(4, "big")).decode()
    trailer = "x-amz-checksum-crc32c:%s\n" % value
    sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, prev,
                     hashlib.sha256(trailer.encode()).hexdigest()])
    tsig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    body += ("x-amz-checksum-crc32c:%s\r\nx-amz-trailer-signature:%s\r\n\r\n" % (value, tsig)).encode()
    headers = dict(p.headers)
    r = requests.put(p.url, headers=headers, data=body)
    assert r.status_code == 200, r.text
    assert r.json()["checksum"] == value and r.json()["checksum_alg"] == "CRC32C"
    r = requests.put(p.url, headers=headers, data=body.replace(tsig.encode(), b"0" * 64))
    assert r.status_code == 403 and s3_error(r) == "SignatureDoesNotMatch"


def test_aws_chunked_unsigned_trailer(srv):
    payload = os.urandom(150000)
    crc = base64.b64encode(zlib.crc32(payload).to_bytes(4, "big")).decode()
    p, _, _, _ = _streaming_request(srv, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", payload, 0,
                                    {"x-amz-trailer": "x-amz-checksum-crc32"})

    def body(value):
        out = b""
        for i in range(0, len(payload), 65536):
            c = payload[i:i + 65536]
            out += b"%x\r\n" % len(c) + c + b"\r\n"
        return out + b"0\r\nx-amz-checksum-crc32:" + value.encode() + b"\r\n\r\n"

    r = requests.put(p.url, headers=dict(p.headers), data=body(crc))
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["len"] == len(payload) and j["checksum"] == crc and j["checksum_alg"] == "CRC32"
    bad = base64.b64encode((zlib.crc32(payload) ^ 0x100).to_bytes(4, "big")).decode()
    r = requests.put(p.url, headers=dict(p.headers), data=body(bad))
    assert r.status_code == 400 and s3_error(r) == "BadDigest"
    # Fewer bytes than x-amz-decoded-content-length declares.
    h = dict(p.headers)
    h["x-amz-decoded-content-length"] = str(len(payload) + 1)
    r = requests.put(p.url, headers=h, data=body(crc))
    assert r.status_code in (400, 403)
    # Anonymous clients may send the unsigned trailer form too.
    r = requests.put(srv.url("/echo/anon"), data=body(crc), headers={
        "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        "x-amz-trailer": "x-amz-checksum-crc32", "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(payload))})
    assert r.status_code == 200 and r.json()["auth"] == "anonymous"


def test_keep_alive_many_requests(srv):
    before = requests.get(srv.url("/_cairn/metrics")).text
    total_before = int(re.search(r'cairn_connections_accepted_total\{listener="http"\} (\d+)', before).group(1))
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    conn.connect()
    sock = conn.sock
    for i in range(300):
        if i % 3 == 0:
            p = signed("PUT", srv.url("/echo/k%d" % i), b"x" * i)
            conn.request("PUT", "/echo/k%d" % i, body=p.body, headers=dict(p.headers))
        else:
            conn.request("GET", "/whoami?i=%d" % i)
        resp = conn.getresponse()
        data = resp.read()
        assert resp.status == 200, data
        assert conn.sock is sock
    conn.close()
    after = requests.get(srv.url("/_cairn/metrics")).text
    total_after = int(re.search(r'cairn_connections_accepted_total\{listener="http"\} (\d+)', after).group(1))
    assert total_after - total_before == 2   # our connection + the metrics request


def test_sendfile_large(srv, tmp_path):
    size = (300 << 20) + 12345
    path = tmp_path / "big.bin"
    h = hashlib.sha256()
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            h.update(block[:n])
            left -= n
    r = requests.get(srv.url("/file/big.bin"), stream=True)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == size
    got = hashlib.sha256()
    n = 0
    for chunk in r.iter_content(1 << 20):
        got.update(chunk)
        n += len(chunk)
    assert n == size and got.hexdigest() == h.hexdigest()
    r = requests.get(srv.url("/file/big.bin"), headers={"Range": "bytes=100-199"})
    assert r.status_code == 206 and len(r.content) == 100
    with open(path, "rb") as f:
        f.seek(100)
        assert r.content == f.read(100)
    r = requests.head(srv.url("/file/big.bin"))
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == size
    r = requests.get(srv.url("/file/big.bin"), headers={"Range": "bytes=%d-" % (size + 5) + "%d" % (size + 9)})
    assert r.status_code == 416 and s3_error(r) == "InvalidRange"


def test_streamed_response(srv):
    r = requests.get(srv.url("/stream?n=1000000"))
    assert r.status_code == 200 and len(r.content) == 1000000
    assert r.headers.get("Transfer-Encoding") == "chunked"
    assert r.content[:26] == b"abcdefghijklmnopqrstuvwxyz"


def test_body_cap(start):
    s = start("--max-body", "1000")
    r = requests.put(s.url("/echo"), data=b"x" * 1001)
    assert r.status_code == 400 and s3_error(r) == "EntityTooLarge"
    r = requests.put(s.url("/echo"), data=(b"x" * 100 for _ in range(20)))
    assert r.status_code == 400 and s3_error(r) == "EntityTooLarge"
    r = requests.put(s.url("/echo"), data=b"x" * 1000)
    assert r.status_code == 200


def test_forwarded_for_only_when_trusted(start):
    s = start()
    r = requests.get(s.url("/whoami"), headers={"X-Forwarded-For": "203.0.113.7, 10.0.0.1"})
    assert r.json()["client_ip"] == "127.0.0.1"
    t = start(env={"JAY_TRUST_PROXY_HEADERS": "1"})
    # the rightmost entry, the one the trusted proxy appended; those to its
    # left are the client's own words
    r = requests.get(t.url("/whoami"), headers={"X-Forwarded-For": "203.0.113.7, 10.0.0.1"})
    assert r.json()["client_ip"] == "10.0.0.1" and r.json()["peer"] == "127.0.0.1"
    r = requests.get(t.url("/whoami"), headers={"X-Forwarded-For": "10.0.0.1 ,\t 2001:db8::7"})
    assert r.json()["client_ip"] == "2001:db8::7"
    for bad in ("not-an-ip", "203.0.113.7, not-an-ip", "203.0.113.7,", "10.0.0.1 10.0.0.2"):
        r = requests.get(t.url("/whoami"), headers={"X-Forwarded-For": bad})
        assert r.json()["client_ip"] == "127.0.0.1", bad
    # repeated headers are one list: the last header's last entry
    s = _raw(t, b"GET /whoami HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.0.0.9\r\n"
                b"X-Forwarded-For: 198.51.100.1, 10.0.0.3\r\nConnection: close\r\n\r\n")
    head, body, _ = _read_response(s)
    s.close()
    assert json.loads(body)["client_ip"] == "10.0.0.3", body


def test_bad_uri(srv):
    s = _raw(srv, b"GET /whoami/a%00b HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body, _ = _read_response(s)
    assert head.startswith("HTTP/1.1 400") and b"InvalidURI" in body
    s.close()


def test_tls(start, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    s = start("--tls-cert", str(cert), "--tls-key", str(key))
    r = requests.get(s.url("/_cairn/health", "https"), verify=str(cert))
    assert r.status_code == 200 and r.text == "ok"
    body = os.urandom(300000)
    p = signed("PUT", s.url("/echo/tls", "https"), body)
    r = requests.put(p.url, headers=dict(p.headers), data=body, verify=str(cert))
    assert r.status_code == 200 and r.json()["sha256"] == hashlib.sha256(body).hexdigest()
