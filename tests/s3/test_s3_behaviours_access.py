"""S3 behaviours real clients rely on (issue 14), written from the AWS S3 API
reference rather than from cairn's code:

- ListObjectVersions on a bucket that was never versioned: every object is
  one <Version> whose VersionId is "null" and IsLatest true, in a
  ListVersionsResult; prefix, delimiter, max-keys, key-marker /
  version-id-marker paging, encoding-type=url; authorized as
  s3:ListBucketVersions.  GetBucketVersioning answers an empty
  VersioningConfiguration (no Status) for such a bucket.
- Bucket policies with NotPrincipal (the statement applies to every principal
  except those listed) and with the s3:x-amz-grant-* condition keys, enforced
  on PutObject, CopyObject, CreateMultipartUpload, PutObjectAcl and
  PutBucketAcl.
- POST uploads whose key holds ${filename}: the policy's $key conditions judge
  the key after the substitution.
- Conditional headers in the three HTTP date forms (RFC 1123, RFC 850,
  asctime)."""
import base64
import datetime
import hashlib
import hmac
import json
import re
import urllib.parse
import xml.etree.ElementTree as ET

import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION, bucket, s3, s3srv, unique  # noqa: F401

S3NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


def code(exc):
    return exc.value.response["Error"]["Code"]


def denied(fn):
    """True when fn is refused with AccessDenied (it must be refused)."""
    with pytest.raises(ClientError) as e:
        fn()
    return code(e) in ("AccessDenied", "403")


@pytest.fixture(scope="module")
def accounts(s3srv):
    """Two more accounts (bob, carol), each {"name", "client"}."""
    out = {}
    for who in ("bob", "carol"):
        name = unique(who)
        key, secret = s3srv.new_account(name)
        out[who] = {"name": name, "client": s3srv.client(key, secret)}
    return out


def put_policy(s3, b, statements):
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": statements}))


# ---- ListObjectVersions ----------------------------------------------------------------

def test_versions_lists_every_object_as_its_null_latest_version(s3srv, s3, bucket):
    bodies = {"a.txt": b"alpha", "dir/b.bin": b"bravo!", "z": b""}
    for k, v in bodies.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    got = s3.list_object_versions(Bucket=bucket)
    assert got["Name"] == bucket and got["IsTruncated"] is False
    assert "DeleteMarkers" not in got
    vs = got["Versions"]
    assert [v["Key"] for v in vs] == sorted(bodies)
    heads = {k: s3.head_object(Bucket=bucket, Key=k) for k in bodies}
    for v in vs:
        assert v["VersionId"] == "null" and v["IsLatest"] is True
        assert v["ETag"] == '"%s"' % hashlib.md5(bodies[v["Key"]]).hexdigest()
        assert v["Size"] == len(bodies[v["Key"]])
        assert v["StorageClass"] == "STANDARD"
        assert v["Owner"]["ID"] == "admin"
        # The header has whole seconds, the listing milliseconds.
        assert v["LastModified"].replace(microsecond=0) == heads[v["Key"]]["LastModified"]
    # The document itself: ListVersionsResult in the S3 namespace.
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": ""})
    assert r.status_code == 200, r.text
    root = ET.fromstring(r.content)
    assert root.tag == S3NS + "ListVersionsResult"
    assert len(root.findall(S3NS + "Version")) == 3
    assert root.find(S3NS + "MaxKeys").text == "1000"
    # An object written over is still one version: there is no history.
    s3.put_object(Bucket=bucket, Key="a.txt", Body=b"alpha 2")
    vs = s3.list_object_versions(Bucket=bucket, Prefix="a.txt")["Versions"]
    assert len(vs) == 1 and vs[0]["Size"] == 7


def test_versions_prefix_delimiter_and_common_prefixes(s3, bucket):
    for k in ["photos/2025/a.jpg", "photos/2025/b.jpg", "photos/2026/c.jpg", "photos/top.jpg",
              "notes.txt"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    got = s3.list_object_versions(Bucket=bucket, Prefix="photos/", Delimiter="/")
    assert got["Prefix"] == "photos/" and got["Delimiter"] == "/"
    assert [v["Key"] for v in got["Versions"]] == ["photos/top.jpg"]
    assert [p["Prefix"] for p in got["CommonPrefixes"]] == ["photos/2025/", "photos/2026/"]
    got = s3.list_object_versions(Bucket=bucket, Delimiter="/")
    assert [v["Key"] for v in got["Versions"]] == ["notes.txt"]
    assert [p["Prefix"] for p in got["CommonPrefixes"]] == ["photos/"]
    got = s3.list_object_versions(Bucket=bucket, Prefix="nothing/")
    assert "Versions" not in got and got["IsTruncated"] is False


def test_versions_max_keys_and_paging_with_next_markers(s3, bucket):
    keys = ["k%02d" % i for i in range(7)] + ["sub/1", "sub/2"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    # Without a delimiter: pages of 3, resumed from NextKeyMarker / NextVersionIdMarker.
    seen, km, vm, pages = [], None, None, 0
    while True:
        args = {"Bucket": bucket, "MaxKeys": 3}
        if km is not None:
            args.update(KeyMarker=km, VersionIdMarker=vm)
        got = s3.list_object_versions(**args)
        pages += 1
        assert got["MaxKeys"] == 3 and len(got.get("Versions", [])) <= 3
        seen += [v["Key"] for v in got.get("Versions", [])]
        if not got["IsTruncated"]:
            assert "NextKeyMarker" not in got
            break
        km, vm = got["NextKeyMarker"], got["NextVersionIdMarker"]
        assert vm == "null"
    assert seen == sorted(keys) and pages == 3
    # Common prefixes count against max-keys; paging never repeats one.
    seen, km, pages = [], None, 0
    while True:
        args = {"Bucket": bucket, "MaxKeys": 2, "Delimiter": "/"}
        if km is not None:
            args["KeyMarker"] = km
        got = s3.list_object_versions(**args)
        pages += 1
        assert len(got.get("Versions", [])) + len(got.get("CommonPrefixes", [])) <= 2
        seen += [v["Key"] for v in got.get("Versions", [])]
        seen += [p["Prefix"] for p in got.get("CommonPrefixes", [])]
        if not got["IsTruncated"]:
            break
        km = got["NextKeyMarker"]
    assert seen == sorted(keys[:7] + ["sub/"]) and pages == 4
    # boto3's paginator walks the same markers.
    pag = s3.get_paginator("list_object_versions")
    listed = [v["Key"] for page in pag.paginate(Bucket=bucket, PaginationConfig={"PageSize": 4})
              for v in page.get("Versions", [])]
    assert listed == sorted(keys)


def test_versions_key_marker_and_version_id_marker(s3srv, s3, bucket):
    for k in ["a", "b", "c", "d"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    got = s3.list_object_versions(Bucket=bucket, KeyMarker="b")
    assert got["KeyMarker"] == "b"
    assert [v["Key"] for v in got["Versions"]] == ["c", "d"]
    got = s3.list_object_versions(Bucket=bucket, KeyMarker="b", VersionIdMarker="null")
    assert got["VersionIdMarker"] == "null"
    assert [v["Key"] for v in got["Versions"]] == ["c", "d"]
    got = s3.list_object_versions(Bucket=bucket, KeyMarker="bb")
    assert [v["Key"] for v in got["Versions"]] == ["c", "d"]
    # A version marker needs a key marker; no key has a version other than "null".
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": "", "version-id-marker": "null"})
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=bucket, KeyMarker="b", VersionIdMarker="3HL4kqtJlcpXroDTDmJ")
    assert code(e) == "InvalidArgument"
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": "", "max-keys": "-1"})
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text
    # max-keys=0: an empty page, not truncated.
    got = s3.list_object_versions(Bucket=bucket, MaxKeys=0)
    assert "Versions" not in got and got["IsTruncated"] is False


def test_versions_encoding_type_url(s3srv, s3, bucket):
    weird = ["a b/c+d", "\u00fc/\u00df", "\u00fc/x y", "x%y"]
    for k in weird:
        s3.put_object(Bucket=bucket, Key=k, Body=b"1")
    r = s3srv.signed("GET", "/%s" % bucket, params={
        "versions": "", "encoding-type": "url", "max-keys": "1", "prefix": "\u00fc/",
        "key-marker": "\u00fc/", "delimiter": "\u00df"})
    assert r.status_code == 200, r.text
    assert "<EncodingType>url</EncodingType>" in r.text
    assert "<Key>%C3%BC/x%20y</Key>" in r.text
    assert "<Prefix>%C3%BC/</Prefix>" in r.text and "<KeyMarker>%C3%BC/</KeyMarker>" in r.text
    assert "<Delimiter>%C3%9F</Delimiter>" in r.text
    assert "<NextKeyMarker>%C3%BC/x%20y</NextKeyMarker>" in r.text
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": "", "encoding-type": "url",
                                                    "max-keys": "1"})
    assert "<NextKeyMarker>a%20b/c%2Bd</NextKeyMarker>" in r.text
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": "", "encoding-type": "url"})
    listed = [urllib.parse.unquote(k) for k in re.findall(r"<Key>([^<]*)</Key>", r.text)]
    assert sorted(listed) == sorted(weird)
    # Not asked: not encoded, not echoed.
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": ""})
    assert "<EncodingType>" not in r.text and "<Key>a b/c+d</Key>" in r.text
    r = s3srv.signed("GET", "/%s" % bucket, params={"versions": "", "encoding-type": "base64"})
    assert r.status_code == 400
    got = [v["Key"] for v in s3.list_object_versions(Bucket=bucket)["Versions"]]
    assert sorted(got) == sorted(weird)


def test_versions_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket="no-such-bucket-v")
    assert code(e) == "NoSuchBucket"


def test_versions_authorized_as_list_bucket_versions(s3srv, s3, bucket, accounts):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    bob = accounts["bob"]
    # No grant: refused, and anonymous callers too.
    assert denied(lambda: bob["client"].list_object_versions(Bucket=bucket))
    assert denied(lambda: s3srv.anon().list_object_versions(Bucket=bucket))
    # s3:ListBucket does not cover it; s3:ListBucketVersions does (and only it).
    put_policy(s3, bucket, [{"Effect": "Allow", "Principal": {"AWS": bob["name"]},
                             "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % bucket}])
    assert bob["client"].list_objects_v2(Bucket=bucket)["KeyCount"] == 1
    assert denied(lambda: bob["client"].list_object_versions(Bucket=bucket))
    put_policy(s3, bucket, [{"Effect": "Allow", "Principal": {"AWS": bob["name"]},
                             "Action": "s3:ListBucketVersions",
                             "Resource": "arn:aws:s3:::%s" % bucket}])
    got = bob["client"].list_object_versions(Bucket=bucket)
    assert [v["Key"] for v in got["Versions"]] == ["k"]
    assert denied(lambda: bob["client"].list_objects_v2(Bucket=bucket))
    # Its condition keys are those of ListBucket: s3:prefix here.
    put_policy(s3, bucket, [{"Effect": "Allow", "Principal": {"AWS": bob["name"]},
                             "Action": "s3:ListBucketVersions",
                             "Resource": "arn:aws:s3:::%s" % bucket,
                             "Condition": {"StringEquals": {"s3:prefix": "public/"}}}])
    got = bob["client"].list_object_versions(Bucket=bucket, Prefix="public/")
    assert got["Prefix"] == "public/" and "Versions" not in got
    assert denied(lambda: bob["client"].list_object_versions(Bucket=bucket))
    # A Deny of s3:ListBucketVersions binds the owner too and leaves ListObjects alone.
    put_policy(s3, bucket, [{"Effect": "Deny", "Principal": "*",
                             "Action": "s3:ListBucketVersions",
                             "Resource": "arn:aws:s3:::%s" % bucket}])
    assert denied(lambda: s3.list_object_versions(Bucket=bucket))
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 1
    s3.delete_bucket_policy(Bucket=bucket)
    # The bucket ACL's READ grants it, as it grants listing.
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    got = s3srv.anon().list_object_versions(Bucket=bucket)
    assert [v["Key"] for v in got["Versions"]] == ["k"]


def test_get_bucket_versioning_never_versioned(s3srv, s3, bucket):
    got = s3.get_bucket_versioning(Bucket=bucket)
    assert "Status" not in got and "MFADelete" not in got
    r = s3srv.signed("GET", "/%s" % bucket, params={"versioning": ""})
    assert r.status_code == 200
    root = ET.fromstring(r.content)
    assert root.tag == S3NS + "VersioningConfiguration" and len(root) == 0
    with pytest.raises(ClientError) as e:
        s3.get_bucket_versioning(Bucket="no-such-bucket-v")
    assert code(e) == "NoSuchBucket"


# ---- NotPrincipal -------------------------------------------------------------------------

def test_not_principal_deny_applies_to_everyone_not_listed(s3srv, s3, bucket, accounts):
    s3.put_object(Bucket=bucket, Key="doc", Body=b"secret")
    bob, carol = accounts["bob"], accounts["carol"]
    put_policy(s3, bucket, [
        {"Sid": "read", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/*" % bucket},
        {"Sid": "onlybob", "Effect": "Deny",
         "NotPrincipal": {"AWS": ["arn:aws:iam::%s:root" % bob["name"], "admin"]},
         "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/*" % bucket}])
    assert bob["client"].get_object(Bucket=bucket, Key="doc")["Body"].read() == b"secret"
    assert s3.get_object(Bucket=bucket, Key="doc")["Body"].read() == b"secret"
    assert denied(lambda: carol["client"].get_object(Bucket=bucket, Key="doc"))
    assert requests.get("%s/%s/doc" % (s3srv.endpoint, bucket)).status_code == 403
    # A Deny with NotPrincipal binds the bucket owner when it is not listed;
    # the owner can still repair its policy.
    put_policy(s3, bucket, [
        {"Effect": "Allow", "Principal": {"AWS": bob["name"]}, "Action": "s3:ListBucket",
         "Resource": "arn:aws:s3:::%s" % bucket},
        {"Effect": "Deny", "NotPrincipal": {"CanonicalUser": bob["name"]},
         "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % bucket}])
    assert bob["client"].list_objects_v2(Bucket=bucket)["KeyCount"] == 1
    assert denied(lambda: s3.list_objects_v2(Bucket=bucket))
    assert denied(lambda: carol["client"].list_objects_v2(Bucket=bucket))
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"][1]["NotPrincipal"]
    s3.delete_bucket_policy(Bucket=bucket)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 1


# ---- s3:x-amz-grant-* condition keys -------------------------------------------------------

def test_grant_condition_keys_are_accepted(s3, bucket):
    keys = ["s3:x-amz-grant-full-control", "s3:x-amz-grant-read", "s3:x-amz-grant-read-acp",
            "s3:x-amz-grant-write-acp", "s3:x-amz-grant-write"]
    for k in keys:
        put_policy(s3, bucket, [{"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
                                 "Resource": "arn:aws:s3:::%s/*" % bucket,
                                 "Condition": {"StringEquals": {k: "id=nobody"}}}])
        got = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
        assert list(got["Statement"][0]["Condition"]["StringEquals"]) == [k]
    # An unknown key is still refused.
    with pytest.raises(ClientError) as e:
        put_policy(s3, bucket, [{"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
                                 "Resource": "arn:aws:s3:::%s/*" % bucket,
                                 "Condition": {"StringEquals": {"s3:x-amz-grant-all": "x"}}}])
    assert code(e) == "MalformedPolicy"


def test_grant_full_control_required_on_object_writes(s3, bucket, accounts):
    """The S3 user guide's example: another account may upload only when the
    request grants the bucket owner full control (x-amz-grant-full-control)."""
    bob = accounts["bob"]
    bc = bob["client"]
    put_policy(s3, bucket, [
        {"Sid": "upload", "Effect": "Allow", "Principal": {"AWS": bob["name"]},
         "Action": "s3:PutObject", "Resource": "arn:aws:s3:::%s/*" % bucket,
         "Condition": {"StringEquals": {"s3:x-amz-grant-full-control": "id=admin"}}},
        {"Sid": "nothingelse", "Effect": "Deny", "Principal": {"AWS": bob["name"]},
         "Action": "s3:PutObject", "Resource": "arn:aws:s3:::%s/*" % bucket,
         "Condition": {"StringNotEquals": {"s3:x-amz-grant-full-control": "id=admin"}}}])
    # PutObject
    assert denied(lambda: bc.put_object(Bucket=bucket, Key="p1", Body=b"x"))
    assert denied(lambda: bc.put_object(Bucket=bucket, Key="p1", Body=b"x",
                                        GrantFullControl="id=%s" % bob["name"]))
    assert denied(lambda: bc.put_object(Bucket=bucket, Key="p1", Body=b"x", ACL="private"))
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="p1")
    bc.put_object(Bucket=bucket, Key="p1", Body=b"from bob", GrantFullControl="id=admin")
    acl = s3.get_object_acl(Bucket=bucket, Key="p1")
    assert acl["Owner"]["ID"] == bob["name"]
    assert {(g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]} == \
        {("admin", "FULL_CONTROL")}
    assert s3.get_object(Bucket=bucket, Key="p1")["Body"].read() == b"from bob"
    # CreateMultipartUpload
    assert denied(lambda: bc.create_multipart_upload(Bucket=bucket, Key="m1"))
    up = bc.create_multipart_upload(Bucket=bucket, Key="m1", GrantFullControl="id=admin")
    s3.abort_multipart_upload(Bucket=bucket, Key="m1", UploadId=up["UploadId"])
    # CopyObject (the destination's write carries the grant)
    src = {"Bucket": bucket, "Key": "p1"}
    assert denied(lambda: bc.copy_object(Bucket=bucket, Key="c1", CopySource=src))
    bc.copy_object(Bucket=bucket, Key="c1", CopySource=src, GrantFullControl="id=admin")
    assert s3.get_object(Bucket=bucket, Key="c1")["Body"].read() == b"from bob"


def test_grant_keys_on_acl_writes(s3, bucket, accounts):
    bob = accounts["bob"]
    bc = bob["client"]
    put_policy(s3, bucket, [
        {"Effect": "Allow", "Principal": {"AWS": bob["name"]}, "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % bucket},
        # No ACL change may hand out read through a grant header...
        {"Effect": "Deny", "Principal": "*", "Action": ["s3:PutObjectAcl", "s3:PutBucketAcl"],
         "Resource": ["arn:aws:s3:::%s" % bucket, "arn:aws:s3:::%s/*" % bucket],
         "Condition": {"Null": {"s3:x-amz-grant-read": "false"}}},
        # ...nor, when it grants write, grant it to anyone but admin.
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutBucketAcl",
         "Resource": "arn:aws:s3:::%s" % bucket,
         "Condition": {"Null": {"s3:x-amz-grant-write": "false"},
                       "StringNotEquals": {"s3:x-amz-grant-write": "id=admin"}}}])
    bc.put_object(Bucket=bucket, Key="o", Body=b"x")
    # PutObjectAcl by the object's owner: the Deny applies when the header is there.
    assert denied(lambda: bc.put_object_acl(Bucket=bucket, Key="o", GrantRead="uri=" + ALL_USERS))
    bc.put_object_acl(Bucket=bucket, Key="o", GrantReadACP="id=admin")
    acl = s3.get_object_acl(Bucket=bucket, Key="o")
    assert {(g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]} == \
        {("admin", "READ_ACP")}
    # PutBucketAcl by the bucket owner: an explicit Deny binds it too.
    assert denied(lambda: s3.put_bucket_acl(Bucket=bucket, GrantRead="uri=" + ALL_USERS))
    assert denied(lambda: s3.put_bucket_acl(Bucket=bucket, GrantWrite="id=%s" % bob["name"]))
    s3.put_bucket_acl(Bucket=bucket, GrantWrite="id=admin", GrantFullControl="id=admin")
    s3.put_bucket_acl(Bucket=bucket, GrantReadACP="id=%s" % bob["name"],
                      GrantFullControl="id=admin")
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert (bob["name"], "READ_ACP") in {(g["Grantee"].get("ID"), g["Permission"])
                                         for g in acl["Grants"]}
    # The keys belong to ACL-carrying writes only: a read sending the header is not judged by it.
    put_policy(s3, bucket, [{"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                             "Resource": "arn:aws:s3:::%s/*" % bucket,
                             "Condition": {"Null": {"s3:x-amz-grant-read": "false"}}}])
    assert denied(lambda: s3.put_object(Bucket=bucket, Key="g", Body=b"x", GrantRead="id=admin"))
    s3.put_object(Bucket=bucket, Key="g", Body=b"x")


def test_grant_header_on_a_read_is_not_a_condition_value(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=b"read me")
    put_policy(s3, bucket, [{"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                             "Resource": "arn:aws:s3:::%s/*" % bucket,
                             "Condition": {"Null": {"s3:x-amz-grant-read": "false"}}}])
    r = s3srv.signed("GET", "/%s/r" % bucket, headers={"x-amz-grant-read": "id=admin"})
    assert r.status_code == 200 and r.content == b"read me"
    r = s3srv.signed("PUT", "/%s/r2" % bucket, body=b"x", headers={"x-amz-grant-read": "id=admin"})
    assert r.status_code == 403


# ---- POST uploads with ${filename} ---------------------------------------------------------

def post_form(srv, b, key, conditions, filename, data):
    now = datetime.datetime.utcnow()
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    cred = "%s/%s/%s/s3/aws4_request" % (ADMIN_KEY, amz_date[:8], REGION)
    exp = (now + datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    policy = {"expiration": exp, "conditions": [{"bucket": b}] + conditions + [
        {"x-amz-algorithm": "AWS4-HMAC-SHA256"}, {"x-amz-credential": cred},
        {"x-amz-date": amz_date}]}
    b64 = base64.b64encode(json.dumps(policy).encode()).decode()
    k = ("AWS4" + ADMIN_SECRET).encode()
    for part in (amz_date[:8], REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    fields = {"key": key, "policy": b64, "x-amz-algorithm": "AWS4-HMAC-SHA256",
              "x-amz-credential": cred, "x-amz-date": amz_date,
              "x-amz-signature": hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()}
    files = [(n, (None, v)) for n, v in fields.items()]
    files.append(("file", (filename, data, "text/plain")))
    return requests.post("%s/%s" % (srv.endpoint, b), files=files, allow_redirects=False)


def test_post_key_conditions_judge_the_substituted_key(s3srv, s3, bucket):
    # key "${filename}": the object is named after the file, and
    # ["starts-with", "$key", "foo"] holds for the file foo.txt.
    r = post_form(s3srv, bucket, "${filename}", [["starts-with", "$key", "foo"]],
                  "foo.txt", b"named by the file")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="foo.txt")["Body"].read() == b"named by the file"
    # ...and fails for bar.txt: 403, nothing stored.
    r = post_form(s3srv, bucket, "${filename}", [["starts-with", "$key", "foo"]],
                  "bar.txt", b"no")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="bar.txt")
    # "prefix/${filename}" with an exact condition on the resulting key.
    r = post_form(s3srv, bucket, "up/${filename}", [["eq", "$key", "up/pic.png"]],
                  "pic.png", b"png")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="up/pic.png")["Body"].read() == b"png"
    r = post_form(s3srv, bucket, "up/${filename}", [{"key": "up/pic.png"}], "other.png", b"no")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="up/other.png")
    # A condition naming the literal template no longer matches the real key.
    r = post_form(s3srv, bucket, "up/${filename}", [{"key": "up/${filename}"}], "t.png", b"no")
    assert r.status_code == 403
    # A prefix condition still holds a key to its prefix.
    r = post_form(s3srv, bucket, "up/${filename}", [["starts-with", "$key", "up/"]],
                  "ok.png", b"ok")
    assert r.status_code == 204, r.text
    r = post_form(s3srv, bucket, "elsewhere/${filename}", [["starts-with", "$key", "up/"]],
                  "ok.png", b"no")
    assert r.status_code == 403


# ---- HTTP dates in conditional headers ----------------------------------------------------

@pytest.mark.parametrize("date,fails", [
    ("Sun, 06 Nov 1994 08:49:37 GMT", True),        # RFC 1123
    ("Sunday, 06-Nov-94 08:49:37 GMT", True),       # RFC 850 (94 is 1994)
    ("Sun Nov  6 08:49:37 1994", True),             # asctime
    ("Fri, 01 Jan 2100 00:00:00 GMT", False),
    ("Saturday, 01-Jan-60 00:00:00 GMT", False),    # RFC 850 (60 is 2060)
    ("Fri Jan  1 00:00:00 2100", False),
    ("not a date", False),                          # ignored
])
def test_if_unmodified_since_in_every_http_date_form(s3srv, s3, bucket, date, fails):
    s3.put_object(Bucket=bucket, Key="d", Body=b"dated")
    r = s3srv.signed("GET", "/%s/d" % bucket, headers={"If-Unmodified-Since": date})
    if fails:
        assert r.status_code == 412 and "<Code>PreconditionFailed</Code>" in r.text
    else:
        assert r.status_code == 200 and r.content == b"dated"


def status_of(fn):
    """The HTTP status and S3 code fn is refused with (it must be refused)."""
    with pytest.raises(ClientError) as e:
        fn()
    err = e.value.response
    return err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]


def test_missing_key_is_404_only_to_callers_who_may_list(s3srv, s3, bucket, accounts):
    """GetObject / HeadObject: "If you have the s3:ListBucket permission on the
    bucket, Amazon S3 returns an HTTP status code 404 (Not Found) error. If you
    don't have the s3:ListBucket permission, Amazon S3 returns an HTTP status
    code 403 (Access Denied) error."""
    s3.put_object(Bucket=bucket, Key="present", Body=b"x")
    carol = accounts["carol"]["client"]
    get = lambda c: c.get_object(Bucket=bucket, Key="absent")    # noqa: E731
    head = lambda c: c.head_object(Bucket=bucket, Key="absent")  # noqa: E731
    # The owner may list: 404 NoSuchKey (HEAD has no body: status only).
    assert status_of(lambda: get(s3)) == (404, "NoSuchKey")
    assert status_of(lambda: head(s3))[0] == 404
    # Neither list nor read: 403, whether or not the key exists.
    assert status_of(lambda: get(carol)) == (403, "AccessDenied")
    assert status_of(lambda: head(carol))[0] == 403
    assert status_of(lambda: carol.get_object(Bucket=bucket, Key="present"))[0] == 403
    # s3:ListBucket by policy (no object read): the missing key is 404, an
    # existing one still 403.
    put_policy(s3, bucket, [{"Effect": "Allow", "Principal": {"AWS": accounts["carol"]["name"]},
                             "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % bucket}])
    assert status_of(lambda: get(carol)) == (404, "NoSuchKey")
    assert status_of(lambda: head(carol))[0] == 404
    assert status_of(lambda: carol.get_object(Bucket=bucket, Key="present"))[0] == 403
    s3.delete_bucket_policy(Bucket=bucket)
    # Listing by the bucket ACL (READ to everyone): anonymous callers get 404 too.
    anon = s3srv.anon()
    assert status_of(lambda: get(anon))[0] == 403
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert status_of(lambda: get(anon)) == (404, "NoSuchKey")
    assert status_of(lambda: head(anon))[0] == 404
