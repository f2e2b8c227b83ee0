"""Bucket policy through S3 (Get/Put/Delete, MalformedPolicy, status) and its
effect: anonymous reads where the policy allows them, deny by source IP, a
denied second account, and the same policy seen by the native protocol."""
import json

import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import bucket, jayclient, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


def public_read(b):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "pub", "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"],
        "Resource": ["arn:aws:s3:::%s/*" % b]}]})


def test_policy_roundtrip_and_errors(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert code(e) == "NoSuchBucketPolicy"
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read(bucket))
    got = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    assert got["Statement"][0]["Sid"] == "pub"
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    s3.delete_bucket_policy(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert code(e) == "NoSuchBucketPolicy"
    for bad in ["not json", "{}", json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::some-other-bucket/*"}]})]:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_policy(Bucket=bucket, Policy=bad)
        assert code(e) == "MalformedPolicy", bad
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket="no-such-bucket-p", Policy=public_read("no-such-bucket-p"))
    assert code(e) == "NoSuchBucket"


def test_anonymous_read_by_policy(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pub.txt", Body=b"public bytes")
    url = s3srv.endpoint + "/%s/pub.txt" % bucket
    assert requests.get(url).status_code == 403
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read(bucket))
    r = requests.get(url)
    assert r.status_code == 200 and r.content == b"public bytes"
    assert s3srv.anon().get_object(Bucket=bucket, Key="pub.txt")["Body"].read() == b"public bytes"
    # Reading is all the policy grants.
    assert requests.put(url, data=b"overwrite").status_code == 403
    assert requests.delete(url).status_code == 403
    s3.delete_bucket_policy(Bucket=bucket)
    assert requests.get(url).status_code == 403


def test_deny_by_source_ip(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="ip", Body=b"ip")
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": ["arn:aws:s3:::%s" % bucket, "arn:aws:s3:::%s/*" % bucket],
        "Condition": {"NotIpAddress": {"aws:SourceIp": "10.9.8.0/24"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutBucketPolicy",
         "Resource": "arn:aws:s3:::%s" % bucket}]}
    deny_get = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::%s/*" % bucket,
        "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(deny_get))
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="ip")
    assert code(e) == "AccessDenied"
    # X-Forwarded-For is not trusted without JAY_TRUST_PROXY_HEADERS.
    r = s3srv.signed("GET", "/%s/ip" % bucket, headers={"X-Forwarded-For": "203.0.113.5"})
    assert r.status_code == 403
    s3.delete_bucket_policy(Bucket=bucket)
    assert s3.get_object(Bucket=bucket, Key="ip")["Body"].read() == b"ip"
    del policy


def test_trusted_proxy_header(server_factory):
    from s3fixtures import own_server
    s = own_server(server_factory, env={"JAY_TRUST_PROXY_HEADERS": "1"})
    c = s.client()
    c.create_bucket(Bucket="proxied")
    c.put_object(Bucket="proxied", Key="k", Body=b"v")
    c.put_bucket_policy(Bucket="proxied", Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::proxied/*",
            "Condition": {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}}]}))
    assert s.signed("GET", "/proxied/k").status_code == 200
    # aws:SourceIp is the entry the proxy appended (the rightmost) ...
    r = s.signed("GET", "/proxied/k", headers={"X-Forwarded-For": "10.0.0.1, 203.0.113.5"})
    assert r.status_code == 403
    # ... never one the client wrote to its left
    r = s.signed("GET", "/proxied/k", headers={"X-Forwarded-For": "203.0.113.5, 10.0.0.1"})
    assert r.status_code == 200


def test_policy_denies_other_account_on_both_faces(s3srv, s3, bucket):
    name = unique("bob")
    key, secret = s3srv.new_account(name)
    bob = s3srv.client(key, secret)
    s3.put_object(Bucket=bucket, Key="shared", Body=b"shared")
    allow = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::%s:root" % name]},
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": ["arn:aws:s3:::%s" % bucket, "arn:aws:s3:::%s/*" % bucket]}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(allow))
    assert bob.get_object(Bucket=bucket, Key="shared")["Body"].read() == b"shared"
    with s3srv.jay("%s:%s" % (key, secret)) as j:
        info, data = j.get_object(bucket, "shared")
        assert data == b"shared"
    deny = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": {"AWS": ["arn:aws:iam::%s:root" % name]},
        "Action": "s3:*", "Resource": ["arn:aws:s3:::%s" % bucket, "arn:aws:s3:::%s/*" % bucket]}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(deny))
    with pytest.raises(ClientError) as e:
        bob.get_object(Bucket=bucket, Key="shared")
    assert code(e) == "AccessDenied"
    with s3srv.jay("%s:%s" % (key, secret)) as j:
        with pytest.raises(jayclient.JayError) as je:
            j.get_object(bucket, "shared")
        assert je.value.status == jayclient.ST_FORBIDDEN
    s3.delete_bucket_policy(Bucket=bucket)


def test_other_account_denied_without_grant(s3srv, s3, bucket):
    key, secret = s3srv.new_account(unique("eve"))
    eve = s3srv.client(key, secret)
    s3.put_object(Bucket=bucket, Key="private", Body=b"p")
    for call in (lambda: eve.get_object(Bucket=bucket, Key="private"),
                 lambda: eve.put_object(Bucket=bucket, Key="x", Body=b"x"),
                 lambda: eve.list_objects_v2(Bucket=bucket),
                 lambda: eve.delete_bucket(Bucket=bucket),
                 lambda: eve.get_bucket_policy(Bucket=bucket)):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    assert bucket not in [b["Name"] for b in eve.list_buckets()["Buckets"]]


def test_token_permissions_are_a_ceiling(s3srv, s3):
    name = unique("ro")
    key, secret = s3srv.new_account(name, perms=["object:get", "object:list", "bucket:list"])
    ro = s3srv.client(key, secret)
    with pytest.raises(ClientError) as e:
        ro.create_bucket(Bucket=unique())
    assert code(e) == "AccessDenied"


def test_canned_acls_and_native_visibility(s3srv, s3):
    pub = unique("pubacl")
    s3.create_bucket(Bucket=pub, ACL="public-read")
    s3.put_object(Bucket=pub, Key="obj", Body=b"pub", ACL="public-read")
    s3.put_object(Bucket=pub, Key="priv", Body=b"priv")
    anon = s3srv.anon()
    assert [o["Key"] for o in anon.list_objects_v2(Bucket=pub)["Contents"]] == ["obj", "priv"]
    assert anon.get_object(Bucket=pub, Key="obj")["Body"].read() == b"pub"
    with pytest.raises(ClientError) as e:
        anon.get_object(Bucket=pub, Key="priv")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        anon.put_object(Bucket=pub, Key="w", Body=b"w")
    assert code(e) == "AccessDenied"
    with s3srv.jay() as j:
        assert j.head_bucket(pub)["visibility"] == "public"
    priv = unique("privacl")
    s3.create_bucket(Bucket=priv)
    with s3srv.jay() as j:
        assert j.head_bucket(priv)["visibility"] == "private"
    with pytest.raises(ClientError) as e:
        anon.list_objects_v2(Bucket=priv)
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=priv, Key="x", Body=b"x", ACL="world-writable")
    assert code(e) == "InvalidArgument"
