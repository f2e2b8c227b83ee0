"""Helpers shared by the S3 integration tests: one cairnd per test module
with the Jay and HTTP listeners, boto3 clients for the administrator and for
other accounts, raw signed requests, and the Jay client for cross-face checks."""
import os
import sys

import boto3
import pytest
import requests
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer, binary, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jay"))
import jayclient  # noqa: E402

ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)
REGION = "us-east-1"


def s3_args(extra=()):
    return ["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "127.0.0.1:0"] + list(extra)


class S3Server:
    """A running cairnd and what the tests need to reach it."""

    def __init__(self, server):
        self.server = server
        host, port = server.addrs["http"]
        self.endpoint = "http://%s:%d" % (host, port)
        self.jay_addr = server.addrs["jay"]

    @property
    def data_dir(self):
        return self.server.data_dir

    def client(self, key=ADMIN_KEY, secret=ADMIN_SECRET, **cfg):
        conf = dict(s3={"addressing_style": "path"}, retries={"max_attempts": 0},
                    signature_version="s3v4")
        conf.update(cfg)
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=key,
                            aws_secret_access_key=secret, region_name=REGION,
                            config=Config(**conf))

    def anon(self):
        from botocore import UNSIGNED
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            config=Config(signature_version=UNSIGNED,
                                          s3={"addressing_style": "path"},
                                          retries={"max_attempts": 0}))

    def admin(self, *args):
        r = run([binary("cairn"), "admin", "--data", self.data_dir] + list(args),
                env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def new_account(self, name, perms=None):
        """Creates account name and a token; returns (key, secret)."""
        run([binary("cairn"), "admin", "--data", self.data_dir, "account", "create", name],
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
        args = ["token", "create", "--account", name]
        for p in perms or []:
            args += ["--perm", p]
        cred = self.admin(*args).splitlines()[-1].strip()
        return tuple(cred.split(":", 1))

    def jay(self, cred=ADMIN_TOKEN):
        return jayclient.Conn(self.jay_addr, cred)

    def signed(self, method, path, body=b"", headers=None, key=ADMIN_KEY, secret=ADMIN_SECRET,
               params=None, payload_hash=None):
        """A raw request signed with SigV4 (header form) by botocore; the
        body's hash is signed unless payload_hash says otherwise."""
        url = self.endpoint + path
        req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}),
                         params=params or {})
        import hashlib
        req.headers["x-amz-content-sha256"] = payload_hash or hashlib.sha256(body).hexdigest()
        S3SigV4Auth(Credentials(key, secret), "s3", REGION).add_auth(req)
        prepared = req.prepare()
        return requests.request(method, prepared.url, data=body, headers=dict(prepared.headers))


@pytest.fixture(scope="module")
def s3srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("s3")
    srv = Server(d / "data", args=s3_args())
    srv.start(wait_for=("jay", "http"))
    yield S3Server(srv)
    srv.stop()
    out = srv.output()
    assert_no_sanitizer(out)


def own_server(server_factory, env=None, extra=()):
    """A cairnd of the test's own, for settings the module's shared one must
    not have; server_factory stops it and fails the test on a sanitizer
    report in its log."""
    return S3Server(server_factory(args=s3_args(extra), env=env, wait_for=("jay", "http")))


_counter = [0]


def unique(prefix="bkt"):
    _counter[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _counter[0])


@pytest.fixture
def s3(s3srv):
    return s3srv.client()


@pytest.fixture
def bucket(s3srv, s3):
    name = unique()
    s3.create_bucket(Bucket=name)
    return name


# ---- checksums computed here, independently of the server -----------------
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def crc64nvme(data):
    crc = 0xFFFFFFFFFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x9A6C9329AC4BC9B5 & -(crc & 1))
    return crc ^ 0xFFFFFFFFFFFFFFFF


def checksum_b64(alg, data):
    import base64
    import hashlib
    import zlib
    if alg == "crc32":
        raw = zlib.crc32(data).to_bytes(4, "big")
    elif alg == "crc32c":
        raw = crc32c(data).to_bytes(4, "big")
    elif alg == "crc64nvme":
        raw = crc64nvme(data).to_bytes(8, "big")
    elif alg == "sha1":
        raw = hashlib.sha1(data).digest()
    else:
        raw = hashlib.sha256(data).digest()
    return base64.b64encode(raw).decode()


def streaming_put(srv, path, payload, mode="STREAMING-AWS4-HMAC-SHA256-PAYLOAD", chunk=65536,
                  trailer_alg=None, tamper=False, key=ADMIN_KEY, secret=ADMIN_SECRET):
    """PUT path with an aws-chunked body in one of the streaming forms,
    signing every chunk (and the trailer) as the SDKs do."""
    import hashlib
    import hmac
    import re
    headers = {"x-amz-content-sha256": mode, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(payload))}
    if trailer_alg:
        headers["x-amz-trailer"] = "x-amz-checksum-" + trailer_alg
    req = AWSRequest(method="PUT", url=srv.endpoint + path, data=b"", headers=headers)
    SigV4Auth(Credentials(key, secret), "s3", REGION).add_auth(req)
    p = req.prepare()
    seed = re.search(r"Signature=([0-9a-f]{64})", p.headers["Authorization"]).group(1)
    amz_date = p.headers["X-Amz-Date"]
    scope = "%s/%s/s3/aws4_request" % (amz_date[:8], REGION)
    k = ("AWS4" + secret).encode()
    for part in (amz_date[:8], REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signed = mode.startswith("STREAMING-AWS4")
    chunks = [payload[i:i + chunk] for i in range(0, len(payload), chunk)] + [b""]
    body, prev = b"", seed
    for c in chunks:
        data = c
        if tamper and c:
            data = bytes([c[0] ^ 1]) + c[1:]
            tamper = False
        if signed:
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev,
                             hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
            prev = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            body += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode())
        else:
            body += b"%x\r\n" % len(c)
        if c or not trailer_alg:
            body += data + b"\r\n"
    if trailer_alg:
        value = checksum_b64(trailer_alg, payload)
        line = "x-amz-checksum-%s:%s" % (trailer_alg, value)
        body += line.encode() + b"\r\n"
        if signed:
            sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, prev,
                             hashlib.sha256((line + "\n").encode()).hexdigest()])
            tsig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            body += ("x-amz-trailer-signature:%s\r\n" % tsig).encode()
        body += b"\r\n"
    return requests.put(p.url, headers=dict(p.headers), data=body)
