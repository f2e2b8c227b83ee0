"""S3 bucket operations through the real cairnd with boto3 and raw HTTP:
ListBuckets (with pagination), CreateBucket, DeleteBucket, HeadBucket,
GetBucketLocation, error documents, unsupported subresources."""
import re

import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401

XMLNS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


def code(exc):
    return exc.value.response["Error"]["Code"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_create_list_head_delete(s3srv, s3):
    name = unique()
    r = s3.create_bucket(Bucket=name)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["Location"] == "/" + name
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert name in names
    lb = s3.list_buckets()
    assert lb["Owner"]["ID"] == "admin"
    h = s3.head_bucket(Bucket=name)
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
    assert s3.get_bucket_location(Bucket=name)["LocationConstraint"] is None
    assert "Status" not in s3.get_bucket_versioning(Bucket=name)
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert code(e) == "NoSuchBucket"


def test_create_with_location_constraint_and_acl(s3):
    name = unique()
    s3.create_bucket(Bucket=name, ACL="private",
                     CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.head_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=unique(), ACL="no-such-acl")
    assert code(e) == "InvalidArgument"


def test_bucket_already_owned_and_not_empty(s3srv, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=bucket)
    assert code(e) == "BucketAlreadyOwnedByYou" and status(e) == 409
    key, secret = s3srv.new_account(unique("other"))
    other = s3srv.client(key, secret)
    with pytest.raises(ClientError) as e:
        other.create_bucket(Bucket=bucket)
    assert code(e) == "BucketAlreadyExists"
    s3.put_object(Bucket=bucket, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code(e) == "BucketNotEmpty" and status(e) == 409


@pytest.mark.parametrize("name", ["ab", "UPPER", "a..b", "192.168.1.1", "-abc", "x" * 64])
def test_invalid_bucket_names(s3, name):
    r = s3._endpoint.http_session  # noqa: F841 (keeps the client warm)
    with pytest.raises(Exception) as e:
        s3.create_bucket(Bucket=name)
    if isinstance(e.value, ClientError):
        assert e.value.response["Error"]["Code"] == "InvalidBucketName"


def test_invalid_bucket_name_raw(s3srv):
    r = s3srv.signed("PUT", "/AB")
    assert r.status_code == 400 and "<Code>InvalidBucketName</Code>" in r.text


def test_list_buckets_pagination_and_prefix(s3srv):
    key, secret = s3srv.new_account(unique("pager"))
    c = s3srv.client(key, secret)
    names = sorted("pg-%02d-%s" % (i, unique("p")) for i in range(7))
    for n in names:
        c.create_bucket(Bucket=n)
    c.create_bucket(Bucket=unique("zz"))
    seen, tok = [], None
    while True:
        params = {"max-buckets": "3", "prefix": "pg-"}
        if tok:
            params["continuation-token"] = tok
        r = s3srv.signed("GET", "/", key=key, secret=secret, params=params)
        assert r.status_code == 200, r.text
        assert XMLNS in r.text
        page = re.findall(r"<Name>([^<]+)</Name>", r.text)
        assert len(page) <= 3
        seen += page
        m = re.search(r"<ContinuationToken>([^<]+)</ContinuationToken>", r.text)
        assert "<Prefix>pg-</Prefix>" in r.text
        if not m:
            break
        tok = m.group(1)
    assert seen == names


def test_anonymous_list_buckets_denied(s3srv):
    r = requests.get(s3srv.endpoint + "/")
    assert r.status_code == 403
    assert "<Code>AccessDenied</Code>" in r.text


def test_error_document_shape(s3srv):
    r = s3srv.signed("GET", "/no-such-bucket-here/key")
    assert r.status_code == 404
    assert r.headers["Content-Type"] == "application/xml"
    rid = r.headers["x-amz-request-id"]
    assert re.search(r"<Code>NoSuchBucket</Code>", r.text)
    assert "<RequestId>%s</RequestId>" % rid in r.text
    assert "<Resource>/no-such-bucket-here/key</Resource>" in r.text
    assert r.headers.get("x-amz-id-2")


def test_expected_bucket_owner(s3srv, s3, bucket):
    s3.head_bucket(Bucket=bucket, ExpectedBucketOwner="admin")
    s3.put_object(Bucket=bucket, Key="k", Body=b"v", ExpectedBucketOwner="admin")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"v", ExpectedBucketOwner="someone-else")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=bucket, ExpectedBucketOwner="someone-else")
    assert code(e) == "AccessDenied"


@pytest.mark.parametrize("sub", ["website", "replication", "encryption",
                                 "logging", "notification"])
def test_unsupported_bucket_subresource_is_not_implemented(s3srv, bucket, sub):
    r = s3srv.signed("GET", "/%s" % bucket, params={sub: ""})
    assert r.status_code == 501, r.text
    assert "<Code>NotImplemented</Code>" in r.text
    r = s3srv.signed("PUT", "/%s" % bucket, params={sub: ""}, body=b"<x/>")
    assert r.status_code == 501


def test_sigv2_presigned_refused(s3srv, bucket):
    r = requests.get(s3srv.endpoint + "/%s/k?AWSAccessKeyId=cnadmin&Signature=abc&Expires=99999999999"
                     % bucket)
    assert r.status_code == 400 and "AWS4-HMAC-SHA256" in r.text


def test_sigv4_failures(s3srv, bucket):
    bad = s3srv.client(secret="wrong-secret")
    with pytest.raises(ClientError) as e:
        bad.list_objects_v2(Bucket=bucket)
    assert code(e) == "SignatureDoesNotMatch" and status(e) == 403
    unknown = s3srv.client(key="NOSUCHKEY", secret="x")
    with pytest.raises(ClientError) as e:
        unknown.list_objects_v2(Bucket=bucket)
    assert code(e) == "InvalidAccessKeyId"


def test_any_region_accepted(s3srv, bucket):
    import boto3
    from botocore.config import Config
    from s3fixtures import ADMIN_KEY, ADMIN_SECRET
    c = boto3.client("s3", endpoint_url=s3srv.endpoint, aws_access_key_id=ADMIN_KEY,
                     aws_secret_access_key=ADMIN_SECRET, region_name="eu-central-7",
                     config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    c.put_object(Bucket=bucket, Key="r", Body=b"r")
    assert c.get_object(Bucket=bucket, Key="r")["Body"].read() == b"r"


def test_keepalive_many_requests(s3srv, bucket):
    sess = requests.Session()
    for i in range(20):
        r = sess.get(s3srv.endpoint + "/%s" % bucket)
        assert r.status_code == 403
