"""The S3 face under server settings: virtual-host addressing with a
configured domain, a subset over TLS (a self-signed certificate made here),
and the per-token rate limit shared with the native protocol (503 SlowDown)."""
import hashlib
import os
import subprocess

import boto3
import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from conftest import Server
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION, S3Server, s3_args, streaming_put


def start(tmp_path, name, args=(), env=None):
    srv = Server(tmp_path / name, args=s3_args(args), env=env)
    srv.start(wait_for=("jay", "http"))
    return srv


def vhost_request(port, method, host, path, body=b""):
    """Signs for http://HOST:PORT/PATH and sends it to 127.0.0.1 with that Host."""
    url = "http://%s:%d%s" % (host, port, path)
    req = AWSRequest(method=method, url=url, data=body,
                     headers={"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    S3SigV4Auth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", REGION).add_auth(req)
    p = req.prepare()
    headers = dict(p.headers)
    headers["Host"] = "%s:%d" % (host, port)
    return requests.request(method, "http://127.0.0.1:%d%s" % (port, path), data=body,
                            headers=headers)


def test_virtual_host_style(tmp_path):
    srv = start(tmp_path, "vh", env={"CAIRN_S3_DOMAIN": "s3.cairn.test"})
    try:
        s = S3Server(srv)
        port = srv.addrs["http"][1]
        c = s.client()
        c.create_bucket(Bucket="vhost-bucket")
        r = vhost_request(port, "PUT", "vhost-bucket.s3.cairn.test", "/dir/key.txt", b"vh body")
        assert r.status_code == 200, r.text
        # The same object by path style.
        assert c.get_object(Bucket="vhost-bucket", Key="dir/key.txt")["Body"].read() == b"vh body"
        r = vhost_request(port, "GET", "vhost-bucket.s3.cairn.test", "/dir/key.txt")
        assert r.status_code == 200 and r.content == b"vh body"
        r = vhost_request(port, "GET", "vhost-bucket.s3.cairn.test", "/")
        assert r.status_code == 200 and "<Key>dir/key.txt</Key>" in r.text
        # A key that starts with '_' is still a key under a virtual host.
        r = vhost_request(port, "PUT", "vhost-bucket.s3.cairn.test", "/_under", b"u")
        assert r.status_code == 200, r.text
        assert c.get_object(Bucket="vhost-bucket", Key="_under")["Body"].read() == b"u"
        # The bare domain is path style.
        r = vhost_request(port, "GET", "s3.cairn.test", "/vhost-bucket/dir/key.txt")
        assert r.status_code == 200 and r.content == b"vh body"
        # So is any other host name.
        r = vhost_request(port, "GET", "127.0.0.1", "/vhost-bucket/dir/key.txt")
        assert r.status_code == 200
    finally:
        srv.stop()


@pytest.fixture
def tls_pair(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                        str(cert)], capture_output=True)
    assert r.returncode == 0, r.stderr
    return str(cert), str(key)


def test_tls_subset(tmp_path, tls_pair):
    cert, key = tls_pair
    srv = start(tmp_path, "tls", args=["--http-tls-cert", cert, "--http-tls-key", key])
    try:
        host, port = srv.addrs["http"]
        endpoint = "https://%s:%d" % (host, port)
        c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ADMIN_KEY,
                         aws_secret_access_key=ADMIN_SECRET, region_name=REGION, verify=cert,
                         config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                       retries={"max_attempts": 0}))
        c.create_bucket(Bucket="tls-bucket")
        body = os.urandom(3 << 20)
        c.put_object(Bucket="tls-bucket", Key="k", Body=body, ChecksumAlgorithm="CRC32")
        assert c.get_object(Bucket="tls-bucket", Key="k")["Body"].read() == body
        g = c.get_object(Bucket="tls-bucket", Key="k", Range="bytes=10-19")
        assert g["Body"].read() == body[10:20]
        url = c.generate_presigned_url("get_object", Params={"Bucket": "tls-bucket", "Key": "k"})
        assert requests.get(url, verify=cert).content == body
        uid = c.create_multipart_upload(Bucket="tls-bucket", Key="mp")["UploadId"]
        e1 = c.upload_part(Bucket="tls-bucket", Key="mp", UploadId=uid, PartNumber=1,
                           Body=body[:5 << 20] if len(body) >= 5 << 20 else body)["ETag"]
        c.complete_multipart_upload(Bucket="tls-bucket", Key="mp", UploadId=uid,
                                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
        assert c.get_object(Bucket="tls-bucket", Key="mp")["Body"].read() == body
        # The trailer form SDKs use over HTTPS.
        s = S3Server(srv)
        s.endpoint = endpoint
        old = requests.put

        def put(*a, **kw):
            kw["verify"] = cert
            return old(*a, **kw)
        requests.put = put
        try:
            r = streaming_put(s, "/tls-bucket/trailer", body[:100_000],
                              mode="STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer_alg="crc32")
        finally:
            requests.put = old
        assert r.status_code == 200, r.text
        assert c.get_object(Bucket="tls-bucket", Key="trailer")["Body"].read() == body[:100_000]
    finally:
        srv.stop()


def test_rate_limit_slowdown(tmp_path):
    srv = start(tmp_path, "rate", env={"CAIRN_RATE_LIMIT": "1,3"})
    try:
        s = S3Server(srv)
        codes = [s.signed("GET", "/").status_code for _ in range(10)]
        assert 200 in codes and 503 in codes, codes
        r = s.signed("GET", "/")
        if r.status_code == 503:
            assert "<Code>SlowDown</Code>" in r.text
    finally:
        srv.stop()
