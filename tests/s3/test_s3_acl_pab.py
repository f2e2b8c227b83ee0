"""Public access block (Get/Put/Delete and each flag's effect on ACLs and
policies), GetBucketPolicyStatus, and bucket policies with principals and
conditions, enforced on S3 and on the native protocol alike."""
import json

import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import bucket, jayclient, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


@pytest.fixture(scope="module")
def other(s3srv):
    name = unique("carol")
    key, secret = s3srv.new_account(name)
    return {"name": name, "client": s3srv.client(key, secret), "cred": "%s:%s" % (key, secret)}


def pab(**flags):
    return {k: flags.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls",
                                             "BlockPublicPolicy", "RestrictPublicBuckets")}


def public_read_policy(b):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::%s/*" % b}]})


def test_pab_roundtrip(s3srv, s3, other, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=pab(
        BlockPublicAcls=True, RestrictPublicBuckets=True))
    got = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert got == pab(BlockPublicAcls=True, RestrictPublicBuckets=True)
    # Only the bucket owner configures it.
    for call in (lambda: other["client"].get_public_access_block(Bucket=bucket),
                 lambda: other["client"].put_public_access_block(
                     Bucket=bucket, PublicAccessBlockConfiguration=pab()),
                 lambda: other["client"].delete_public_access_block(Bucket=bucket)):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    s3.delete_public_access_block(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    s3.delete_public_access_block(Bucket=bucket)          # idempotent
    r = s3srv.signed("PUT", "/%s" % bucket, params={"publicAccessBlock": ""},
                     body=b"<PublicAccessBlockConfiguration><BlockPublicAcls>maybe"
                          b"</BlockPublicAcls></PublicAccessBlockConfiguration>")
    assert r.status_code == 400 and "MalformedXML" in r.text
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket="no-such-bucket-pab")
    assert code(e) == "NoSuchBucket"


def test_block_public_acls(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="before", Body=b"b", ACL="public-read")
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=pab(
        BlockPublicAcls=True))
    refused = [
        lambda: s3.put_bucket_acl(Bucket=bucket, ACL="public-read"),
        lambda: s3.put_bucket_acl(Bucket=bucket, ACL="authenticated-read"),
        lambda: s3.put_object(Bucket=bucket, Key="k", Body=b"k", ACL="public-read"),
        lambda: s3.put_object(Bucket=bucket, Key="k", Body=b"k",
                              GrantRead="uri=http://acs.amazonaws.com/groups/global/AllUsers"),
        lambda: s3.put_object_acl(Bucket=bucket, Key="before", ACL="public-read-write"),
        lambda: s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket,
                                                                  "Key": "before"},
                               ACL="public-read"),
        lambda: s3.create_multipart_upload(Bucket=bucket, Key="m", ACL="public-read"),
    ]
    for call in refused:
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    # Nothing was written by the refused put; private writes still work.
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")
    s3.put_object(Bucket=bucket, Key="k", Body=b"k", ACL="private")
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    # Existing public grants still count (that is IgnorePublicAcls' job).
    assert requests.get(s3srv.endpoint + "/%s/before" % bucket).content == b"b"


def test_ignore_public_acls(s3srv, s3, other):
    b = unique("ign")
    s3.create_bucket(Bucket=b, ACL="public-read")
    s3.put_object(Bucket=b, Key="pub", Body=b"pub", ACL="public-read")
    s3.put_object(Bucket=b, Key="auth", Body=b"auth", ACL="authenticated-read")
    s3.put_object(Bucket=b, Key="named", Body=b"named", GrantRead='id="%s"' % other["name"])
    anon = s3srv.anon()
    assert anon.get_object(Bucket=b, Key="pub")["Body"].read() == b"pub"
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=pab(IgnorePublicAcls=True))
    for call in (lambda: anon.get_object(Bucket=b, Key="pub"),
                 lambda: anon.list_objects_v2(Bucket=b),
                 lambda: other["client"].get_object(Bucket=b, Key="auth")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    # A grant to a named account is not public and still counts.
    assert other["client"].get_object(Bucket=b, Key="named")["Body"].read() == b"named"
    # Public ACLs may still be stored; they are ignored.
    s3.put_object_acl(Bucket=b, Key="pub", ACL="public-read")
    s3.delete_public_access_block(Bucket=b)
    assert anon.get_object(Bucket=b, Key="pub")["Body"].read() == b"pub"


def test_block_public_policy_and_status(s3srv, s3, other, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy_status(Bucket=bucket)
    assert code(e) == "NoSuchBucketPolicy"
    named = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::%s:root" % other["name"]},
        "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/*" % bucket}]})
    s3.put_bucket_policy(Bucket=bucket, Policy=named)
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read_policy(bucket))
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    ip_pinned = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::%s/*" % bucket,
        "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}}]})
    s3.put_bucket_policy(Bucket=bucket, Policy=ip_pinned)
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=pab(
        BlockPublicPolicy=True))
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=public_read_policy(bucket))
    assert code(e) == "AccessDenied"
    s3.put_bucket_policy(Bucket=bucket, Policy=named)     # not public: accepted
    with pytest.raises(ClientError) as e:
        other["client"].get_bucket_policy_status(Bucket=bucket)
    assert code(e) == "AccessDenied"
    s3.delete_public_access_block(Bucket=bucket)
    s3.delete_bucket_policy(Bucket=bucket)


def test_restrict_public_buckets(s3srv, s3, other, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=b"r")
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read_policy(bucket))
    url = s3srv.endpoint + "/%s/r" % bucket
    assert requests.get(url).content == b"r"
    assert other["client"].get_object(Bucket=bucket, Key="r")["Body"].read() == b"r"
    with s3srv.jay() as j:
        assert j.head_bucket(bucket)["visibility"] == "public"
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=pab(
        RestrictPublicBuckets=True))
    with s3srv.jay() as j:
        assert j.head_bucket(bucket)["visibility"] == "private"
    assert requests.get(url).status_code == 403
    with pytest.raises(ClientError) as e:
        other["client"].get_object(Bucket=bucket, Key="r")
    assert code(e) == "AccessDenied"
    with s3srv.jay(other["cred"]) as j:
        with pytest.raises(jayclient.JayError) as je:
            j.get_object(bucket, "r")
        assert je.value.status == jayclient.ST_FORBIDDEN
    assert s3.get_object(Bucket=bucket, Key="r")["Body"].read() == b"r"
    s3.delete_public_access_block(Bucket=bucket)
    assert requests.get(url).content == b"r"
    s3.delete_bucket_policy(Bucket=bucket)


# ---- policies with principals and conditions -----------------------------------------------

def test_policy_principals_actions_and_prefix_condition(s3srv, s3, other, bucket):
    bob = other["client"]
    for k in ("home/carol/a", "home/dave/b", "pub/c"):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "list-own-prefix", "Effect": "Allow", "Principal": {"AWS": [other["name"]]},
         "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % bucket,
         "Condition": {"StringLike": {"s3:prefix": ["home/carol/*", "pub/*"]}}},
        {"Sid": "get-any", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::%s:root"
                                                            % other["name"]},
         "Action": "s3:Get*", "Resource": "arn:aws:s3:::%s/*" % bucket},
        {"Sid": "but-not-dave", "Effect": "Deny", "Principal": "*",
         "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/home/dave/*" % bucket}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    keys = [o["Key"] for o in bob.list_objects_v2(Bucket=bucket, Prefix="home/carol/")["Contents"]]
    assert keys == ["home/carol/a"]
    with pytest.raises(ClientError) as e:
        bob.list_objects_v2(Bucket=bucket, Prefix="home/dave/")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        bob.list_objects_v2(Bucket=bucket)
    assert code(e) == "AccessDenied"
    assert bob.get_object(Bucket=bucket, Key="pub/c")["Body"].read() == b"pub/c"
    with pytest.raises(ClientError) as e:
        bob.get_object(Bucket=bucket, Key="home/dave/b")
    assert code(e) == "AccessDenied"
    # An explicit Deny binds the owner too.
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="home/dave/b")
    assert code(e) == "AccessDenied"
    # The native protocol enforces the same policy for the same account.
    with s3srv.jay(other["cred"]) as j:
        assert j.get_object(bucket, "pub/c")[1] == b"pub/c"
        with pytest.raises(jayclient.JayError) as je:
            j.get_object(bucket, "home/dave/b")
        assert je.value.status == jayclient.ST_FORBIDDEN
    s3.delete_bucket_policy(Bucket=bucket)


def test_policy_condition_on_canned_acl(s3srv, s3, other, bucket):
    bob = other["client"]
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": other["name"]}, "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % bucket,
         "Condition": {"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}}}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    with pytest.raises(ClientError) as e:
        bob.put_object(Bucket=bucket, Key="drop", Body=b"d")
    assert code(e) == "AccessDenied"
    bob.put_object(Bucket=bucket, Key="drop", Body=b"d", ACL="bucket-owner-full-control")
    assert s3.get_object(Bucket=bucket, Key="drop")["Body"].read() == b"d"
    s3.delete_bucket_policy(Bucket=bucket)


def test_policy_max_keys_and_delimiter_conditions(s3srv, s3, other, bucket):
    bob = other["client"]
    s3.put_object(Bucket=bucket, Key="a/1", Body=b"1")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": other["name"]}, "Action": "s3:ListBucket",
         "Resource": "arn:aws:s3:::%s" % bucket,
         "Condition": {"StringEquals": {"s3:delimiter": "/"},
                       "NumericLessThanEquals": {"s3:max-keys": "10"}}}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    assert bob.list_objects_v2(Bucket=bucket, Delimiter="/", MaxKeys=5)["CommonPrefixes"] == \
        [{"Prefix": "a/"}]
    for kw in ({"Delimiter": "/", "MaxKeys": 50}, {"MaxKeys": 5}):
        with pytest.raises(ClientError) as e:
            bob.list_objects_v2(Bucket=bucket, **kw)
        assert code(e) == "AccessDenied", kw
    s3.delete_bucket_policy(Bucket=bucket)
