"""Usage totals through the console API, against the real cairnd: a bucket's
objects, versions and bytes (GET buckets, GET buckets/B) stay exact through
1,200 concurrent PUTs, overwrites, deletes, versioned overwrites and delete
markers, checked against S3's own listings; and GET namespaces shows an
admin every namespace holding members, with its member count and bytes,
even one nobody holds a grant on."""
import concurrent.futures
import json

import requests

from cairnutil import no_sanitizer_report
from conftest import binary, run
from test_console_api import Api, s3_client

import pytest


@pytest.fixture
def node(server_factory):
    return server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                          wait_for=("http",))


def listed_truth(s3, bucket):
    """(objects, versions, bytes) counted from S3's ListObjectVersions."""
    objects = versions = size = 0
    pages = s3.get_paginator("list_object_versions").paginate(Bucket=bucket)
    for page in pages:
        for v in page.get("Versions", []):
            versions += 1
            size += v["Size"]
            objects += 1 if v["IsLatest"] else 0
    return objects, versions, size


def figures(api, bucket):
    one = api.ok("GET", "buckets/" + bucket)
    row = [b for b in api.ok("GET", "buckets")["buckets"] if b["name"] == bucket][0]
    got = (one["objects"], one["versions"], one["bytes"])
    assert (row["objects"], row["versions"], row["bytes"]) == got
    return got


def test_bucket_figures_exact_after_1200_puts_and_deletes(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "plain"}, 201)
    api.ok("POST", "buckets", {"name": "kept"}, 201)
    s3.put_bucket_versioning(Bucket="kept", VersioningConfiguration={"Status": "Enabled"})
    assert figures(api, "plain") == (0, 0, 0)

    def put(i):
        # 1,200 keys in plain, sizes 1..97; every 4th overwritten larger; every 7th
        # deleted.  kept: 100 keys twice (old versions stay), every 10th deleted
        # (a marker: the key is gone, its versions are not).
        s3.put_object(Bucket="plain", Key="k%04d" % i, Body=b"x" * (i % 97 + 1))
        if i % 4 == 0:
            s3.put_object(Bucket="plain", Key="k%04d" % i, Body=b"y" * (i % 97 + 2))
        if i % 7 == 0:
            s3.delete_object(Bucket="plain", Key="k%04d" % i)
        if i < 100:
            for body in (b"a" * i, b"b" * (2 * i)):
                s3.put_object(Bucket="kept", Key="v%03d" % i, Body=body)
            if i % 10 == 0:
                s3.delete_object(Bucket="kept", Key="v%03d" % i)

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(put, range(1200)))

    want_objects = sum(1 for i in range(1200) if i % 7)
    want_bytes = sum(i % 97 + 1 + (i % 4 == 0) for i in range(1200) if i % 7)
    assert figures(api, "plain") == (want_objects, want_objects, want_bytes)
    assert listed_truth(s3, "plain") == (want_objects, want_objects, want_bytes)

    kept = (90, 200, sum(3 * i for i in range(100)))
    assert figures(api, "kept") == kept
    assert listed_truth(s3, "kept") == kept

    # Removing versions for good frees their bytes; emptied, the bucket is 0.
    for page in s3.get_paginator("list_object_versions").paginate(Bucket="kept"):
        for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket="kept", Key=v["Key"], VersionId=v["VersionId"])
    assert figures(api, "kept") == (0, 0, 0)


def admin(srv, *args):
    r = run([binary("cairn"), "admin", "--data", srv.data_dir] + list(args))
    no_sanitizer_report(r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_admin_sees_every_namespace_with_members_and_bytes(node):
    admin(node, "account", "create", "blobber")
    out = admin(node, "token", "create", "--account", "blobber", "--perm", "blobs:read",
                "--perm", "blobs:write")
    cred = out.split()[-1].strip()
    admin(node, "grant", "--namespace", "team/data", "--account", "blobber", "--action", "write")
    host, port = node.addrs["http"]
    ops = "http://%s:%d/_cairn/ops" % (host, port)
    sizes = [10, 200, 3000, 200]  # the last repeats the second's bytes: one member
    for n in sizes:
        body = b"%d" % n + b"z" * (n - len(b"%d" % n))
        r = requests.post(ops + "/blobs/put", data=body, timeout=60,
                          headers={"Authorization": "Bearer " + cred,
                                   "Cairn-Offer": json.dumps({"namespace": "team/data"})})
        assert r.status_code == 200, r.text
    api = Api(node.addrs["http"])
    want = {"name": "team/data", "members": 3, "bytes": 3210}
    assert want in api.ok("GET", "namespaces")["namespaces"]
    # Without any grant left it is still an admin's to see.
    assert api.raw("DELETE", "namespaces/team/data/grants/blobber")[0] == 204
    assert api.ok("GET", "namespaces/team/data/grants")["grants"] == []
    assert want in api.ok("GET", "namespaces")["namespaces"]
    # The writer, with no read grant, sees no figures and now no namespace.
    blobber = Api(node.addrs["http"], cred)
    assert blobber.ok("GET", "namespaces")["namespaces"] == []
