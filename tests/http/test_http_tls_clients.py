"""Outside clients against the HTTP listener's opt-in TLS (`--http-tls-cert`,
`--http-tls-key`; issue 16, "aws-cli, boto3 and headless Chromium connect
to it in tests" and "a Chromium upload (the existing browser test) through it
over TLS").  boto3 over TLS is tests/s3/test_s3_server.py::test_tls_subset and
a Chromium GET is tests/net/test_tls_pq.py; here:
- aws-cli verifying the server against the certificate
  (`--ca-bundle`): mb, cp up (a multipart-sized file), ls, cp down, s3api
  head-object; and refusing the server against another certificate (the TLS is real);
- headless Chromium running the page of tests/s3/test_s3_post_browser.py
  against an https endpoint: a presigned POST (FormData) upload, a presigned
  PUT after a CORS preflight, CORS GETs of both, a bucket without CORS
  unreadable to the page."""
import http.server
import json
import os
import shutil
import subprocess
import sys

import boto3
import pytest
from botocore.config import Config

from conftest import assert_no_sanitizer, run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "s3"))
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION  # noqa: E402
from test_s3_post_browser import CHROMIUM, Origin, run_page  # noqa: E402
from test_s3_server import start, tls_pair  # noqa: E402,F401

MiB = 1 << 20


@pytest.fixture
def tls_srv(tmp_path, tls_pair):  # noqa: F811
    cert, key = tls_pair
    srv = start(tmp_path, "tls", args=["--http-tls-cert", cert, "--http-tls-key", key])
    host, port = srv.addrs["http"]
    srv.endpoint = "https://%s:%d" % (host, port)
    srv.cert = cert
    yield srv
    srv.stop()
    out = srv.output()
    assert_no_sanitizer(out)


def other_cert(tmp_path):
    c, k = str(tmp_path / "other.pem"), str(tmp_path / "other.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", k, "-out", c],
                   check=True, capture_output=True)
    return c


def aws(srv, tmp_path, *args, ca=True):
    if not shutil.which("aws"):
        pytest.fail("aws-cli is not installed (scripts/deps.sh test installs it)")
    env = {"AWS_ACCESS_KEY_ID": ADMIN_KEY, "AWS_SECRET_ACCESS_KEY": ADMIN_SECRET,
           "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-creds"),
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_PAGER": "", "AWS_MAX_ATTEMPTS": "1"}
    cmd = ["aws", "--endpoint-url", srv.endpoint]
    # the server's own certificate, or another self-signed one (not its issuer)
    cmd += ["--ca-bundle", srv.cert if ca else other_cert(tmp_path)]
    return run(cmd + list(args), env=env, timeout=300)


def test_awscli_over_tls(tls_srv, tmp_path):
    big = tmp_path / "big.bin"
    data = os.urandom(9 * MiB)  # above aws-cli's 8 MiB multipart threshold
    big.write_bytes(data)
    for args in (["s3", "mb", "s3://tls-cli"],
                 ["s3", "cp", str(big), "s3://tls-cli/dir/big.bin"]):
        r = aws(tls_srv, tmp_path, *args)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    r = aws(tls_srv, tmp_path, "s3", "ls", "s3://tls-cli/dir/")
    assert r.returncode == 0 and "big.bin" in r.stdout, r.stdout + r.stderr
    back = tmp_path / "back.bin"
    r = aws(tls_srv, tmp_path, "s3", "cp", "s3://tls-cli/dir/big.bin", str(back))
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == data
    r = aws(tls_srv, tmp_path, "s3api", "head-object", "--bucket", "tls-cli", "--key",
            "dir/big.bin")
    assert r.returncode == 0 and json.loads(r.stdout)["ContentLength"] == len(data), r.stderr
    # Against another certificate the client must refuse the server.
    r = aws(tls_srv, tmp_path, "s3", "ls", ca=False)
    assert r.returncode != 0 and "SSL" in r.stderr.upper(), (r.stdout, r.stderr)


@pytest.mark.skipif(not CHROMIUM, reason="Debian's chromium is not installed")
def test_chromium_upload_over_tls(tls_srv):
    s3 = boto3.client("s3", endpoint_url=tls_srv.endpoint, aws_access_key_id=ADMIN_KEY,
                      aws_secret_access_key=ADMIN_SECRET, region_name=REGION,
                      verify=tls_srv.cert,
                      config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    b, other = "tls-browser", "tls-nocors"
    s3.create_bucket(Bucket=b)
    s3.create_bucket(Bucket=other, ACL="public-read")
    s3.put_object(Bucket=other, Key="x", Body=b"x", ACL="public-read")
    origin_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    origin = "http://127.0.0.1:%d" % origin_srv.server_address[1]
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": [origin], "AllowedMethods": ["GET", "PUT", "POST"],
        "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 60}]})
    content = "uploaded by a browser over TLS \u2713"
    post = s3.generate_presigned_post(b, "web/${filename}",
                                      Conditions=[["starts-with", "$key", "web/"],
                                                  ["content-length-range", 1, 4096]],
                                      ExpiresIn=300)
    assert post["url"].startswith("https://"), post["url"]
    url = lambda m, k, **p: s3.generate_presigned_url(m, Params=dict(Bucket=b, Key=k, **p))  # noqa
    cfg = {"post": post, "content": content,
           "get_url": url("get_object", "web/browser.txt"),
           "put_url": url("put_object", "web/put.txt", ContentType="text/plain"),
           "get2_url": url("get_object", "web/put.txt"),
           "denied_url": "%s/%s/x" % (tls_srv.endpoint, other)}
    run_page(origin_srv, origin, cfg, "--ignore-certificate-errors")
    res = Origin.result
    assert "error" not in res, res
    assert res["post_status"] == 204 and res["post_etag"], res
    assert res["get_status"] == 200 and res["get_text"] == content, res
    assert res["put_status"] == 200 and res["put_etag"], res
    assert res["get2_text"] == content + " (put)", res
    assert res["denied"] == "blocked", res
    assert s3.get_object(Bucket=b, Key="web/browser.txt")["Body"].read().decode() == content
