"""Stored bytes served on the console's origin carry Content-Security-Policy:
sandbox and X-Content-Type-Options: nosniff beyond plain S3 GETs: a blob
fetched through the blob operation family (channels/blobs/sub, whole and
ranged) and a versioned S3 GET and HEAD (?versionId= of an older version),
each through the real cairnd over real sockets."""
import json

import boto3
import pytest
import requests
from botocore.config import Config

from cairnutil import no_sanitizer_report
from conftest import ADMIN_TOKEN, binary, run

HTML = b"<html><script>fetch('/_cairn/console/api/session')</script></html>"
NS = "pages"


def admin(srv, *args):
    r = run([binary("cairn"), "admin", "--data", srv.data_dir] + list(args))
    no_sanitizer_report(r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture
def srv(server_factory):
    return server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                          wait_for=("http",))


def base(srv):
    host, port = srv.addrs["http"]
    return "http://%s:%d" % (host, port)


def sandboxed(headers, what):
    assert headers.get("Content-Security-Policy") == "sandbox", (what, dict(headers))
    assert headers.get("X-Content-Type-Options") == "nosniff", (what, dict(headers))


def test_blob_fetch_is_sandboxed(srv):
    admin(srv, "account", "create", "blobber")
    out = admin(srv, "token", "create", "--account", "blobber", "--perm", "blobs:read",
                "--perm", "blobs:write")
    cred = out.split()[-1].strip()
    for action in ("read", "write"):
        admin(srv, "grant", "--namespace", NS, "--account", "blobber", "--action", action)
    auth = {"Authorization": "Bearer " + cred}
    ops = base(srv) + "/_cairn/ops"
    r = requests.post(ops + "/blobs/put", data=HTML, timeout=30,
                      headers={**auth, "Cairn-Offer": json.dumps({"namespace": NS})})
    assert r.status_code == 200, r.text
    digest = r.json()["digest"]
    for ranges in (None, [[0, 6]]):
        params = {"namespace": NS, "digest": digest}
        if ranges is not None:
            params["ranges"] = ranges
        r = requests.post(ops + "/channels/blobs/sub", data=json.dumps(params), headers=auth,
                          timeout=30)
        assert r.status_code == 200, r.text
        assert r.content == (HTML if ranges is None else HTML[:6])
        sandboxed(r.headers, "blob fetch ranges=%r" % (ranges,))


def test_versioned_get_is_sandboxed(srv):
    key, secret = ADMIN_TOKEN.split(":", 1)
    s3 = boto3.client("s3", endpoint_url=base(srv), aws_access_key_id=key,
                      aws_secret_access_key=secret, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 0}, signature_version="s3v4"))
    s3.create_bucket(Bucket="kept")
    s3.put_bucket_versioning(Bucket="kept", VersioningConfiguration={"Status": "Enabled"})
    old = s3.put_object(Bucket="kept", Key="p.html", Body=HTML, ContentType="text/html")
    s3.put_object(Bucket="kept", Key="p.html", Body=b"newer", ContentType="text/plain")
    vid = old.get("VersionId")
    assert vid and vid != "null", old
    for _ in range(2):  # the second read may come from the loop's cache
        r = s3.get_object(Bucket="kept", Key="p.html", VersionId=vid)
        assert r["Body"].read() == HTML
        h = r["ResponseMetadata"]["HTTPHeaders"]
        assert h["content-type"] == "text/html"
        assert h.get("content-security-policy") == "sandbox", h
        assert h.get("x-content-type-options") == "nosniff", h
    r = s3.get_object(Bucket="kept", Key="p.html", VersionId=vid, Range="bytes=0-5")
    assert r["Body"].read() == HTML[:6]
    h = r["ResponseMetadata"]["HTTPHeaders"]
    assert h.get("content-security-policy") == "sandbox" and h.get("x-content-type-options") == "nosniff"
    h = s3.head_object(Bucket="kept", Key="p.html", VersionId=vid)["ResponseMetadata"]["HTTPHeaders"]
    assert h.get("content-security-policy") == "sandbox" and h.get("x-content-type-options") == "nosniff"
