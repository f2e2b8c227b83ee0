"""Bucket settings (policy, public access block, ACLs, CORS) are compiled once
per change and cached by each cairnd (src/objects/cache.c), validated by the
bucket's generation in every request's own read.  Every change must be
honoured by the very next request: one made through the same server's S3
API, and one made by another process on the same data directory while the
server runs (objects_admin writes the metadata directly)."""
import json
import os

import requests

from conftest import BUILD, run
from s3fixtures import bucket, s3, s3srv  # noqa: F401


def anon_get(srv, b, key="k", origin=None):
    headers = {"Origin": origin} if origin else {}
    return requests.get("%s/%s/%s" % (srv.endpoint, b, key), headers=headers)


def anon_list(srv, b):
    return requests.get("%s/%s" % (srv.endpoint, b)).status_code


def status_twice(srv, b):
    """An anonymous GET's status, asked twice so that the second answer
    comes from a warm cache; both must agree."""
    first = anon_get(srv, b).status_code
    assert anon_get(srv, b).status_code == first
    return first


def public_read_policy(b):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::%s/*" % b}]})


def objects_admin(srv, *args):
    path = os.path.join(BUILD, "tests", "objects", "objects_admin")
    r = run([path, srv.data_dir, "admin"] + list(args))
    assert r.returncode == 0, r.stderr


def test_policy_and_access_block_through_s3(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    assert status_twice(s3srv, bucket) == 403
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read_policy(bucket))
    assert status_twice(s3srv, bucket) == 200
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": True})
    assert status_twice(s3srv, bucket) == 403
    s3.delete_public_access_block(Bucket=bucket)
    assert status_twice(s3srv, bucket) == 200
    s3.delete_bucket_policy(Bucket=bucket)
    assert status_twice(s3srv, bucket) == 403


def test_acls_through_s3(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    assert anon_list(s3srv, bucket) == 403
    assert anon_list(s3srv, bucket) == 403
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert anon_list(s3srv, bucket) == 200
    assert anon_list(s3srv, bucket) == 200
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    assert anon_list(s3srv, bucket) == 403
    s3.put_object_acl(Bucket=bucket, Key="k", ACL="public-read")
    assert status_twice(s3srv, bucket) == 200
    s3.put_object_acl(Bucket=bucket, Key="k", ACL="private")
    assert status_twice(s3srv, bucket) == 403


def test_cors_through_s3(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v", ACL="public-read")

    def allowed(origin):
        r = anon_get(s3srv, bucket, origin=origin)
        assert r.status_code == 200
        return r.headers.get("Access-Control-Allow-Origin")

    def rules(origin):
        return {"CORSRules": [{"AllowedOrigins": [origin], "AllowedMethods": ["GET"]}]}

    assert allowed("http://one.test") is None
    assert allowed("http://one.test") is None
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=rules("http://one.test"))
    assert allowed("http://one.test") == "http://one.test"
    assert allowed("http://one.test") == "http://one.test"
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=rules("http://two.test"))
    assert allowed("http://one.test") is None
    assert allowed("http://two.test") == "http://two.test"
    s3.delete_bucket_cors(Bucket=bucket)
    assert allowed("http://two.test") is None


def test_changes_by_another_process(s3srv, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    assert status_twice(s3srv, bucket) == 403
    pol = tmp_path / "public-read.json"
    pol.write_text(public_read_policy(bucket))
    objects_admin(s3srv, "policy", bucket, str(pol))
    assert status_twice(s3srv, bucket) == 200
    objects_admin(s3srv, "pab", bucket, "8")            # RestrictPublicBuckets
    assert status_twice(s3srv, bucket) == 403
    objects_admin(s3srv, "pab", bucket, "-")
    assert status_twice(s3srv, bucket) == 200
    objects_admin(s3srv, "policy", bucket, "-")
    assert status_twice(s3srv, bucket) == 403
    assert anon_list(s3srv, bucket) == 403
    objects_admin(s3srv, "visibility", bucket, "public")
    assert anon_list(s3srv, bucket) == 200
    assert anon_list(s3srv, bucket) == 200
    objects_admin(s3srv, "visibility", bucket, "private")
    assert anon_list(s3srv, bucket) == 403
