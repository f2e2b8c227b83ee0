"""Object and bucket tagging through the real server (issue 25): the
Get/Put/DeleteObjectTagging round trip (current version and ?versionId), the
tag limits (InvalidTag), malformed bodies (MalformedXML), NoSuchKey /
NoSuchVersion, Get/Put/DeleteBucketTagging (50 tags, NoSuchTagSet),
permissions, the bucket-policy condition keys s3:ExistingObjectTag/<k>,
s3:RequestObjectTag/<k> (PutObjectTagging and PutObject) and
s3:RequestObjectTagKeys, and x-amz-tagging on PutObject, CopyObject (with
x-amz-tagging-directive) and CreateMultipartUpload with x-amz-tagging-count
on GET / HEAD."""
import json

import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


def tagset(d):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def got(s3, b, k, **kw):
    r = s3.get_object_tagging(Bucket=b, Key=k, **kw)
    return {t["Key"]: t["Value"] for t in r["TagSet"]}


def test_object_tagging_roundtrip(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert got(s3, bucket, "k") == {}
    tags = {"project": "cairn", "empty": "", "sp ace": "v & <x>", "ünï": "çødé"}
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(tags))
    assert got(s3, bucket, "k") == tags
    # A put replaces the whole set.
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"a": "1"}))
    assert got(s3, bucket, "k") == {"a": "1"}
    s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert got(s3, bucket, "k") == {}
    # The object itself is untouched by any of it.
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    # DELETE answers 204.
    r = s3srv.signed("DELETE", "/%s/k" % bucket, params={"tagging": ""})
    assert r.status_code == 204, r.text


def test_object_tagging_limits(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    ok = {"k%d" % i: "v" for i in range(10)}
    ok["k0"] = "v" * 256
    ok["K" * 128] = ""
    del ok["k9"]
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(ok))
    assert got(s3, bucket, "k") == ok
    # 128 and 256 are characters, not bytes.
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"é" * 128: "ü" * 256}))
    bad = [{"k%d" % i: "v" for i in range(11)},
           {"K" * 129: "v"},
           {"k": "v" * 257},
           {"aws:reserved": "v"}]
    for tags in bad:
        with pytest.raises(ClientError) as e:
            s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(tags))
        assert code(e) == "InvalidTag", tags
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="k",
                              Tagging={"TagSet": [{"Key": "d", "Value": "1"},
                                                  {"Key": "d", "Value": "2"}]})
    assert code(e) == "InvalidTag"
    # An empty key (boto3 refuses to send one).
    r = s3srv.signed("PUT", "/%s/k" % bucket, params={"tagging": ""},
                     body=b"<Tagging><TagSet><Tag><Key></Key><Value>1</Value></Tag></TagSet></Tagging>")
    assert r.status_code == 400 and "<Code>InvalidTag</Code>" in r.text, r.text
    # A control character cannot come back in an XML answer: refused.
    r = s3srv.signed("PUT", "/%s/k" % bucket, params={"tagging": ""},
                     body=b"<Tagging><TagSet><Tag><Key>k</Key><Value>a&#9;b</Value></Tag>"
                          b"</TagSet></Tagging>")
    assert r.status_code == 400 and "<Code>InvalidTag</Code>" in r.text, r.text
    # Nothing of the refused sets was stored.
    assert got(s3, bucket, "k") == {"é" * 128: "ü" * 256}
    for body in (b"<Tagging><TagSet><Tag><Key>a</Key></Tag>",
                 b"<Tagging><Tag><Key>a</Key><Value>b</Value></Tag></Tagging>",
                 b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value><X/></Tag></TagSet></Tagging>",
                 b"<Other><TagSet/></Other>"):
        r = s3srv.signed("PUT", "/%s/k" % bucket, params={"tagging": ""}, body=body)
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, (body, r.text)


def test_object_tagging_missing(s3srv, s3, bucket):
    for call in (lambda: s3.get_object_tagging(Bucket=bucket, Key="nope"),
                 lambda: s3.put_object_tagging(Bucket=bucket, Key="nope", Tagging=tagset({"a": "b"})),
                 lambda: s3.delete_object_tagging(Bucket=bucket, Key="nope")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=unique("nobkt"), Key="k")
    assert code(e) == "NoSuchBucket"


def test_object_tagging_versions(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v0")  # the null version
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"gen": "0"}))
    assert got(s3, bucket, "k", VersionId="null") == {"gen": "0"}
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["VersionId"]
    assert got(s3, bucket, "k") == {}
    r = s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"gen": "1"}))
    assert r["VersionId"] == v1
    # The noncurrent null version kept its tags; each version has its own.
    assert got(s3, bucket, "k", VersionId="null") == {"gen": "0"}
    s3.put_object_tagging(Bucket=bucket, Key="k", VersionId="null", Tagging=tagset({"old": "y"}))
    assert got(s3, bucket, "k", VersionId="null") == {"old": "y"}
    r = s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v1)
    assert r["VersionId"] == v1 and r["TagSet"] == [{"Key": "gen", "Value": "1"}]
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="k", VersionId="bogus-id")
    assert code(e) in ("InvalidArgument", "NoSuchVersion")
    # A delete marker: the key is gone, the marker's own id is not taggable.
    m = s3.delete_object(Bucket=bucket, Key="k")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="k")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=m)
    assert code(e) == "MethodNotAllowed"
    assert got(s3, bucket, "k", VersionId=v1) == {"gen": "1"}


def test_object_tagging_permissions(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"a": "b"}))
    key, secret = s3srv.new_account(unique("tagger"))
    other = s3srv.client(key, secret)
    for call in (lambda: other.get_object_tagging(Bucket=bucket, Key="k"),
                 lambda: other.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"x": "y"})),
                 lambda: other.delete_object_tagging(Bucket=bucket, Key="k"),
                 lambda: other.get_object_tagging(Bucket=bucket, Key="missing")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    assert got(s3, bucket, "k") == {"a": "b"}


def policy(bucket, stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": stmts})


def test_policy_tag_condition_keys(s3srv, s3, bucket):
    name = unique("pt")
    key, secret = s3srv.new_account(name)
    other = s3srv.client(key, secret)
    s3.put_object(Bucket=bucket, Key="pub", Body=b"x")
    s3.put_object(Bucket=bucket, Key="priv", Body=b"x")
    s3.put_object_tagging(Bucket=bucket, Key="pub", Tagging=tagset({"class": "public"}))
    s3.put_object_tagging(Bucket=bucket, Key="priv", Tagging=tagset({"class": "secret"}))
    arn = "arn:aws:s3:::%s/*" % bucket
    s3.put_bucket_policy(Bucket=bucket, Policy=policy(bucket, [
        {"Effect": "Allow", "Principal": {"AWS": [name]}, "Action": "s3:GetObjectTagging",
         "Resource": arn, "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "public"}}},
        {"Effect": "Allow", "Principal": {"AWS": [name]}, "Action": "s3:PutObjectTagging",
         "Resource": arn,
         "Condition": {"StringEquals": {"s3:RequestObjectTag/team": "blue"},
                       "ForAllValues:StringEquals": {"s3:RequestObjectTagKeys": ["team", "class"]}}},
    ]))
    assert got(other, bucket, "pub") == {"class": "public"}
    with pytest.raises(ClientError) as e:
        other.get_object_tagging(Bucket=bucket, Key="priv")
    assert code(e) == "AccessDenied"
    other.put_object_tagging(Bucket=bucket, Key="pub", Tagging=tagset({"team": "blue"}))
    other.put_object_tagging(Bucket=bucket, Key="pub",
                             Tagging=tagset({"team": "blue", "class": "public"}))
    for bad in ({"team": "red"}, {"team": "blue", "extra": "1"}, {"class": "public"}):
        with pytest.raises(ClientError) as e:
            other.put_object_tagging(Bucket=bucket, Key="pub", Tagging=tagset(bad))
        assert code(e) == "AccessDenied", bad
    assert got(s3, bucket, "pub") == {"team": "blue", "class": "public"}
    # A policy naming the new keys parses; an unknown key still does not.
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=policy(bucket, [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": arn,
             "Condition": {"StringEquals": {"s3:RequestObjectTagz": "x"}}}]))
    assert code(e) == "MalformedPolicy"


def test_bucket_tagging(s3srv, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"
    tags = {"k%02d" % i: "v%d" % i for i in range(50)}
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(tags))
    r = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    assert {t["Key"]: t["Value"] for t in r} == tags
    assert [t["Key"] for t in r] == sorted(tags)  # the order sent
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"only": "one"}))
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "only", "Value": "one"}]
    for bad in ({"k%02d" % i: "v" for i in range(51)}, {"aws:x": "1"}, {"K" * 129: "1"}):
        with pytest.raises(ClientError) as e:
            s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(bad))
        assert code(e) == "InvalidTag"
    r = s3srv.signed("PUT", "/%s" % bucket, params={"tagging": ""}, body=b"<Tagging><TagSet>")
    assert r.status_code == 400 and "MalformedXML" in r.text
    r = s3srv.signed("DELETE", "/%s" % bucket, params={"tagging": ""})
    assert r.status_code == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"
    s3.delete_bucket_tagging(Bucket=bucket)  # deleting none is fine
    key, secret = s3srv.new_account(unique("btag"))
    with pytest.raises(ClientError) as e:
        s3srv.client(key, secret).put_bucket_tagging(Bucket=bucket, Tagging=tagset({"a": "b"}))
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=unique("nobkt"))
    assert code(e) == "NoSuchBucket"


def test_tagging_header_on_writes(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="w", Body=b"x", Tagging="a=1&b=two%20words&c=")
    assert got(s3, bucket, "w") == {"a": "1", "b": "two words", "c": ""}
    assert s3.head_object(Bucket=bucket, Key="w").get("ResponseMetadata")["HTTPHeaders"][
        "x-amz-tagging-count"] == "3"
    assert s3.get_object(Bucket=bucket, Key="w")["TagCount"] == 3
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    assert "x-amz-tagging-count" not in s3.head_object(
        Bucket=bucket, Key="plain")["ResponseMetadata"]["HTTPHeaders"]
    for bad in ("aws:k=v", "a=1&a=2", "k=%zz", "&".join("k%d=v" % i for i in range(11))):
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="bad", Body=b"x", Tagging=bad)
        assert code(e) == "InvalidTag", bad
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="bad")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # CopyObject: COPY (the default) carries the source's tags, REPLACE the header's.
    s3.copy_object(Bucket=bucket, Key="c1", CopySource={"Bucket": bucket, "Key": "w"})
    assert got(s3, bucket, "c1") == {"a": "1", "b": "two words", "c": ""}
    s3.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "w"},
                   TaggingDirective="REPLACE", Tagging="new=1")
    assert got(s3, bucket, "c2") == {"new": "1"}
    s3.copy_object(Bucket=bucket, Key="c3", CopySource={"Bucket": bucket, "Key": "w"},
                   TaggingDirective="REPLACE")
    assert got(s3, bucket, "c3") == {}
    r = s3srv.signed("PUT", "/%s/c4" % bucket, headers={
        "x-amz-copy-source": "/%s/w" % bucket, "x-amz-tagging-directive": "MERGE"})
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text, r.text
    # CreateMultipartUpload keeps the set for the completion.
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="m=p")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert got(s3, bucket, "mp") == {"m": "p"}


def test_policy_request_tags_on_put(s3srv, s3, bucket):
    name = unique("pp")
    key, secret = s3srv.new_account(name)
    other = s3srv.client(key, secret)
    s3.put_bucket_policy(Bucket=bucket, Policy=policy(bucket, [
        {"Effect": "Allow", "Principal": {"AWS": [name]}, "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % bucket,
         "Condition": {"StringEquals": {"s3:RequestObjectTag/owner": name}}}]))
    other.put_object(Bucket=bucket, Key="mine", Body=b"x", Tagging="owner=%s" % name)
    # The writer owns the object: it, not the bucket owner, reads its tags.
    assert got(other, bucket, "mine") == {"owner": name}
    for tagging in ("owner=someone-else", None):
        kw = {"Tagging": tagging} if tagging else {}
        with pytest.raises(ClientError) as e:
            other.put_object(Bucket=bucket, Key="theirs", Body=b"x", **kw)
        assert code(e) == "AccessDenied", tagging
